import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * `qwn sandbox` as a newcomer uses it: start it, paste its lines, seed their own file, make a
 * warning, run a cycle, and read what arrived in the inbox (docs/operations.md).
 */

const exec = promisify(execFile);
const BIN = resolve(import.meta.dirname, '../../bin/qwn.js');

let dir: string;
let sandbox: ChildProcess;
let database: TestDatabase;
const env: Record<string, string> = {};
let printed = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'qwn-sandbox-'));
  database = await createTestDatabase({ migrate: false });
  sandbox = spawn(process.execPath, [BIN, 'sandbox', '--dir', join(dir, 'box')], { cwd: dir });
  sandbox.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`sandbox printed: ${printed}`)), 20_000);
    const check = () => {
      if (!printed.includes('# What arrived:')) return;
      clearTimeout(timer);
      done();
    };
    sandbox.stdout!.on('data', check);
  });
  for (const [, name, value] of printed.matchAll(/^([A-Z_]+)=(.*)$/gm)) env[name!] = value!;
}, 30_000);

afterAll(async () => {
  if (sandbox?.exitCode === null) sandbox.kill('SIGKILL');
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('qwn sandbox', () => {
  it('prints the lines to paste, and everything they name answers', () => {
    expect(Object.keys(env).sort()).toEqual([
      'MAIL_FROM',
      'QWEATHER_API_URL',
      'SMTP_URL',
      'WEBHOOK_ALLOW_PRIVATE',
    ]);
  });

  it("takes a newcomer's own seed through a cycle to its inbox, signatures verified", async () => {
    const webhook = /"webhook": "([^"]+)", "secret": "([^"]+)"/.exec(printed)!;
    const inbox = /# What arrived: +(\S+)/.exec(printed)![1]!;
    const seed = join(dir, 'seed.json');
    writeFileSync(
      seed,
      JSON.stringify({
        subscribers: [
          { name: 'My desk', email: 'me@example.com', locations: ['101210101'] },
          { name: 'My system', webhook: webhook[1], secret: webhook[2], locations: ['101210101'] },
        ],
      }),
    );
    const run = (args: string[]) =>
      exec(process.execPath, [BIN, ...args], {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          TZ: 'UTC',
          ...env,
          DATABASE_URL: database.url,
          REDIS_URL: 'redis://127.0.0.1:6379',
          QUEUE_PREFIX: `qwn-sandbox-${randomBytes(4).toString('hex')}`,
          LOG_LEVEL: 'error',
        },
      });
    await run(['migrate']);
    await run(['seed', seed]);
    // The warning of the printed example, through the simulator's control API.
    const played = /curl -X PUT (\S+) -d '([^']+)'/.exec(printed)!;
    const put = await fetch(played[1]!, { method: 'PUT', body: played[2] });
    expect(put.status).toBe(200);
    const poll = await run(['poll', '--once']);
    expect(JSON.parse(poll.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      events: { new: 1 },
      deliveries: { sent: 2 },
    });

    const page = await (await fetch(inbox)).text();
    expect(page).toMatch(/<h2>Emails \(1\)<\/h2>.*me@example\.com/s);
    expect(page).toMatch(/<h2>Webhooks \(1\)<\/h2>.*warning\.new.*signature verified/s);
    const mail = await (await fetch(new URL('/mail/0', inbox))).text();
    expect(mail).toContain('杭州');
    await expect
      .poll(() => readFileSync(join(dir, 'box', 'mail', 'index.html'), 'utf8'))
      .toContain('me@example.com');
  });

  it('stops on Ctrl-C, with connections still open to it', async () => {
    const exited = new Promise<number | null>((done) => sandbox.once('exit', (code) => done(code)));
    sandbox.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
