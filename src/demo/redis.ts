import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { scrub } from '../logger.js';

/**
 * Redis for `qwn demo`: the configured one when it answers, else a `redis-server` started for
 * the demo on a free port (no persistence) and stopped after, else one clear line on how to
 * get one.
 */

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

export interface DemoRedis {
  readonly url: string;
  /** The server started for the demo, or null when an existing one answered. */
  readonly spawned: { readonly pid: number; readonly port: number } | null;
  /** Stops the server started for the demo (a no-op for an existing one). */
  close(): Promise<void>;
}

/** Whether a Redis server accepts a connection at `url` (a server asking for auth counts). */
export async function redisAnswers(url: string, timeoutMs = 1000): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // Connection failures also arrive as 'error' events; the rejected connect() is the answer.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill('SIGTERM');
  const stopped = await Promise.race([done.then(() => true), sleep(3000).then(() => false)]);
  if (!stopped) {
    child.kill('SIGKILL');
    await done;
  }
}

export const NO_REDIS_HINT =
  'start one with `docker compose up -d redis`, or install it (Debian/Ubuntu: `sudo apt-get install redis-server`) and run the demo again';

/**
 * Starts `redis-server` on a free loopback port. Throws RedisUnavailableError when there is no
 * such program or it does not come up.
 */
export async function spawnRedis(command = 'redis-server'): Promise<DemoRedis> {
  const port = await freePort();
  const child = spawn(
    command,
    // A throwaway server: no RDB snapshots, no AOF, nothing left on disk.
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    // Its own process group: a Ctrl-C in the terminal reaches only the demo, which then stops
    // the server after the workers that use it.
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-2000);
  });
  const started = await new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (err) => resolve(err));
  });
  if (started) {
    const missing = (started as NodeJS.ErrnoException).code === 'ENOENT';
    throw new RedisUnavailableError(
      missing ? `no ${command} program on PATH` : `${command} did not start: ${started.message}`,
    );
  }
  // Whatever happens to the demo from here on, the server must not outlive this process.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 5000;
  while (!(await redisAnswers(url, 500))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop(child);
      process.removeListener('exit', killOnExit);
      const reason = stderr.trim().split('\n').at(-1) ?? 'no output';
      throw new RedisUnavailableError(`${command} did not come up on port ${port} (${reason})`);
    }
    await sleep(50);
  }
  return {
    url,
    spawned: { pid: child.pid!, port },
    async close() {
      await stop(child);
      process.removeListener('exit', killOnExit);
    },
  };
}

/** The configured Redis when it answers, else one started for the demo. */
export async function provideRedis(
  url: string,
  options: { command?: string } = {},
): Promise<DemoRedis> {
  if (await redisAnswers(url)) {
    return { url, spawned: null, close: () => Promise.resolve() };
  }
  try {
    return await spawnRedis(options.command);
  } catch (err) {
    if (err instanceof RedisUnavailableError) {
      throw new RedisUnavailableError(
        `no Redis answers at ${scrub(url)} and ${err.message}; ${NO_REDIS_HINT}`,
      );
    }
    throw err;
  }
}
