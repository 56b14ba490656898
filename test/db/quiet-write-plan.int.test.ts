import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { quietWrite } from '../../src/pipeline/check-location.js';
import { useSqlClient } from '../support/db.js';

/**
 * Every place of every quiet cycle runs the quiet check's write, a named prepared statement.
 * Postgres plans such a statement with its parameters for the first five runs, then keeps the
 * generic plan unless it costs more than those did. An index condition over the seen warnings'
 * array, costed for an array of unknown length, made it cost more, so every quiet check was
 * planned again (BENCHMARKS.md item 51).
 */
describe('the quiet check write', () => {
  const sqlClient = useSqlClient();

  it('keeps a generic plan, and still writes only the seen warnings of the same place version', async () => {
    const { client } = sqlClient;
    // Fifteen warnings a place (a stormy region's, kept 72 hours after they were last seen),
    // each with a record of a warning's size: with fewer, smaller rows the planner may keep a
    // generic plan either way.
    await client.query(`
      INSERT INTO places (id, name) SELECT 'p' || g, 'place ' || g FROM generate_series(1, 500) g;
      INSERT INTO warnings (place_id, warning_id, state, title, level, status, record,
                            first_seen, last_seen, misses)
        SELECT 'p' || g, 'w' || g || '-' || k, 'open', 'a warning', '橙色', 'active',
               jsonb_build_object('text', repeat('x', 1200), 'n', g),
               now() - interval '1 hour', now() - interval '1 hour', 1
        FROM generate_series(1, 500) g, generate_series(1, 15) k;
      ANALYZE places; ANALYZE warnings;`);
    const dialect = new PgDialect();
    const now = new Date();
    const cycleId = '00000000-0000-4000-8000-000000000001';
    for (let g = 1; g <= 12; g += 1) {
      const {
        rows: [place],
      } = await client.query<{ version: string }>(
        `SELECT xmin::text AS version FROM places WHERE id = $1`,
        [`p${g}`],
      );
      const built = dialect.sqlToQuery(
        quietWrite({
          cycleId,
          placeId: `p${g}`,
          fetchOk: true,
          fetchStartedAt: now,
          now,
          version: place!.version,
          seen: [`w${g}-1`, `w${g}-2`],
        }),
      );
      const { rows } = await client.query<{ n: number }>({
        name: 'quiet_write',
        text: built.sql,
        values: built.params,
      });
      expect(rows[0]!.n).toBe(1);
    }
    const { rows: plans } = await client.query<{ generic_plans: string; custom_plans: string }>(
      `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'quiet_write'`,
    );
    expect(Number(plans[0]!.generic_plans)).toBeGreaterThan(0);
    expect(Number(plans[0]!.custom_plans)).toBeLessThanOrEqual(5);

    const { rows: seen } = await client.query<{ place_id: string; warning_id: string }>(
      `SELECT place_id, warning_id FROM warnings WHERE misses = 0 ORDER BY place_id, warning_id`,
    );
    const expected = Array.from({ length: 12 }, (_, i) => [
      { place_id: `p${i + 1}`, warning_id: `w${i + 1}-1` },
      { place_id: `p${i + 1}`, warning_id: `w${i + 1}-2` },
    ]).flat();
    const order = (rows: { place_id: string; warning_id: string }[]) =>
      [...rows].sort((a, b) =>
        `${a.place_id}/${a.warning_id}`.localeCompare(`${b.place_id}/${b.warning_id}`),
      );
    expect(order(seen)).toEqual(order(expected));

    // A place row changed since its read: the write is not applied at all.
    const stale = dialect.sqlToQuery(
      quietWrite({
        cycleId,
        placeId: 'p13',
        fetchOk: true,
        fetchStartedAt: now,
        now,
        version: '1',
        seen: ['w13-1'],
      }),
    );
    const { rows: none } = await client.query<{ n: number }>({
      name: 'quiet_write',
      text: stale.sql,
      values: stale.params,
    });
    expect(none[0]!.n).toBe(0);
    const { rows: untouched } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM warnings WHERE place_id = 'p13' AND misses = 0`,
    );
    expect(untouched[0]!.n).toBe('0');
  });
});
