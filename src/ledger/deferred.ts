import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import { carriedBy } from './lookups.js';

/**
 * Messages without a row of their own. A message of one notification that nothing holds back
 * (no grouping, quiet hours or hourly limit) is pending, never tried and owned by the
 * first-attempt job the check planned it into. All of that is said by its notification (the
 * message takes the notification's id) and by the job's row in `first_attempt_batches`, so its
 * row in `messages` is written only when there is something new to remember: the sent mark
 * inserts it (`SentRecorder`), a failure or a hand-back first writes it as pending
 * (`writeDeferredMessages`). A webhook then costs two row versions, its notification and its
 * sent message, where it cost three (issue 21).
 *
 * A cycle message (src/ledger/release.ts) is the other kind: its notifications name it
 * while the cycle collects, and the release plans it into a first-attempt batch as a check plans
 * a direct one; from there it goes the same way, its row written by its sent mark. Its columns
 * come from the notifications it carries, found by `message_id` (`deliveries_message_idx`); a
 * direct message's, by primary key. Which kind a batch holds its job id says (`RELEASE_JOB`).
 *
 * The row appears once and is never removed while its notification lives, so "no row yet" only
 * ever changes to "a row": every reader asks `messages` first and treats an absent row of a
 * batch's message as pending.
 */

/** The prefix of the release's batch jobs: their messages are cycle messages. */
export const RELEASE_JOB = 'rel_';

/** Whether a deferred message is its notification's own (direct) or a cycle's. */
export type DeferredKind = 'direct' | 'cycle';

export const deferredKindOfJob = (jobId: string): DeferredKind =>
  jobId.startsWith(RELEASE_JOB) ? 'cycle' : 'direct';

/**
 * One row per message among `ids` (uuid[]) of `kind`, in `messages`' columns: a direct message
 * from its notification, a cycle message from the notifications it carries.
 */
function messageColumns(ids: SQL, kind: DeferredKind): SQL {
  return kind === 'direct'
    ? sql`SELECT d.id, d.subscriber_id, d.channel, NULL::text AS hold, NULL::uuid AS cycle_id,
        d.created_at
      FROM deliveries d
      WHERE d.id = ANY(${ids}) AND d.message_id = d.id`
    : sql`SELECT d.message_id AS id, d.subscriber_id, d.channel, 'cycle'::text AS hold,
        d.cycle_id, min(d.created_at) AS created_at
      FROM deliveries d
      WHERE d.message_id = ANY(${ids}) AND d.message_id <> d.id
      GROUP BY d.message_id, d.subscriber_id, d.channel, d.cycle_id`;
}

/** `messageColumns` of those still without a row; `kind` null reads both kinds. */
function unwrittenMessages(ids: SQL, kind: DeferredKind | null): SQL {
  const of = (k: DeferredKind) => sql`SELECT * FROM (${messageColumns(ids, k)}) c
    WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = c.id)`;
  return kind === null ? sql`${of('direct')} UNION ALL ${of('cycle')}` : of(kind);
}

/**
 * The messages of job `jobId`'s batch among `ids` that still have no row: its first attempts,
 * which the job sends without a claim (the BullMQ job's lock is the lease, as for the owned
 * rows of `FIRST_ATTEMPT_OWNED`). Columns as the take statement's `owned`: `attempts` is the
 * attempt being made.
 */
export function deferredOwned(ids: SQL, jobId: string): SQL {
  return sql`SELECT n.id, 1 AS attempts, n.channel, n.hold, n.subscriber_id
    FROM (${unwrittenMessages(ids, deferredKindOfJob(jobId))}) n
    WHERE EXISTS (SELECT 1 FROM first_attempt_batches b
                  WHERE b.job_id = ${jobId} AND n.id = ANY(b.message_ids))`;
}

/** Whether notification `d`'s cycle still collects (src/ledger/release.ts). */
const CYCLE_COLLECTING = sql`EXISTS (SELECT 1 FROM poll_cycles c
  WHERE c.id = d.cycle_id AND c.released_at IS NULL)`;

/**
 * The status of notification `d`'s message `m`, joined with a LEFT JOIN: a direct message
 * without its row yet is pending; a cycle message without one still collects ('open') until
 * its cycle is released, and is pending, owned by its batch job, after.
 */
export const MESSAGE_STATUS = sql`coalesce(m.status,
  CASE WHEN d.message_id <> d.id AND ${CYCLE_COLLECTING} THEN 'open' ELSE 'pending' END)`;

/**
 * Whether notification `d`'s message has no row yet: a direct message in its first-attempt
 * batch, or a cycle message, collecting or in its batch. Every other message has a row from the
 * start.
 */
export const MESSAGE_UNWRITTEN = sql`NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = d.message_id)`;

/** `MESSAGE_UNWRITTEN` of a notification that a cycle message carries. */
export const CYCLE_UNWRITTEN = sql`d.message_id <> d.id AND ${MESSAGE_UNWRITTEN}`;

/**
 * The messages of first-attempt batch `b` still without a row: its first attempts not yet
 * made, one column, `id`. A batch lives until the sweeper finds all of its messages written, so
 * what reads the batches reads the recent ones only, not the ledger.
 */
export const BATCH_UNWRITTEN = sql`SELECT x.id FROM unnest(b.message_ids) AS x(id)
  WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.id)
    AND EXISTS (SELECT 1 FROM deliveries d WHERE ${carriedBy(sql`ARRAY[x.id]`)})`;

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
    INSERT INTO messages (id, subscriber_id, channel, status, hold, cycle_id, attempts,
      next_attempt_at, created_at, updated_at)
    SELECT n.id, n.subscriber_id, n.channel, 'pending', n.hold, n.cycle_id, 0, now(),
      n.created_at, now()
    FROM (${unwrittenMessages(sql`${sql.param([...ids])}::uuid[]`, null)}) n
    ORDER BY n.id
    ON CONFLICT (id) DO NOTHING
    RETURNING id`,
  );
  return written.map((r) => r.id);
}

/**
 * The sent mark of deferred messages: their rows, inserted as sent at `ats`. A plain insert
 * unless `meetWritten`: each row of an `ON CONFLICT` insert is a speculative insertion (a lock
 * and a WAL record more, 40 % more per row, docs/benchmarks-history.md item 41), and a deferred
 * message rarely has a row by the time it is sent. When one does (a failure, a hand-back or a
 * redelivery wrote it while the send was under way), the insert fails on its primary key and
 * `SentRecorder` writes the marks again with `meetWritten`, which marks that row sent as any
 * other.
 */
export function insertSentDeferred(
  ids: readonly string[],
  ats: readonly Date[],
  options: { meetWritten: boolean; kind: DeferredKind },
): SQL {
  const idParam = sql.param(ids);
  const onConflict = options.meetWritten
    ? sql`ON CONFLICT (id) DO UPDATE SET status = 'sent', sent_at = excluded.sent_at,
      claimed_until = NULL, attempts = greatest(m.attempts, 1), last_error = NULL,
      updated_at = now()`
    : sql``;
  const atParam = sql.param(ats.map((at) => at.toISOString()));
  if (options.kind === 'cycle') {
    return sql`INSERT INTO messages AS m (id, subscriber_id, channel, status, hold, cycle_id,
        attempts, next_attempt_at, sent_at, created_at, updated_at)
      SELECT n.id, n.subscriber_id, n.channel, 'sent', n.hold, n.cycle_id, 1, n.created_at, v.at,
        n.created_at, now()
      FROM unnest(${idParam}::uuid[], ${atParam}::timestamptz[]) AS v(id, at)
      JOIN (${messageColumns(sql`${idParam}::uuid[]`, 'cycle')}) n ON n.id = v.id
      ORDER BY n.id
      ${onConflict}`;
  }
  return sql`INSERT INTO messages AS m (id, subscriber_id, channel, status, attempts,
      next_attempt_at, sent_at, created_at, updated_at)
    SELECT d.id, d.subscriber_id, d.channel, 'sent', 1, d.created_at, v.at, d.created_at, now()
    FROM unnest(${idParam}::uuid[], ${atParam}::timestamptz[]) AS v(id, at)
    -- Looked up by primary key whatever the statistics say (see SentRecorder).
    JOIN deliveries d ON d.id = v.id AND d.id = ANY(${idParam}::uuid[])
    ORDER BY d.id
    ${onConflict}`;
}
