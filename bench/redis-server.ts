import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { exited, freeLoopbackPort, leaveToJanitor, onPath } from './procs.js';

/**
 * A Redis server of the bench's own (issue 38): its CPU and command counters are the bench's
 * alone, where a shared server's `INFO` counts every other tenant's traffic too. Nothing is
 * kept on disk, as on the machine's own server.
 */

export interface PrivateRedis {
  url: string;
  pid: number;
  close(): Promise<void>;
}

const READY_TIMEOUT_MS = 10_000;

/** Starts `redis-server` on a free loopback port; null when there is no such binary on PATH. */
export async function startPrivateRedis(
  env: NodeJS.ProcessEnv = process.env,
): Promise<PrivateRedis | null> {
  const binary = onPath('redis-server', env);
  if (binary === null) return null;
  const port = await freeLoopbackPort();
  const child: ChildProcess = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited(child);
  };
  // An interrupted bench leaves by process.exit: the server goes with it; a killed one leaves it
  // to the janitor.
  if (child.pid !== undefined) leaveToJanitor({ type: 'process', pid: child.pid });
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    const by = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${binary} exited (${child.exitCode})`);
      try {
        await probe.connect();
        await probe.ping();
        break;
      } catch {
        probe.disconnect();
        if (Date.now() > by)
          throw new Error(`${binary} did not answer within ${READY_TIMEOUT_MS} ms`);
        await sleep(50);
      }
    }
  } catch (err) {
    process.off('exit', onExit);
    await stop();
    throw err;
  } finally {
    probe.disconnect();
  }
  return {
    url,
    pid: child.pid!,
    async close() {
      process.off('exit', onExit);
      await stop();
    },
  };
}
