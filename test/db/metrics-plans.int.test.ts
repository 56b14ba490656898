import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { dueAndHeld } from '../../src/ledger/index.js';
import { useSqlClient } from '../support/db.js';
import { scannedWhole, type PlanNode } from '../support/plans.js';

/**
 * Every scrape of /metrics counts the held messages, among them the cycle messages that have no
 * row while their cycle collects. Asked from the notifications, a ledger of storm cycles (many
 * events each) led the planner to read the grouped notifications or the messages whole: on a
 * bench ledger of 150,000 notifications, a parallel scan of both tables, 50 ms on every scrape,
 * growing with retention. Only the collecting cycles' notifications can be such messages.
 */
describe('the scrape of held messages', () => {
  const sqlClient = useSqlClient();

  it('reads the collecting cycles, not the whole ledger', async () => {
    const { client } = sqlClient;
    await client.query(`
      INSERT INTO places (id, name) SELECT 'p' || g, 'place ' || g FROM generate_series(1, 600) g;
      INSERT INTO subscribers (name, email)
        SELECT 'desk ' || g, 'desk' || g || '@example.com' FROM generate_series(1, 40) g;
      -- Three released storm cycles, each with 600 events: 32 desks got each by webhook, a message
      -- of its own (same id), and 8 desks by email grouped by cycle; every message sent. Then one
      -- cycle still collecting, 3 events, whose 8 grouped emails have no rows yet.
      INSERT INTO poll_cycles (status, started_at, released_at)
        SELECT 'done', now() - make_interval(mins => 5 * g), now() - make_interval(mins => 5 * g)
        FROM generate_series(1, 3) g;
      INSERT INTO poll_cycles (status) VALUES ('running');
      INSERT INTO events (cycle_id, place_id, warning_id, type, record)
        SELECT c.id, 'p' || g, 'w' || g || ':' || c.id, 'new', '{}'::jsonb
        FROM poll_cycles c, generate_series(1, 600) g
        WHERE c.released_at IS NOT NULL OR g <= 3;
      INSERT INTO deliveries (id, subscriber_id, event_id, cycle_id, place_id, warning_id,
                              event_type, channel, message_id)
        SELECT n.id, s.id, e.id, e.cycle_id, e.place_id, e.warning_id, 'new', n.channel,
               CASE WHEN n.channel = 'webhook' THEN n.id
                    ELSE md5(s.name || ':' || e.cycle_id)::uuid END
        FROM subscribers s, events e,
          LATERAL (SELECT md5(s.id::text || ':' || e.id)::uuid AS id,
                     CASE WHEN substring(s.name FROM 6)::int <= 32 THEN 'webhook'
                          ELSE 'email' END AS channel) n;
      INSERT INTO messages (id, subscriber_id, channel, status, sent_at)
        SELECT DISTINCT d.message_id, d.subscriber_id, d.channel, 'sent', now()
        FROM deliveries d JOIN poll_cycles c ON c.id = d.cycle_id
        WHERE c.released_at IS NOT NULL OR d.channel = 'webhook';
      -- And one message collecting under quiet hours: it has its row.
      INSERT INTO messages (subscriber_id, channel, status, hold, next_attempt_at)
        SELECT id, 'email', 'open', 'quiet', now() + interval '1 hour'
        FROM subscribers WHERE name = 'desk 1';
      ANALYZE;`);

    const built = new PgDialect().sqlToQuery(dueAndHeld(new Date()));
    const scrape = async () => {
      const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) ${built.sql}`,
        built.params,
      );
      const { rows } = await client.query<{ held: number }>(built.sql, built.params);
      // The small tables here may be read whole; the ledger's never.
      return { whole: scannedWhole(explained.rows[0]!['QUERY PLAN'][0].Plan), held: rows[0]!.held };
    };
    const collecting = await scrape();
    expect(collecting.whole).not.toContain('deliveries');
    expect(collecting.whole).not.toContain('messages');
    expect(collecting.held).toBe(9);

    // Most of the time no cycle collects: the count reads nothing of the ledger.
    await client.query(`
      INSERT INTO messages (id, subscriber_id, channel, status, sent_at)
        SELECT DISTINCT d.message_id, d.subscriber_id, 'email', 'sent', now()
        FROM deliveries d JOIN poll_cycles c ON c.id = d.cycle_id
        WHERE c.released_at IS NULL AND d.channel = 'email';
      UPDATE poll_cycles SET status = 'done', released_at = now() WHERE released_at IS NULL;
      ANALYZE;`);
    const quiet = await scrape();
    expect(quiet.whole).not.toContain('deliveries');
    expect(quiet.whole).not.toContain('messages');
    expect(quiet.held).toBe(1);
  });
});
