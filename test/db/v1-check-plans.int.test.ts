import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { pointAt } from '../../src/domain/points.js';
import { pointSubject } from '../../src/detection/point-subject.js';
import { subscriptionsNear } from '../../src/detection/point-subscriptions.js';
import { useSqlClient } from '../support/db.js';
import { accessPaths, genericPlan, scannedWhole, type PlanNode } from '../support/plans.js';

interface BufferedNode extends PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: BufferedNode[];
}

function nodesUsing(node: BufferedNode, index: string): BufferedNode[] {
  const own = node['Index Name'] === index ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => nodesUsing(child, index))];
}

/**
 * A v1 check that detects anything looks up the subscriptions at its point: those that store it
 * and those whose place lies there. One OR across both tables read every subscription joined to
 * its place on each such check (16 ms for 100,000 subscriptions; a v1 storm's Postgres time
 * quadrupled); and the GIN index on stored points held a null entry for every subscription
 * without points in its pending list, which each lookup read whole until a vacuum. It also asks
 * whether other points reported its alerts this cycle, which by the cycle read all its events.
 * The places at the point were read whole too, for want of an index on their coordinates.
 */
describe("a v1 check's lookups", () => {
  const sqlClient = useSqlClient();

  it('find the subscriptions at a point through indexes, never by reading them all', async () => {
    const { client } = sqlClient;
    await client.query(`
      -- 3,000 places a tenth of a degree apart; 40 desks watching 500 of them each by the
      -- place's own coordinates, as most subscriptions do; one subscription with a point of its own.
      INSERT INTO places (id, name, lat, lon)
        SELECT 'p' || g, 'place ' || g, 20 + (g / 60) * 0.1, 100 + (g % 60) * 0.1
        FROM generate_series(0, 2999) g;
      INSERT INTO subscribers (name, email)
        SELECT 'desk ' || g, 'desk' || g || '@example.com' FROM generate_series(1, 40) g;
      INSERT INTO subscriptions (subscriber_id, place_id)
        SELECT s.id, 'p' || g FROM subscribers s CROSS JOIN generate_series(0, 2999) g
        WHERE g % 6 = substring(s.name FROM 6)::int % 6;
      UPDATE subscriptions SET points = ARRAY['25.5,110.5']
        WHERE place_id = 'p0' AND subscriber_id = (SELECT id FROM subscribers WHERE name = 'desk 6');
      -- And one that stores its own place's point: found both ways, listed once.
      UPDATE subscriptions SET points = ARRAY['20.1,100.1']
        WHERE place_id = 'p61' AND subscriber_id = (SELECT id FROM subscribers WHERE name = 'desk 7');
      ANALYZE places; ANALYZE subscribers; ANALYZE subscriptions;`);

    const explain = async (lat: number, lon: number) => {
      const built = new PgDialect().sqlToQuery(subscriptionsNear(pointAt(lat, lon)!));
      const explained = await client.query<{ 'QUERY PLAN': [{ Plan: BufferedNode }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${built.sql}`,
        built.params,
      );
      const found = await client.query<{ place_id: string; points: string[] | null }>(
        built.sql,
        built.params,
      );
      return { plan: explained.rows[0]!['QUERY PLAN'][0].Plan, rows: found.rows };
    };

    // Place p61 (20.1, 100.1): watched by the desks whose number is 1 more than a multiple of 6.
    const byPlace = await explain(20.1, 100.1);
    expect(byPlace.rows.filter((r) => r.place_id === 'p61')).toHaveLength(7);
    expect(scannedWhole(byPlace.plan)).not.toContain('subscriptions');
    expect(scannedWhole(byPlace.plan)).not.toContain('places');

    // The stored point, found through the GIN index, which holds that one subscription only.
    const byPoint = await explain(25.5, 110.5);
    expect(byPoint.rows).toEqual([expect.objectContaining({ place_id: 'p0' })]);
    expect(scannedWhole(byPoint.plan)).not.toContain('subscriptions');
    const lookups = nodesUsing(byPoint.plan, 'subscriptions_points_idx');
    expect(lookups.length).toBeGreaterThan(0);
    for (const node of lookups) {
      expect((node['Shared Hit Blocks'] ?? 0) + (node['Shared Read Blocks'] ?? 0)).toBeLessThan(5);
    }

    // A prepared statement in the check: the plan made without the point's values, which a
    // connection keeps once it costs no more than those made with them, finds the places at
    // the point through their coordinates too, and never reads the subscriptions whole.
    const generic = await genericPlan(client, 'near', subscriptionsNear(pointAt(20.1, 100.1)!));
    expect(accessPaths(generic, 'places')).toContain('places_coordinates_idx');
    expect(scannedWhole(generic)).not.toContain('subscriptions');
  });

  it("look up an alert's other reports in the cycle by the alert, not the cycle", async () => {
    const { client } = sqlClient;
    // A v1 storm's cycle late on: 3,000 events written, one alert each, at 3,000 points.
    const { rows: cycles } = await client.query<{ id: string }>(
      `INSERT INTO poll_cycles (status) VALUES ('running') RETURNING id`,
    );
    const cycleId = cycles[0]!.id;
    await client.query(
      `INSERT INTO events (cycle_id, place_id, warning_id, type, record)
         SELECT $1, '30.' || g || ',120.5', 'V1ALERT' || g, 'new', '{}'::jsonb
         FROM generate_series(10, 3009) g`,
      [cycleId],
    );
    await client.query('ANALYZE events');
    const built = new PgDialect().sqlToQuery(
      pointSubject(pointAt(31.5, 120.5)!, 'place').reportedElsewhere(cycleId, [
        'V1ALERT11',
        'V1ALERT12',
      ])!,
    );
    const explained = await client.query<{ 'QUERY PLAN': [{ Plan: BufferedNode }] }>(
      `EXPLAIN (FORMAT JSON) ${built.sql}`,
      built.params,
    );
    expect(accessPaths(explained.rows[0]!['QUERY PLAN'][0].Plan, 'events')).toContain(
      'events_warning_idx',
    );
    const found = await client.query<{ warning_id: string }>(built.sql, built.params);
    expect(found.rows.map((r) => r.warning_id).sort()).toEqual(['V1ALERT11', 'V1ALERT12']);
  });
});
