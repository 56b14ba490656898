import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * Every notification's row is written three times: inserted by the check, claimed by its
 * attempt, marked with the outcome. The claim touches no indexed column, so with room on the
 * page (migration 0003's fillfactor) it is a HOT update: the new version stays on its page and
 * none of the five indexes gets an entry. A storm's Postgres time depends on it (BENCHMARKS.md).
 */
describe('deliveries storage', () => {
  let database: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it('claims rows in place, without new index entries', async () => {
    await client.query(`INSERT INTO places (id, name) VALUES ('101210101', '杭州')`);
    const event = await client.query<{ id: string }>(
      `INSERT INTO events (place_id, warning_id, type, record)
       VALUES ('101210101', '10121010120260701080000001', 'new', '{}') RETURNING id`,
    );
    // Rows as a storm writes them: many to a page, each with its first job's id.
    const rows = 500;
    await client.query(
      `WITH s AS (
         INSERT INTO subscribers (email)
         SELECT 'duty' || n || '@example.com' FROM generate_series(1, $1::int) n RETURNING id)
       INSERT INTO deliveries (subscriber_id, event_id, place_id, warning_id, event_type, channel,
                               first_job_id)
       SELECT id, $2, '101210101', '10121010120260701080000001', 'new', 'email',
              'cycle-0000-0000-0000-000000000000_101210101_email' || (row_number() OVER () / 10)
       FROM s`,
      [rows, event.rows[0]!.id],
    );
    const pagesBefore = await client.query<{ id: string; page: string }>(
      `SELECT id, (ctid::text::point)[0]::text AS page FROM deliveries`,
    );
    expect(pagesBefore.rows).toHaveLength(rows);
    // More than one page, or every update would fit anyway.
    expect(new Set(pagesBefore.rows.map((r) => r.page)).size).toBeGreaterThan(3);

    await client.query('BEGIN');
    try {
      // The columns an attempt's claim writes (src/pipeline/deliver.ts).
      await client.query(`UPDATE deliveries SET attempts = attempts + 1,
        claimed_until = now() + interval '120 seconds', updated_at = now()`);
      const stats = await client.query<{ upd: string; hot: string }>(
        `SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot
         FROM pg_stat_xact_user_tables WHERE relname = 'deliveries'`,
      );
      expect(stats.rows[0]).toEqual({ upd: String(rows), hot: String(rows) });
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
    const pagesAfter = await client.query<{ id: string; page: string }>(
      `SELECT id, (ctid::text::point)[0]::text AS page FROM deliveries`,
    );
    const before = new Map(pagesBefore.rows.map((r) => [r.id, r.page]));
    const moved = pagesAfter.rows.filter((r) => before.get(r.id) !== r.page);
    expect(moved).toEqual([]);
  });
});
