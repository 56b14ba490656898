import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

/** The `qwn` command of this checkout, as an operator runs it. */
export const QWN_BIN = resolve(import.meta.dirname, '../../bin/qwn.js');

export interface QwnRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `qwn <args>` in a process of its own, in `cwd` (a folder with no `.env`), with this process's
 * environment minus the settings that `unset` matches, plus `env`. A failed exit is not thrown.
 */
export function runQwn(
  args: readonly string[],
  o: { cwd: string; env?: Record<string, string | undefined>; unset: RegExp },
): Promise<QwnRun> {
  const base: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!o.unset.test(name)) base[name] = value;
  }
  const child = spawn(process.execPath, [QWN_BIN, ...args], {
    cwd: o.cwd,
    env: { ...base, ...o.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}
