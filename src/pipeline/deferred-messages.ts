import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';

/**
 * Direct messages without a row of their own. A message of one notification that nothing holds
 * back (no grouping, quiet hours or hourly limit) is pending, never tried and owned by the
 * first-attempt job the check planned it into. All of that is said by its notification (the
 * message takes the notification's id) and by the job's row in `first_attempt_batches`, so its
 * row in `messages` is written only when there is something new to remember: the sent mark
 * inserts it (`SentRecorder`), a failure or a hand-back first writes it as pending
 * (`writeDeferredMessages`). A webhook then costs two row versions, its notification and its
 * sent message, where it cost three (issue 21).
 *
 * The row appears once and is never removed while its notification lives, so "no row yet" only
 * ever changes to "a row": every reader asks `messages` first and treats an absent row of a
 * batch's message as pending.
 */

/**
 * The messages of job `jobId`'s batch among `ids` that still have no row: its first attempts,
 * which the job sends without a claim (the BullMQ job's lock is the lease, as for the owned
 * rows of `FIRST_ATTEMPT_OWNED`). Columns as the take statement's `owned`: `attempts` is the
 * attempt being made.
 */
export function deferredOwned(ids: SQL, jobId: string): SQL {
  return sql`SELECT d.id, 1 AS attempts, d.channel, NULL::text AS hold, d.subscriber_id
    FROM deliveries d
    WHERE d.id = ANY(${ids}) AND d.message_id = d.id
      AND EXISTS (SELECT 1 FROM first_attempt_batches b
                  WHERE b.job_id = ${jobId} AND d.id = ANY(b.message_ids))
      AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = d.id)`;
}

/**
 * The status of notification `d`'s message `m`, joined with a LEFT JOIN: a direct message
 * without its row yet is pending; a cycle message without one still collects ('open'), as its
 * release writes its row (src/pipeline/cycle-release.ts).
 */
export const MESSAGE_STATUS = sql`coalesce(m.status,
  CASE WHEN d.message_id = d.id THEN 'pending' ELSE 'open' END)`;

/**
 * Whether notification `d` is carried by a cycle message that still collects and so has no
 * row (src/pipeline/notification-ledger.ts, `cycleJoinCtes`). Every other message that carries
 * more than its own notification has a row from the start.
 */
export const COLLECTING_UNWRITTEN = sql`d.message_id <> d.id
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = d.message_id)`;

/**
 * Whether notification `d` is a deferred message without its row yet: pending, its first
 * attempt not made. A message of one notification takes that notification's id, and only a
 * deferred one is ever without a row.
 */
export const DEFERRED_UNWRITTEN = sql`d.message_id = d.id
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = d.id)`;

/**
 * The messages of first-attempt batch `b` still without a row: its first attempts not yet
 * made, one column, `id`. A batch lives until the sweeper finds all of its messages written, so
 * what reads the batches reads the recent ones only, not the ledger.
 */
export const BATCH_UNWRITTEN = sql`SELECT x.id FROM unnest(b.message_ids) AS x(id)
  WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.id)
    AND EXISTS (SELECT 1 FROM deliveries d WHERE d.id = x.id)`;

/**
 * Writes the rows of deferred messages among `ids` as they stand: pending, never tried and
 * owned by no job, so that the update that follows (a failure, a hand-back, a redelivery)
 * finds them. Ids that have a row, or that are not deferred messages, are left alone. Returns
 * the ids written.
 */
export async function writeDeferredMessages(db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const written = await queryRows<{ id: string }>(
    db,
    sql`
    INSERT INTO messages (id, subscriber_id, channel, status, attempts, next_attempt_at,
      created_at, updated_at)
    SELECT d.id, d.subscriber_id, d.channel, 'pending', 0, now(), d.created_at, now()
    FROM deliveries d
    WHERE d.id = ANY(${sql.param([...ids])}::uuid[]) AND d.message_id = d.id
    ORDER BY d.id
    ON CONFLICT (id) DO NOTHING
    RETURNING id`,
  );
  return written.map((r) => r.id);
}

/**
 * The sent mark of deferred messages: their rows, inserted as sent at `ats`. A plain insert
 * unless `meetWritten`: each row of an `ON CONFLICT` insert is a speculative insertion (a lock
 * and a WAL record more, 40 % more per row, BENCHMARKS.md item 41), and a deferred message
 * rarely has a row by the time it is sent. When one does (a failure, a hand-back or a
 * redelivery wrote it while the send was under way), the insert fails on its primary key and
 * `SentRecorder` writes the marks again with `meetWritten`, which marks that row sent as any
 * other.
 */
export function insertSentDeferred(
  ids: readonly string[],
  ats: readonly Date[],
  options: { meetWritten: boolean },
): SQL {
  const idParam = sql.param(ids);
  const onConflict = options.meetWritten
    ? sql`ON CONFLICT (id) DO UPDATE SET status = 'sent', sent_at = excluded.sent_at,
      claimed_until = NULL, attempts = greatest(m.attempts, 1), last_error = NULL,
      updated_at = now()`
    : sql``;
  return sql`INSERT INTO messages AS m (id, subscriber_id, channel, status, attempts,
      next_attempt_at, sent_at, created_at, updated_at)
    SELECT d.id, d.subscriber_id, d.channel, 'sent', 1, d.created_at, v.at, d.created_at, now()
    FROM unnest(${idParam}::uuid[], ${sql.param(ats.map((at) => at.toISOString()))}::timestamptz[])
      AS v(id, at)
    -- Looked up by primary key whatever the statistics say (see SentRecorder).
    JOIN deliveries d ON d.id = v.id AND d.id = ANY(${idParam}::uuid[])
    ORDER BY d.id
    ${onConflict}`;
}
