import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const run = promisify(execFile);

describe('qwn migrate', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database.drop();
  });

  it('is safe when several processes run it at once', async () => {
    const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
    const runs = await Promise.all(
      [1, 2, 3].map(() => run('node', ['bin/qwn.js', 'migrate'], { env })),
    );
    for (const r of runs) expect(r.stdout).toContain('migrations applied');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const applied = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations',
      );
      const journal = JSON.parse(readFileSync('migrations/meta/_journal.json', 'utf8')) as {
        entries: unknown[];
      };
      expect(applied.rows[0]?.n).toBe(journal.entries.length);
      const tables = await client.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining([
          'deliveries',
          'events',
          'messages',
          'places',
          'poll_cycles',
          'subscribers',
          'subscriptions',
          'warnings',
        ]),
      );
    } finally {
      await client.end();
    }
  });

  it('says so in one line when DATABASE_URL is missing', async () => {
    const env = { ...process.env, DATABASE_URL: '' };
    const failure = await run('node', ['bin/qwn.js', 'migrate'], { env }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure).toMatchObject({ code: 2 });
    expect((failure as { stderr: string }).stderr.trim()).toBe(
      'qwn migrate: DATABASE_URL is not set',
    );
  });
});
