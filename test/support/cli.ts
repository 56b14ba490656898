import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { run } from '../../src/cli.js';
import { terminalZone } from '../../src/cli/local-time.js';
import { readEnvironment } from '../../src/config.js';

/** The `qwn` command of this checkout, as an operator runs it. */
export const QWN_BIN = resolve(import.meta.dirname, '../../bin/qwn.js');

export interface QwnRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** This process's environment less the settings that `unset` matches, plus `env`. */
function environment(
  o: { env?: Record<string, string | undefined>; unset?: RegExp } = {},
): Record<string, string | undefined> {
  const base: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!o.unset?.test(name)) base[name] = value;
  }
  return { ...base, ...o.env };
}

/**
 * `qwn <args>` in this process, as `qwn` runs it (src/cli.ts): what it prints and its exit code,
 * with the environment of `runQwn` (and a `.env` in `cwd`, when given). Its logs join stderr.
 * Long-running commands (worker, demo, sandbox, simulate) and the process itself (exit codes
 * on signals, the compiled dist/) are tested through `runQwn`.
 */
export async function qwnInProcess(
  args: readonly string[],
  o: {
    cwd?: string;
    env?: Record<string, string | undefined>;
    unset?: RegExp;
    now?: () => Date;
  } = {},
): Promise<QwnRun> {
  const env = o.cwd === undefined ? environment(o) : readEnvironment(o.cwd, environment(o));
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    env,
    out: (text) => (stdout += `${text}\n`),
    err: (text) => (stderr += `${text}\n`),
    logs: { write: (line: string) => (stderr += line) },
    timeZone: terminalZone(env.TZ),
    ...(o.now ? { now: o.now } : {}),
  });
  return { code, stdout, stderr };
}

/**
 * `qwn <args>` in a process of its own, in `cwd` (a folder with no `.env`), with this process's
 * environment minus the settings that `unset` matches, plus `env`. A failed exit is not thrown.
 */
export function runQwn(
  args: readonly string[],
  o: { cwd: string; env?: Record<string, string | undefined>; unset: RegExp },
): Promise<QwnRun> {
  const child = spawn(process.execPath, [QWN_BIN, ...args], { cwd: o.cwd, env: environment(o) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}
