import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { QWN_BIN } from './cli.js';
import { queuePrefixes } from './queue-prefixes.js';
import { createTestDatabase, type TestDatabase } from './db.js';

const exec = promisify(execFile);

/**
 * `qwn sandbox` running as a newcomer starts it, in a folder of its own, with an empty database
 * for the commands its printed lines are pasted into (docs/operations.md).
 */
export interface RunningSandbox {
  readonly dir: string;
  readonly process: ChildProcess;
  /** Everything it printed. */
  readonly printed: () => string;
  /** The `NAME=value` lines to paste. */
  readonly env: Readonly<Record<string, string>>;
  /** The inbox page's URL. */
  readonly inbox: string;
  /** The webhook receiver's example subscriber: its URL and secret. */
  readonly webhook: { url: string; secret: string };
  readonly database: TestDatabase;
  /** `qwn <args>` with the pasted lines, the database and a queue prefix of its own. */
  qwn(args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** Migrates, seeds `subscribers`, plays the printed example warning and runs one cycle. */
  playExample(subscribers: unknown[]): Promise<string>;
  /** Kills the sandbox if it still runs, drops the database, deletes the folder. */
  close(): Promise<void>;
}

export async function startSandbox(): Promise<RunningSandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'qwn-sandbox-'));
  const database = await createTestDatabase({ migrate: false });
  const child = spawn(process.execPath, [QWN_BIN, 'sandbox', '--dir', join(dir, 'box')], {
    cwd: dir,
  });
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`sandbox printed: ${printed}`)), 20_000);
    const check = () => {
      if (!printed.includes('# What arrived:')) return;
      clearTimeout(timer);
      done();
    };
    child.stdout.on('data', check);
  });
  const env: Record<string, string> = {};
  for (const [, name, value] of printed.matchAll(/^([A-Z_]+)=(.*)$/gm)) env[name!] = value!;
  const webhook = /"webhook": "([^"]+)", "secret": "([^"]+)"/.exec(printed)!;
  const prefixes = queuePrefixes('qwn-sandbox');
  const queuePrefix = prefixes.next();
  const qwn = (args: string[]) =>
    exec(process.execPath, [QWN_BIN, ...args], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        TZ: 'UTC',
        ...env,
        DATABASE_URL: database.url,
        REDIS_URL: 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: queuePrefix,
        LOG_LEVEL: 'error',
      },
    });
  return {
    dir,
    process: child,
    printed: () => printed,
    env,
    inbox: /# What arrived: +(\S+)/.exec(printed)![1]!,
    webhook: { url: webhook[1]!, secret: webhook[2]! },
    database,
    qwn,
    async playExample(subscribers) {
      const seed = join(dir, 'seed.json');
      writeFileSync(seed, JSON.stringify({ subscribers }));
      await qwn(['migrate']);
      await qwn(['seed', seed]);
      // The warning of the printed example, through the simulator's control API.
      const played = /curl -X PUT (\S+) -d '([^']+)'/.exec(printed)!;
      const put = await fetch(played[1]!, { method: 'PUT', body: played[2] });
      if (put.status !== 200) throw new Error(`the example warning: HTTP ${put.status}`);
      return (await qwn(['poll', '--once'])).stdout;
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await database.drop();
      await prefixes.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
