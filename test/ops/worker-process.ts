import { spawn, type ChildProcess } from 'node:child_process';

/** A `qwn worker` child process, its structured log lines, and its ops port. */
export interface WorkerProcess {
  readonly port: number;
  readonly lines: readonly Record<string, unknown>[];
  get(path: string): Promise<{ status: number; text: string; contentType: string | null }>;
  waitForLine(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; ms: number }>;
  kill(): void;
}

export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last: ${String(last)}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const child: ChildProcess = spawn('node', ['bin/qwn.js', 'worker'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      raw.push(text);
      try {
        lines.push(JSON.parse(text) as Record<string, unknown>);
      } catch {
        lines.push({ unparsed: text });
      }
      for (const wake of waiters) wake();
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => raw.push(`stderr: ${chunk}`));
  let exited: { code: number | null } | null = null;
  const exit = new Promise<{ code: number | null }>((resolve) =>
    child.once('exit', (code) => {
      exited = { code };
      for (const wake of waiters) wake();
      resolve({ code });
    }),
  );

  const waitForLine = (predicate: (line: Record<string, unknown>) => boolean, timeoutMs = 30_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const found = lines.find(predicate);
        if (found) return finish(() => resolve(found));
        if (exited) {
          return finish(() =>
            reject(new Error(`worker exited (${exited!.code}) first:\n${raw.join('\n')}`)),
          );
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no such log line in:\n${raw.join('\n')}`))),
        timeoutMs,
      );
      const finish = (then: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        then();
      };
      waiters.add(check);
      check();
    });

  const listening = await waitForLine((l) => l.msg === 'http server listening').catch(
    (err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    },
  );
  const port = listening.port as number;

  return {
    port,
    lines,
    async get(path) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return {
        status: res.status,
        text: await res.text(),
        contentType: res.headers.get('content-type'),
      };
    },
    waitForLine,
    async stop(signal = 'SIGTERM') {
      const started = Date.now();
      if (!exited) child.kill(signal);
      const { code } = await exit;
      return { code, ms: Date.now() - started };
    },
    kill() {
      if (!exited) child.kill('SIGKILL');
    },
  };
}
