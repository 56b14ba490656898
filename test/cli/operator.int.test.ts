import { sql } from 'drizzle-orm';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_MIGRATED } from '../../src/db/problems.js';
import { probeHealth } from '../../src/ops/health.js';
import { UpstreamMonitor } from '../../src/ops/upstream.js';
import { queryRows } from '../../src/db/client.js';
import { queuePrefixes } from '../support/queue-prefixes.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { qwnInProcess, runQwn, type QwnRun } from '../support/cli.js';

/**
 * An operator's first hour (docs/operations.md), each item run as the operator runs it: the command
 * in a process of its own, its exit code and the one line it prints.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SEED = join(ROOT, 'examples/seed.json');
const NOT_MIGRATED_LINE = (command: string) => `qwn ${command}: ${NOT_MIGRATED}`;

const prefixes = queuePrefixes('qwn-op');
let cwd: string;
beforeAll(() => {
  // No .env here: only the environment given counts.
  cwd = mkdtempSync(join(tmpdir(), 'qwn-operator-'));
});
afterAll(async () => {
  rmSync(cwd, { recursive: true, force: true });
  await prefixes.drop();
});

/** `qwn <args>`: the worker in a process of its own (it owns the process), the rest in this one. */
function qwn(args: string[], env: Record<string, string> = {}): Promise<QwnRun> {
  return (args[0] === 'worker' ? runQwn : qwnInProcess)(args, {
    cwd,
    unset: /^(QWEATHER_|LOG_LEVEL|DATABASE_URL|REDIS_URL|SMTP_URL|HTTP_)/,
    env: { LOG_LEVEL: 'silent', ...env },
  });
}

const COMMANDS = [
  'migrate',
  'seed',
  'poll',
  'worker',
  'lookup',
  'top',
  'poi',
  'warnings',
  'simulate',
  'demo',
  'sandbox',
  'plan',
  'subscribers',
  'preview',
  'test-send',
  'deliveries',
  'redeliver',
];

describe('qwn --version and --help', () => {
  it('prints the version of package.json and the Node it runs on', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const run = await qwn(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(`qwn ${version} (Node ${process.versions.node})`);
  });

  it('lists every command with --help', async () => {
    const run = await qwn(['--help']);
    expect(run.code).toBe(0);
    for (const command of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it.each(COMMANDS)('qwn %s --help: its usage on stdout, exit 0, with no setting', async (c) => {
    const run = await qwn([c, '--help']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^usage: qwn ${c}\\b`));
  });
});

describe('a database that is not migrated', () => {
  let empty: TestDatabase;
  let behind: TestDatabase;
  beforeAll(async () => {
    empty = await createTestDatabase({ migrate: false });
    // An older release's database: the newest migration is not recorded as applied.
    behind = await createTestDatabase();
    await behind.db.execute(
      `DELETE FROM drizzle.__drizzle_migrations
       WHERE id = (SELECT max(id) FROM drizzle.__drizzle_migrations)`,
    );
  });
  afterAll(async () => {
    await empty?.drop();
    await behind?.drop();
  });

  const commands: [string, string[]][] = [
    ['seed', ['seed', SEED]],
    ['seed', ['seed', SEED, '--dry-run']],
    ['poll', ['poll', '--once']],
    ['worker', ['worker']],
    ['deliveries', ['deliveries']],
    ['redeliver', ['redeliver', '--since', '2026-11-01T00:00:00Z']],
    ['plan', ['plan']],
  ];

  it.each(commands)('qwn %s says so in one line, without SQL or data', async (name, args) => {
    const run = await qwn(args, {
      DATABASE_URL: empty.url,
      // Never reached: the command stops at the database.
      QWEATHER_API_URL: 'http://127.0.0.1:9',
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: prefixes.next(),
    });
    expect(run.stderr.trim()).toBe(NOT_MIGRATED_LINE(name));
    expect(run.code).toBe(1);
    const said = run.stdout + run.stderr;
    expect(said).not.toMatch(/select|insert|params|@example|hangzhou/i);
  });

  it('the worker refuses a schema older than its code', async () => {
    const run = await qwn(['worker'], {
      DATABASE_URL: behind.url,
      QWEATHER_API_URL: 'http://127.0.0.1:9',
      QUEUE_PREFIX: prefixes.next(),
      HTTP_PORT: '0',
    });
    expect(run.stderr.trim()).toBe(NOT_MIGRATED_LINE('worker'));
    expect(run.code).toBe(1);
  });

  it('/healthz says it, and shows no SQL', async () => {
    const report = await probeHealth({
      db: empty.db,
      redis: { ping: () => Promise.resolve('PONG') },
      upstream: new UpstreamMonitor(),
      pollIntervalSeconds: 300,
      startedAt: new Date(),
    });
    expect(report.checks.postgres).toEqual({ status: 'unhealthy', error: NOT_MIGRATED });
    expect(report.checks.lastCycle.reason).toBe(`unknown: ${NOT_MIGRATED}`);
    expect(JSON.stringify(report)).not.toMatch(/select|poll_cycles/i);
  });
});

describe('qwn worker refuses to start broken', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  const env = () => ({
    DATABASE_URL: database.url,
    QWEATHER_API_URL: 'http://127.0.0.1:9',
    REDIS_URL: 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefixes.next(),
  });

  it.each([['worker'], ['poll', '--once']])(
    'qwn %s: not without SMTP_URL while email subscribers exist, naming the variable',
    async (...args) => {
      await database.db.execute(
        // Unsubscribed and disabled addresses are sent nothing: only the active one counts.
        `TRUNCATE subscribers CASCADE;
         INSERT INTO subscribers (email) VALUES ('duty@example.com');
         INSERT INTO subscribers (email, unsubscribed_at) VALUES ('gone@example.com', now());
         INSERT INTO subscribers (email, active) VALUES ('off@example.com', false)`,
      );
      const run = await qwn(args, { ...env(), HTTP_PORT: '0' });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `qwn ${args[0]}: SMTP_URL is not set and 1 subscriber(s) receive email: set SMTP_URL ` +
          '(and MAIL_FROM), or remove their email addresses from the seed',
      );
      expect(run.stderr).not.toContain('duty@example.com');
      // Nothing polled, nothing owed, nothing dead.
      const [counts] = await queryRows<{ cycles: number; messages: number }>(
        database.db,
        sql`SELECT (SELECT count(*)::int FROM poll_cycles) AS cycles,
                   (SELECT count(*)::int FROM messages) AS messages`,
      );
      expect(counts).toEqual({ cycles: 0, messages: 0 });
    },
  );

  it('on a port in use: one line naming HTTP_PORT and HTTP_PORT=0', async () => {
    const holder: Server = createServer();
    await new Promise<void>((done) => holder.listen(0, '127.0.0.1', done));
    const port = (holder.address() as { port: number }).port;
    try {
      const run = await qwn(['worker'], {
        ...env(),
        SMTP_URL: 'smtp://127.0.0.1:9',
        HTTP_PORT: String(port),
      });
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe(
        `qwn worker: HTTP_PORT ${port} is already in use on 127.0.0.1 (another qwn worker?): ` +
          'set HTTP_PORT to a free port, or HTTP_PORT=0 for any free one',
      );
    } finally {
      await new Promise((done) => holder.close(done));
    }
  });
});
