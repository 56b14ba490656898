import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JanitorMessage } from './janitor.js';

/** Child processes of the bench and what the kernel says about them (Linux /proc). */

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Starts a TypeScript entry under tsx in its own Node process, with an IPC channel. The janitor
 * kills it should the runner be killed first.
 */
export function forkTs(
  entry: string,
  args: string[],
  options: { env: Record<string, string>; nodeArgs?: string[]; logFd?: number },
): ChildProcess {
  const child = startTs(entry, args, options);
  if (child.pid !== undefined) leaveToJanitor({ type: 'process', pid: child.pid });
  return child;
}

function startTs(
  entry: string,
  args: string[],
  options: { env: Record<string, string>; nodeArgs?: string[]; logFd?: number },
): ChildProcess {
  const output = options.logFd ?? 'ignore';
  return fork(fileURLToPath(new URL(entry, import.meta.url)), args, {
    cwd: REPO_ROOT,
    // Only what the bench hands over: the children read no other environment.
    env: options.env,
    execArgv: ['--import', 'tsx', ...(options.nodeArgs ?? [])],
    stdio: ['ignore', output, output, 'ipc'],
  });
}

let janitor: ChildProcess | undefined;

function janitorProcess(): ChildProcess {
  if (!janitor) {
    janitor = startTs('./janitor.ts', [], { env: { PATH: process.env.PATH ?? '' } });
    // Neither the janitor nor its channel keeps the runner alive.
    janitor.unref();
    janitor.channel?.unref();
    janitor.on('error', () => undefined);
  }
  return janitor;
}

/**
 * Starts this runner's janitor (bench/janitor.ts) and waits until it listens, so that what is
 * left to it is in its hands however early the runner dies.
 */
export async function startJanitor(): Promise<void> {
  await nextMessage(janitorProcess(), 'ready', 30_000);
}

/**
 * Tells this runner's janitor of a process or a scratch database to remove should the runner
 * die without `releaseJanitor`.
 */
export function leaveToJanitor(what: Exclude<JanitorMessage, { type: 'done' }>): void {
  const keeper = janitorProcess();
  if (keeper.connected) keeper.send(what);
}

/** The runner cleaned up after itself: its janitor leaves without touching anything. */
export function releaseJanitor(): void {
  if (!janitor?.connected) return;
  janitor.send({ type: 'done' } satisfies JanitorMessage, () => janitor?.disconnect());
}

export function nextMessage<T = unknown>(
  child: ChildProcess,
  type: string,
  timeoutMs = 120_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`child ${child.pid} sent no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (m: { type?: string }) => {
      if (m.type !== type) return;
      cleanup();
      resolve(m as T);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`child ${child.pid} exited (${code}) before sending '${type}'`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

let clockTicks: number | undefined;
/** Kernel clock ticks per second, the unit of CPU times in /proc/<pid>/stat. */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * The fields of `/proc/<pid>/stat` after the command's name, from field 3 (state) on, so that
 * field n is at index n - 3; null when there is no such process.
 */
export function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** User + system CPU seconds of a process so far (0 once it is gone). */
export function cpuSeconds(pid: number): number {
  const fields = statFields(pid);
  if (!fields) return 0;
  // utime and stime, fields 14 and 15.
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
}

/** Resident memory of a process now and at its peak (VmRSS, VmHWM), in MB. */
export function memoryMb(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Samples the resident memory of some processes until stopped; returns the peak of each. */
export function sampleMemory(pids: readonly number[], everyMs = 100): () => number[] {
  const peaks = pids.map((pid) => memoryMb(pid).rss);
  const timer = setInterval(() => {
    pids.forEach((pid, i) => {
      peaks[i] = Math.max(peaks[i]!, memoryMb(pid).rss);
    });
  }, everyMs);
  return () => {
    clearInterval(timer);
    pids.forEach((pid, i) => {
      peaks[i] = Math.max(peaks[i]!, memoryMb(pid).rss);
    });
    return peaks;
  };
}

/** A loopback port nothing listens on now, for a server the bench starts. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable file called `name` in a directory of `env.PATH`, or null. */
export function onPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter).filter((d) => d !== '')) {
    const path = join(dir, name);
    if (isExecutableFile(path)) return path;
  }
  return null;
}
