import { describe, expect, it } from 'vitest';
import { CARRIED_NOTIFICATIONS, TAKE_MESSAGES } from '../../src/ledger/take.js';
import { useSqlClient } from '../support/db.js';
import {
  accessPaths,
  builtOf,
  genericPlan,
  scannedWhole,
  type PlanNode,
} from '../support/plans.js';

/**
 * The delivery job reads its messages' notifications through a named prepared statement, and
 * after five runs Postgres may keep a generic plan, planned without the ids. One such plan
 * guessed hundreds of rows and hashed every event and place for each job (15-24 ms a job, most
 * of a storm's Postgres CPU). The statement must stay index lookups under any plan.
 */
describe('the claim read under a generic plan', () => {
  const sqlClient = useSqlClient();

  it('reads events and places by key, never whole', async () => {
    const { client } = sqlClient;
    await client.query(`
      INSERT INTO places (id, name) SELECT 'p' || g, 'place ' || g FROM generate_series(1, 3000) g;
      INSERT INTO subscribers (name, email)
        SELECT 'desk ' || g, 'desk' || g || '@example.com' FROM generate_series(1, 40) g;
      INSERT INTO events (place_id, warning_id, type, record)
        SELECT 'p' || g, 'w' || g, 'new', jsonb_build_object('text', repeat('x', 800), 'n', g)
        FROM generate_series(1, 3000) g;
      -- A storm's ledger: 120,000 notifications, one message each.
      INSERT INTO messages (id, subscriber_id, channel)
        SELECT md5(s.name || ':' || e.id)::uuid, s.id, 'email' FROM subscribers s, events e;
      INSERT INTO deliveries (subscriber_id, event_id, place_id, warning_id, event_type, channel,
                              message_id)
        SELECT s.id, e.id, e.place_id, e.warning_id, 'new', 'email',
               md5(s.name || ':' || e.id)::uuid
        FROM subscribers s, events e;
      -- Statistics as a storm leaves them between two analyses: the planner guesses hundreds
      -- of notifications per message (in the bench it guessed 843 for a job of 10).
      ALTER TABLE deliveries ALTER COLUMN message_id SET (n_distinct = 100);
      ANALYZE places; ANALYZE events; ANALYZE deliveries; ANALYZE messages;
      SET plan_cache_mode = force_generic_plan;`);

    const { rows: picked } = await client.query<{ id: string }>(
      `SELECT md5(name || ':1')::uuid::text AS id FROM subscribers WHERE name IN ('desk 1', 'desk 2')`,
    );
    const ids = picked.map((r) => r.id);
    const built = builtOf(CARRIED_NOTIFICATIONS, { messageIds: ids });
    // The ids go in once per lookup (by message id, and by primary key for a direct message).
    const types = built.params.map(() => 'uuid[]').join(', ');
    await client.query(`PREPARE carried(${types}) AS ${built.sql}`);
    const literal = built.params.map(() => `'{${ids.join(',')}}'`).join(', ');
    const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE carried(${literal})`,
    );
    const plan = explained.rows[0]!['QUERY PLAN'][0].Plan;
    expect(scannedWhole(plan)).toEqual([]);

    // And it reads what it should: both notifications of event 1, its record once.
    const rows = await client.query<{ event_id: string; record: unknown; place_name: string }>(
      `EXECUTE carried(${literal})`,
    );
    expect(rows.rows.map((r) => r.event_id)).toEqual(['1', '1']);
    expect(rows.rows.filter((r) => r.record !== null)).toHaveLength(1);
    expect(rows.rows[0]!.place_name).toBe('place 1');
  });

  it('takes messages by primary key, never through the due index', async () => {
    const { client } = sqlClient;
    // The ledger of the test above, every message due: the due index holds all 120,000. A plan
    // that walked it to find a job's few ids read every due row on each job (most of a storm's
    // claim time, until the owner's read stopped spelling 'pending' the index's way).
    await client.query(`ANALYZE messages`);
    const { rows: picked } = await client.query<{ id: string }>(
      `SELECT id::text FROM messages ORDER BY id LIMIT 50`,
    );
    const plan = await genericPlan(
      client,
      'take',
      builtOf(TAKE_MESSAGES, {
        ids: picked.map((r) => r.id),
        jobId: 'a-batch-job',
        now: new Date(),
      }),
    );
    const paths = accessPaths(plan, 'messages');
    expect(paths.length).toBeGreaterThanOrEqual(2);
    expect(new Set(paths)).toEqual(new Set(['messages_pkey']));
    // The owned messages' notifications come in the same statement, by key as well (the
    // forty subscribers here are fewer than a page or two: scanning them is the right plan).
    const ledgerScans = scannedWhole(plan).filter((relation) => relation !== 'subscribers');
    expect(ledgerScans).toEqual([]);
  });
});
