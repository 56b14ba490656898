import { sql, type SQL } from 'drizzle-orm';
import { queryRows, transaction, type Db } from '../db/client.js';
import { carriedBy } from './lookups.js';

/**
 * The ledger's part of retention (RETENTION_DAYS, src/pipeline/retention.ts runs the steps):
 * finished notifications and their messages go; whatever is still owed stays.
 */

// The probes below are written `(SELECT EXISTS (…))`, not `EXISTS (…)`: a plain EXISTS becomes
// an anti-join that reads every old row and sorts them (135 ms for 168,000 rows, and growing
// with the backlog), while this is an index probe per row of the ordered index scan, which
// stops at the batch (8 ms).

/** Namespaced so that no other advisory lock of qwn collides with it. */
export const RETENTION_LOCK = 'qwn-retention/notifications';

/**
 * The row's warning is still tracked somewhere: an open warning, or detection's window. By id
 * alone: in v1 mode a delivery names its subscriber's place while `warnings` tracks the alert
 * at each point, and one alert id seen later at another point must still find its ledger row.
 */
export const warningTracked = (alias: string): SQL =>
  sql.raw(`(SELECT EXISTS (SELECT 1 FROM warnings w WHERE w.warning_id = ${alias}.warning_id))`);

/** Whether some notification renders event `alias` (an event goes with its last one). */
export const eventNotified = (alias: string): SQL =>
  sql.raw(`(SELECT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ${alias}.id))`);

/**
 * Deletes at most `batch` notifications older than `cut` whose message is finished (sent, or
 * dead), and each message with the last notification it carried; a message still held, pending
 * or retrying keeps every notification it carries. Messages have no index on their age
 * (migration 0017): none is left without notifications, so none has to be looked for. One
 * sweep at a time: two removing different notifications of one message at once would each still
 * see the other's and leave the message behind.
 */
export function pruneFinishedNotifications(
  db: Db,
  cut: Date,
  batch: number,
): Promise<Record<string, number>> {
  return transaction(db, async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${RETENTION_LOCK}, 0))`);
    const [row] = await queryRows<{ deliveries: number; messages: number }>(
      tx,
      sql`WITH gone AS (
            DELETE FROM deliveries WHERE id IN (
              SELECT d.id FROM deliveries d
              WHERE d.created_at < ${cut}
                AND (SELECT m.status IN ('sent', 'dead') FROM messages m
                     WHERE m.id = d.message_id)
                AND NOT ${warningTracked('d')}
              ORDER BY d.created_at
              LIMIT ${batch})
            RETURNING id, message_id),
          finished AS (
            -- The statement still sees the rows it deletes: those are left out by id.
            DELETE FROM messages m
            WHERE m.id IN (SELECT message_id FROM gone) AND m.status IN ('sent', 'dead')
              AND NOT (SELECT EXISTS (
                SELECT 1 FROM deliveries d
                WHERE ${carriedBy(sql`ARRAY[m.id]`)} AND d.id NOT IN (SELECT id FROM gone)))
            RETURNING 1)
          SELECT (SELECT count(*)::int FROM gone) AS deliveries,
            (SELECT count(*)::int FROM finished) AS messages`,
    );
    return { deliveries: row?.deliveries ?? 0, messages: row?.messages ?? 0 };
  });
}
