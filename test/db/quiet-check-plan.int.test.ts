import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CHECKED_READS,
  checkedReadValues,
  QUIET_WRITES,
  quietWriteValues,
  type CheckedTable,
  type QuietWriteRequest,
} from '../../src/detection/quiet-check.js';
import { useSqlClient } from '../support/db.js';
import {
  accessPaths,
  builtOf,
  genericPlan,
  type BuiltStatement,
  type PlanNode,
} from '../support/plans.js';

/** Each scan of a checked table or `warnings` in the plan: its relation and the index it goes through. */
function scans(plan: PlanNode): string[] {
  return ['places', 'alert_points', 'warnings'].flatMap((relation) =>
    accessPaths(plan, relation).map((path) => `${relation}: ${path}`),
  );
}

async function runNamed<T extends pg.QueryResultRow>(
  client: pg.Client,
  name: string,
  built: BuiltStatement,
): Promise<T[]> {
  return (await client.query<T>({ name, text: built.sql, values: built.params })).rows;
}

/**
 * Every place of every quiet cycle goes through these two statements, many checks in each
 * (src/detection/quiet-check.ts), as named prepared statements. Postgres plans such a statement
 * with its parameters for the first five runs, then keeps the generic plan unless it costs more
 * than those did; a plan that costs an array of unknown length dearly is planned anew on every
 * run (docs/benchmarks-history.md item 51), and one that hashes a table reads all of it on every
 * check.
 */
describe.each<CheckedTable>(['places', 'alert_points'])(
  'the quiet checks’ statements on %s',
  (table) => {
    const sqlClient = useSqlClient();
    const pkey = `${table}_pkey`;

    async function versionOf(client: pg.Client, key: string): Promise<string> {
      const { rows } = await client.query<{ version: string }>(
        `SELECT xmin::text AS version FROM ${table} WHERE id = $1`,
        [key],
      );
      return rows[0]!.version;
    }
    const now = new Date();
    const cycleId = '00000000-0000-4000-8000-000000000001';

    async function seed(client: pg.Client): Promise<void> {
      // Fifteen warnings a place (a stormy region's, kept 72 hours after they were last seen),
      // each with a record of a warning's size: with fewer, smaller rows the planner may keep a
      // generic plan either way. Places 1-250 were seen an hour ago, the others four days ago.
      await client.query(
        table === 'places'
          ? `INSERT INTO places (id, name) SELECT 'p' || g, 'place ' || g FROM generate_series(1, 500) g`
          : `INSERT INTO alert_points (id, lat, lon) SELECT 'p' || g, 30, 114 FROM generate_series(1, 500) g`,
      );
      await client.query(`
      INSERT INTO warnings (place_id, warning_id, state, title, level, status, record,
                            first_seen, last_seen, misses)
        SELECT 'p' || g, 'w' || g || '-' || k, 'open', 'a warning', '橙色', 'active',
               jsonb_build_object('text', repeat('x', 1200), 'n', g),
               now() - interval '5 days',
               now() - CASE WHEN g <= 250 THEN interval '1 hour' ELSE interval '4 days' END, 1
        FROM generate_series(1, 500) g, generate_series(1, 15) k;
      ANALYZE ${table}; ANALYZE warnings;`);
    }

    beforeAll(() => seed(sqlClient.client));

    it('writes many checks in one statement, by key, under a kept generic plan', async () => {
      const { client } = sqlClient;
      let place = 0;
      // Batches of 1 to 6 places, 21 in all: p1 … p21.
      for (let size = 1; size <= 6; size += 1) {
        const batch: QuietWriteRequest[] = [];
        for (let k = 0; k < size; k += 1) {
          place += 1;
          batch.push({
            cycleId,
            key: `p${place}`,
            fetchOk: place % 5 !== 0,
            fetchStartedAt: now,
            now,
            version: await versionOf(client, `p${place}`),
            seen: [`w${place}-1`, `w${place}-2`],
            answer:
              place % 2 === 1 ? { tag: `tag ${place}`, attributions: ['a', `b${place}`] } : null,
          });
        }
        const written = await runNamed<{ ord: number }>(
          client,
          'quiet_writes',
          builtOf(QUIET_WRITES[table], quietWriteValues(batch)),
        );
        expect(written.map((r) => r.ord).sort((a, b) => a - b)).toEqual(batch.map((_, i) => i + 1));
      }
      const { rows: plans } = await client.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'quiet_writes'`,
      );
      expect(Number(plans[0]!.generic_plans)).toBeGreaterThan(0);
      expect(Number(plans[0]!.custom_plans)).toBeLessThanOrEqual(5);

      // Only the seen warnings of the places written, and each place's bookkeeping.
      const { rows: seen } = await client.query<{ place_id: string; n: number }>(
        `SELECT place_id, count(*)::int AS n FROM warnings WHERE misses = 0 GROUP BY place_id`,
      );
      expect(seen).toHaveLength(21);
      expect(seen.every((r) => r.n === 2)).toBe(true);
      const { rows: booked } = await client.query<{ id: string; ok: boolean }>(
        `SELECT id, last_ok_at IS NOT NULL AS ok FROM ${table}
       WHERE last_cycle_id = '${cycleId}' AND last_fetched_at = $1 ORDER BY id`,
        [now],
      );
      expect(booked).toHaveLength(21);
      // A failed fetch records the check and its start, not a good answer.
      expect(booked.filter((r) => !r.ok).map((r) => r.id)).toEqual(['p10', 'p15', 'p20', 'p5']);
      if (table === 'alert_points') {
        // A point keeps the tag and attributions of the answer its check applied, and those it
        // had when the check applied none.
        const { rows: answers } = await client.query<{
          id: string;
          last_tag: string | null;
          attributions: string[] | null;
        }>(`SELECT id, last_tag, attributions FROM alert_points WHERE id IN ('p1', 'p2', 'p3')`);
        expect(answers.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
          { id: 'p1', last_tag: 'tag 1', attributions: ['a', 'b1'] },
          { id: 'p2', last_tag: null, attributions: null },
          { id: 'p3', last_tag: 'tag 3', attributions: ['a', 'b3'] },
        ]);
      }

      // A place row changed since its check's read is left alone, warnings and all; the other
      // place of the same statement is written.
      const stale = await runNamed<{ ord: number }>(
        client,
        'quiet_writes',
        builtOf(
          QUIET_WRITES[table],
          quietWriteValues([
            {
              cycleId,
              key: 'p30',
              fetchOk: true,
              fetchStartedAt: now,
              now,
              version: '1',
              seen: ['w30-1'],
            },
            {
              cycleId,
              key: 'p31',
              fetchOk: true,
              fetchStartedAt: now,
              now,
              version: await versionOf(client, 'p31'),
              seen: ['w31-3'],
            },
          ]),
        ),
      );
      expect(stale).toEqual([{ ord: 2 }]);
      const { rows: touched } = await client.query<{ place_id: string; warning_id: string }>(
        `SELECT place_id, warning_id FROM warnings
       WHERE place_id IN ('p30', 'p31') AND misses = 0 ORDER BY place_id`,
      );
      expect(touched).toEqual([{ place_id: 'p31', warning_id: 'w31-3' }]);

      const plan = await genericPlan(
        client,
        'quiet_writes_generic',
        builtOf(
          QUIET_WRITES[table],
          quietWriteValues(
            ['p40', 'p41'].map((id) => ({
              cycleId,
              key: id,
              fetchOk: true,
              fetchStartedAt: now,
              now,
              version: '1',
              seen: [`w${id.slice(1)}-1`],
            })),
          ),
        ),
      );
      // Each row found by key, then updated by its address.
      const found = scans(plan);
      expect(found).toContain(`${table}: ${pkey}`);
      expect(found).toContain(`${table}: Tid Scan`);
      expect(found).toContain('warnings: Tid Scan');
      expect(found.filter((s) => s.endsWith('Seq Scan'))).toEqual([]);
    });

    it('reads many checks’ places in one statement, by key, under a kept generic plan', async () => {
      const { client } = sqlClient;
      const windowStart = new Date(now.getTime() - 72 * 3600_000);
      for (let size = 1; size <= 7; size += 1) {
        // Places 248 … 254 and beyond: some seen within the window, some not; one that is gone.
        const ids = Array.from({ length: size }, (_, k) => `p${247 + size + k}`);
        const rows = await runNamed<{
          ord: number;
          version: string;
          tracked: { warning_id: string }[] | null;
        }>(
          client,
          'place_reads',
          builtOf(
            CHECKED_READS[table],
            checkedReadValues([
              ...ids.map((key) => ({ key, windowStart })),
              { key: 'gone', windowStart },
            ]),
          ),
        );
        expect(rows.map((r) => r.ord).sort((a, b) => a - b)).toEqual(ids.map((_, i) => i + 1));
        for (const row of rows) {
          const n = Number(ids[row.ord - 1]!.slice(1));
          expect(row.version).toBe(await versionOf(client, `p${n}`));
          expect(row.tracked?.length ?? 0).toBe(n <= 250 ? 15 : 0);
        }
      }
      const { rows: plans } = await client.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'place_reads'`,
      );
      expect(Number(plans[0]!.generic_plans)).toBeGreaterThan(0);
      expect(Number(plans[0]!.custom_plans)).toBeLessThanOrEqual(5);

      const plan = await genericPlan(
        client,
        'place_reads_generic',
        builtOf(
          CHECKED_READS[table],
          checkedReadValues([
            { key: 'p1', windowStart },
            { key: 'p2', windowStart },
          ]),
        ),
      );
      const found = scans(plan);
      expect(found).toContain(`${table}: ${pkey}`);
      expect(found.some((s) => s.startsWith('warnings: '))).toBe(true);
      expect(found.filter((s) => s.endsWith('Seq Scan'))).toEqual([]);
    });
  },
);
