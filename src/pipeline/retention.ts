import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import { subscriptionPointKeys } from '../domain/points.js';
import { eventNotified, pruneFinishedNotifications, warningTracked } from '../ledger/index.js';

/**
 * Retention: what a deployment that runs for years must forget (RETENTION_DAYS). The sweeper
 * runs these steps in order, each in bounded batches found through an index, so that no
 * statement holds locks for long and a backlog is worked off over a few sweeps.
 *
 * Never removed, whatever their age:
 * - a row whose warning is still in `warnings` (open, or closed less than detection's 72-hour
 *   window ago: the sweeper prunes `warnings` after it): detection and the ledger's once-only
 *   rule may still read it;
 * - a notification whose message is held, pending or retrying, that message, and the event it
 *   renders;
 * - a running poll cycle, and the latest cycle (health reports it).
 *
 * A further table is one more entry in `RETENTION_STEPS`, placed before the tables its rows
 * point at.
 */

export interface RetentionLimits {
  /** Rows older than this many days may go. */
  readonly days: number;
  /** Rows per statement. */
  readonly batch: number;
  /** Statements per table per run, so one sweep stays short; the next sweep goes on. */
  readonly maxBatches: number;
}

export const DEFAULT_RETENTION_BATCH = 1000;
export const DEFAULT_RETENTION_MAX_BATCHES = 10;

interface RetentionStep {
  readonly table: string;
  /**
   * Deletes at most `batch` expired rows of `table` older than `cut`, and what goes with them;
   * returns the rows deleted per table.
   */
  readonly prune: (db: Db, cut: Date, batch: number) => Promise<RetentionOutcome>;
}

async function deleted(db: Db, table: string, statement: SQL): Promise<RetentionOutcome> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`WITH gone AS (${statement} RETURNING 1) SELECT count(*)::int AS n FROM gone`,
  );
  return { [table]: rows[0]?.n ?? 0 };
}

/** The oldest rows of a trace table (no row points at them) whose time `at` is before `cut`. */
function prunedByAge(
  db: Db,
  t: { table: string; key: string; at: string },
  cut: Date,
  batch: number,
): Promise<RetentionOutcome> {
  const [table, key, at] = [sql.identifier(t.table), sql.raw(t.key), sql.identifier(t.at)];
  return deleted(
    db,
    t.table,
    sql`DELETE FROM ${table} WHERE ${key} IN (
          SELECT ${key} FROM ${table} WHERE ${at} < ${cut} ORDER BY ${at} LIMIT ${batch})`,
  );
}

export const RETENTION_STEPS: readonly RetentionStep[] = [
  {
    // Finished notifications and their messages: the ledger's step (src/ledger/prune.ts).
    table: 'deliveries',
    prune: pruneFinishedNotifications,
  },
  {
    // An event goes with its last delivery (deleting it would take pending ones along: 0005).
    table: 'events',
    prune: (db, cut, batch) =>
      deleted(
        db,
        'events',
        sql`DELETE FROM events WHERE id IN (
              SELECT e.id FROM events e
              WHERE e.detected_at < ${cut}
                AND NOT ${warningTracked('e')}
                AND NOT ${eventNotified('e')}
              ORDER BY e.detected_at
              LIMIT ${batch})`,
      ),
  },
  {
    // Events keep their row with cycle_id set to null (the foreign key's ON DELETE SET NULL).
    table: 'poll_cycles',
    prune: (db, cut, batch) =>
      deleted(
        db,
        'poll_cycles',
        sql`DELETE FROM poll_cycles WHERE id IN (
              SELECT c.id FROM poll_cycles c
              WHERE c.started_at < ${cut} AND c.status <> 'running'
                AND c.id <> (SELECT id FROM poll_cycles ORDER BY started_at DESC LIMIT 1)
              ORDER BY c.started_at
              LIMIT ${batch})`,
      ),
  },
  {
    // `qwn test-send`'s record of each test: an operator's trace, kept as long as the ledger.
    table: 'test_sends',
    prune: (db, cut, batch) =>
      prunedByAge(db, { table: 'test_sends', key: 'id', at: 'sent_at' }, cut, batch),
  },
  {
    // What sending processes read of subscribers' changes (src/pipeline/subscriber-changes.ts)
    // is minutes old at most; older rows are an operator's trace, kept as long as the ledger.
    // The rows have no key of their own: their physical address names them within a statement.
    table: 'subscriber_changes',
    prune: (db, cut, batch) =>
      prunedByAge(db, { table: 'subscriber_changes', key: 'ctid', at: 'changed_at' }, cut, batch),
  },
  {
    // Not by age: a point leaves as soon as no subscription watches it. A cycle that runs
    // meanwhile puts a point it still needs back (src/detection/poll-points.ts).
    table: 'alert_points',
    prune: async (db, _cut, batch) => {
      // v7 keeps no points: do not read every subscription every sweep to find none.
      const [any] = await queryRows<{ found: boolean }>(
        db,
        sql`SELECT EXISTS (SELECT 1 FROM alert_points) AS found`,
      );
      if (!any?.found) return {};
      const used = await watchedPointKeys(db);
      return deleted(
        db,
        'alert_points',
        sql`DELETE FROM alert_points WHERE id IN (
              SELECT id FROM alert_points WHERE NOT (id = ANY(${sql.param(used)}::text[]))
              LIMIT ${batch})`,
      );
    },
  },
];

/** Every point any subscription names, active subscriber or not (one may be switched back on). */
async function watchedPointKeys(db: Db): Promise<string[]> {
  const rows = await queryRows<{ points: string[] | null; lat: number | null; lon: number | null }>(
    db,
    sql`SELECT s.points, p.lat, p.lon FROM subscriptions s LEFT JOIN places p ON p.id = s.place_id`,
  );
  const keys = new Set<string>();
  for (const row of rows) for (const key of subscriptionPointKeys(row, row.points)) keys.add(key);
  return [...keys];
}

/** Rows removed per table by one run; tables with nothing to remove are left out. */
export type RetentionOutcome = Record<string, number>;

/** Runs every step, each until it finds fewer rows than a batch or has used its batches. */
export async function pruneExpired(
  db: Db,
  limits: RetentionLimits,
  now: Date,
): Promise<RetentionOutcome> {
  const cut = new Date(now.getTime() - limits.days * 86_400_000);
  const outcome: RetentionOutcome = {};
  for (const step of RETENTION_STEPS) {
    for (let i = 0; i < limits.maxBatches; i += 1) {
      const removed = await step.prune(db, cut, limits.batch);
      for (const [table, n] of Object.entries(removed)) {
        if (n > 0) outcome[table] = (outcome[table] ?? 0) + n;
      }
      if ((removed[step.table] ?? 0) < limits.batch) break;
    }
  }
  return outcome;
}
