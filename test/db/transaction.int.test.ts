import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryPrepared, queryRows, transaction } from '../../src/db/client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * qwn's transactions hold their own pool client, so the statements in them run as named
 * prepared statements through pg's own query config, planned once per connection.
 */
describe('a transaction on node-postgres', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('runs its statements as named prepared statements on its own connection', async () => {
    const statement = sql`SELECT ${'2026-07-01T08:00:00+08:00'}::timestamptz AS at, 7::int AS n`;
    const seen = await transaction(database.db, async (tx) => {
      const first = await queryPrepared<{ at: unknown; n: number }>(tx, statement);
      const second = await queryPrepared<{ at: unknown; n: number }>(tx, statement);
      const prepared = await queryRows<{ name: string; statement: string }>(
        tx,
        sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'qwn_%'`,
      );
      return { first, second, prepared };
    });
    expect(seen.prepared).toHaveLength(1);
    expect(seen.prepared[0]!.statement).toContain('::timestamptz AS at');
    expect(seen.second).toEqual(seen.first);
    // The same row as a plain query gives: timestamps in Postgres's text, numbers parsed.
    const plain = await queryRows<{ at: unknown; n: number }>(database.db, statement);
    expect(seen.first).toEqual(plain);
    expect(plain[0]).toEqual({ at: '2026-07-01 00:00:00+00', n: 7 });
  });

  it('commits what its work wrote', async () => {
    await transaction(database.db, async (tx) => {
      await tx.execute(sql`INSERT INTO places (id, name) VALUES ('kept', 'Kept')`);
    });
    const rows = await queryRows<{ id: string }>(
      database.db,
      sql`SELECT id FROM places WHERE id = 'kept'`,
    );
    expect(rows).toEqual([{ id: 'kept' }]);
  });

  it('rolls back when its work throws, and its connection serves the next one', async () => {
    const failed = transaction(database.db, async (tx) => {
      await queryPrepared(tx, sql`INSERT INTO places (id, name) VALUES ('lost', 'Lost')`);
      throw new Error('work failed');
    });
    await expect(failed).rejects.toThrow('work failed');
    // The pool has five connections: ten transactions after the failed one reuse its client.
    for (let i = 0; i < 10; i += 1) {
      const lost = await transaction(database.db, (tx) =>
        queryPrepared<{ id: string }>(tx, sql`SELECT id FROM places WHERE id = 'lost'`),
      );
      expect(lost).toEqual([]);
    }
  });

  it('outside a transaction, names the statement on whichever pooled connection runs it', async () => {
    const rows = await queryPrepared<{ n: number }>(database.db, sql`SELECT 41 + 1 AS n`);
    expect(rows).toEqual([{ n: 42 }]);
  });

  it('is the only way src/ opens one: a drizzle transaction would run every statement unnamed', () => {
    const src = join(import.meta.dirname, '../../src');
    const opened = readdirSync(src, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => join(e.parentPath, e.name))
      .filter((file) => !file.endsWith(join('db', 'client.ts')))
      .filter((file) => /\.transaction\(/.test(readFileSync(file, 'utf8')));
    expect(opened).toEqual([]);
  });
});
