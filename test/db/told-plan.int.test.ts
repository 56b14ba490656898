import { describe, expect, it } from 'vitest';
import { TOLD } from '../../src/ledger/told.js';
import { plainArray } from '../../src/db/prepared.js';
import { useSqlClient } from '../support/db.js';
import { builtOf, genericPlan, scansOf } from '../support/plans.js';

/**
 * What each subscriber was told of a warning's story is read in every check of an update or a
 * cancel, through a named prepared statement that Postgres may run with a generic plan. The
 * ledger is skewed: a national desk holds thousands of notifications where a person holds a
 * few. A plan that looked the subscribers up alone and filtered their warnings read every
 * notification of every desk of the place in each such check (4 ms a check in the bench's
 * escalation). Each (subscriber, warning) asked must be one probe of `deliveries_once`.
 */
describe('what a subscriber was told, under a generic plan', () => {
  const sqlClient = useSqlClient();

  it('probes deliveries_once by subscriber and warning together', async () => {
    const { client } = sqlClient;
    await client.query(`
      INSERT INTO places (id, name) SELECT 'p' || g, 'place ' || g FROM generate_series(1, 2000) g;
      INSERT INTO subscribers (name, email)
        SELECT 'sub ' || g, 'sub' || g || '@example.com' FROM generate_series(1, 400) g;
      INSERT INTO events (place_id, warning_id, type, record)
        SELECT 'p' || g, 'w' || g, 'new', '{}'::jsonb FROM generate_series(1, 2000) g;
      -- Three desks told of every warning, everyone else of one.
      INSERT INTO deliveries (subscriber_id, event_id, place_id, warning_id, event_type, channel,
                              message_id)
        SELECT s.id, e.id, e.place_id, e.warning_id, 'new', 'email', gen_random_uuid()
        FROM subscribers s JOIN events e
          ON s.name IN ('sub 1', 'sub 2', 'sub 3')
          OR e.warning_id = 'w' || (1 + (substr(s.name, 5)::int % 2000));
      ANALYZE subscribers; ANALYZE events; ANALYZE deliveries;`);
    const { rows: asked } = await client.query<{ id: string }>(
      `SELECT id::text FROM subscribers WHERE name IN ('sub 1', 'sub 2', 'sub 3', 'sub 9')`,
    );
    const pairs = asked.flatMap((s) => ['w10', 'w11'].map((w) => [s.id, w] as const));
    const values = {
      subscriberIds: plainArray(pairs.map(([s]) => s)),
      warningIds: pairs.map(([, w]) => w),
    };
    const plan = await genericPlan(client, 'told', builtOf(TOLD, values));
    const scans = scansOf(plan, 'deliveries');
    expect(scans.map((s) => s['Index Name'])).toEqual(['deliveries_once']);
    expect(scans[0]!['Index Cond']).toContain('warning_id');
    expect(scans[0]!.Filter).toBeUndefined();

    // And it finds what was told: each desk of both warnings, sub 9 (told of w10) of one.
    const built = builtOf(TOLD, values);
    const found = await client.query<{ warning_id: string }>(built.sql, built.params);
    expect(found.rows.map((r) => r.warning_id).sort()).toEqual([
      'w10',
      'w10',
      'w10',
      'w10',
      'w11',
      'w11',
      'w11',
    ]);
  });
});
