import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/net.js';
import { qwnInProcess } from '../support/cli.js';

/**
 * What a new user sees when a setting is wrong: the service, the variable and the address,
 * the command to check it with, and never the password of the URL.
 */

const PASSWORD = 'hunter2-9f3a';

let cwd: string;
beforeAll(() => {
  // No .env here: only the environment given counts.
  cwd = mkdtempSync(join(tmpdir(), 'qwn-errors-'));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

function qwn(args: string[], env: Record<string, string>) {
  return qwnInProcess(args, {
    cwd,
    unset: /^(QWEATHER_|LOG_LEVEL|DATABASE_URL|REDIS_URL)/,
    env: { LOG_LEVEL: 'silent', ...env },
  });
}

describe('qwn with Postgres or Redis out of reach', () => {
  it('names Postgres, DATABASE_URL and the address, without the password', async () => {
    const port = await closedPort();
    const run = await qwn(['migrate'], {
      DATABASE_URL: `postgres://qwn:${PASSWORD}@127.0.0.1:${port}/qwn`,
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      `qwn migrate: cannot reach Postgres at 127.0.0.1:${port} (DATABASE_URL): connection ` +
        `refused (nothing listens there). Check that Postgres runs there and that DATABASE_URL ` +
        `is right: pg_isready -h 127.0.0.1 -p ${port}`,
    );
    expect(run.stderr + run.stdout).not.toContain(PASSWORD);
  });

  it('says a database that does not exist is one', async () => {
    const run = await qwn(['deliveries'], {
      DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:5432/qwn_no_such_database`,
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'qwn deliveries: Postgres at 127.0.0.1:5432 (DATABASE_URL) refused the connection: the ' +
        'database named in DATABASE_URL does not exist. Check the user, password and database ' +
        'name in DATABASE_URL.',
    );
    expect(run.stderr).not.toContain(PASSWORD);
  });

  it('names Redis and REDIS_URL instead of hanging on retries', async () => {
    const port = await closedPort();
    const run = await qwn(['poll', '--once'], {
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
      REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}`,
      QWEATHER_API_URL: 'http://127.0.0.1:9',
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      `qwn poll: cannot reach Redis at 127.0.0.1:${port} (REDIS_URL): connection refused ` +
        `(nothing listens there). Check that Redis runs there and that REDIS_URL is right: ` +
        `redis-cli -h 127.0.0.1 -p ${port} ping`,
    ]);
    expect(run.stderr + run.stdout).not.toContain(PASSWORD);
  });
});
