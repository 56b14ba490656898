import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useSqlClient } from '../support/db.js';

/**
 * The two updates that happen most often touch no indexed column and find room on their page,
 * so they are HOT updates: the new version stays on its page and no index gets an entry.
 * - A message is written three times: inserted by the check, claimed by its attempt, marked
 *   with the outcome. The claim is HOT with migration 0007's fillfactor (the notification
 *   ledger beside it is written once and never updated).
 * - Every check re-marks the warnings it still sees (last_seen, misses): HOT since migration
 *   0004 indexes first_seen instead of last_seen and leaves room on each page.
 * A storm's and a quiet cycle's Postgres time depend on them (docs/benchmarks-history.md).
 */

/** Updates and HOT updates of a table in the current transaction. */
async function updatesInTransaction(client: pg.Client, table: string) {
  const stats = await client.query<{ upd: string; hot: string }>(
    `SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot
     FROM pg_stat_xact_user_tables WHERE relname = $1`,
    [table],
  );
  return stats.rows[0];
}

describe('HOT updates', () => {
  const sql = useSqlClient();

  it('claims messages in place, without new index entries', async () => {
    await sql.client.query(`INSERT INTO places (id, name) VALUES ('101210101', '杭州')`);
    const event = await sql.client.query<{ id: string }>(
      `INSERT INTO events (place_id, warning_id, type, record)
       VALUES ('101210101', '10121010120260701080000001', 'new', '{}') RETURNING id`,
    );
    // Messages as a storm writes them: many to a page, each with its first job's id and its
    // notification, under the same id (src/ledger/record.ts).
    const rows = 500;
    await sql.client.query(
      `WITH s AS (
         INSERT INTO subscribers (email)
         SELECT 'duty' || n || '@example.com' FROM generate_series(1, $1::int) n RETURNING id),
       n AS (
         INSERT INTO deliveries (id, message_id, subscriber_id, event_id, place_id, warning_id,
                                 event_type, channel)
         SELECT v.id, v.id, v.subscriber_id, $2, '101210101', '10121010120260701080000001',
                'new', 'email'
         FROM (SELECT gen_random_uuid() AS id, s.id AS subscriber_id FROM s) v
         RETURNING id, subscriber_id)
       INSERT INTO messages (id, subscriber_id, channel, status, first_job_id)
       SELECT id, subscriber_id, 'email', 'pending',
              'cycle-0000-0000-0000-000000000000_101210101_0_email' || (row_number() OVER () / 10)
       FROM n`,
      [rows, event.rows[0]!.id],
    );
    const pagesBefore = await sql.client.query<{ id: string; page: string }>(
      `SELECT id, (ctid::text::point)[0]::text AS page FROM messages`,
    );
    expect(pagesBefore.rows).toHaveLength(rows);
    // More than one page, or every update would fit anyway.
    expect(new Set(pagesBefore.rows.map((r) => r.page)).size).toBeGreaterThan(3);

    await sql.client.query('BEGIN');
    try {
      // The columns an attempt's claim writes (src/ledger/take.ts): a pending message's
      // status stays what it was.
      await sql.client.query(`UPDATE messages SET
        status = CASE WHEN status = 'open' THEN 'pending' ELSE status END,
        attempts = attempts + 1,
        claimed_until = now() + interval '120 seconds', updated_at = now()`);
      expect(await updatesInTransaction(sql.client, 'messages')).toEqual({
        upd: String(rows),
        hot: String(rows),
      });
      await sql.client.query('COMMIT');
    } catch (err) {
      await sql.client.query('ROLLBACK');
      throw err;
    }
    const pagesAfter = await sql.client.query<{ id: string; page: string }>(
      `SELECT id, (ctid::text::point)[0]::text AS page FROM messages`,
    );
    const before = new Map(pagesBefore.rows.map((r) => [r.id, r.page]));
    const moved = pagesAfter.rows.filter((r) => before.get(r.id) !== r.page);
    expect(moved).toEqual([]);
  });

  it('re-marks the warnings a check still sees in place', async () => {
    // Warnings as a storm leaves them: many places, a few each, with their stored records.
    const text = '预计未来24小时内将受暴雨影响，请注意防范。'.repeat(8);
    await sql.client.query(
      `INSERT INTO warnings (place_id, warning_id, state, title, level, status, record, raw,
                             first_seen, last_seen)
       SELECT 'p' || (n / 3), 'w' || n, 'open', '暴雨橙色预警', '橙色', 'active',
              jsonb_build_object('id', 'w' || n, 'text', $1::text),
              jsonb_build_object('id', 'w' || n, 'text', $1::text, 'sender', '气象台'),
              now() - interval '1 hour', now() - interval '5 minutes'
       FROM generate_series(1, 600) n`,
      [text],
    );
    await sql.client.query('BEGIN');
    try {
      // The columns a check that sees them again writes (markSeen, the quiet check).
      await sql.client.query(`UPDATE warnings SET last_seen = now(), misses = 0`);
      expect(await updatesInTransaction(sql.client, 'warnings')).toEqual({
        upd: '600',
        hot: '600',
      });
      await sql.client.query('COMMIT');
    } catch (err) {
      await sql.client.query('ROLLBACK');
      throw err;
    }
  });
});
