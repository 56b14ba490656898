import { sql } from 'drizzle-orm';
import { queryRows, transaction, type Db } from '../db/client.js';
import { JOIN_MARGIN_MS } from '../domain/schedule.js';
import type { Hold } from '../domain/schedule.js';
import { carriedBy } from './lookups.js';
import type { Channel } from './message.js';
import { MESSAGE_LOCK } from './record.js';
import { ledgerId } from './ids.js';

/**
 * How an attempt ends in the ledger when it did not send (a sent message is marked by
 * sent-mark.ts): retrying, dead, waiting for its channel or its robot, handed back, or split.
 * The deliver job decides which (src/pipeline/deliver.ts); the jobs that carry the next attempt
 * are its to enqueue.
 */

/**
 * Messages whose attempt is still owed or under way: pending and never tried, or claimed right
 * now. A pending message whose claim ran out (a crashed sender) belongs to the sweeper, not to
 * a wait; an open one is still collecting.
 */
export const attemptUnderWay = (now: Date) =>
  sql`status = 'pending' AND (attempts = 0 OR claimed_until > ${now}::timestamptz)`;

/** A failed attempt that will be tried again after `delayMs`. */
export async function markRetrying(
  db: Db,
  now: Date,
  id: string,
  attempts: number,
  lastError: string,
  delayMs: number,
): Promise<void> {
  await db.execute(sql`
    UPDATE messages SET status = 'retrying', attempts = ${attempts},
      claimed_until = NULL, last_error = ${lastError},
      next_attempt_at = ${now}::timestamptz + make_interval(secs => ${delayMs / 1000}),
      updated_at = ${now}
    WHERE id = ${id}`);
}

/** A message that will never be sent: `lastError` says why. */
export async function markDead(
  db: Db,
  now: Date,
  id: string,
  attempts: number,
  lastError: string,
): Promise<void> {
  await db.execute(sql`
    UPDATE messages SET status = 'dead', attempts = ${attempts}, claimed_until = NULL,
      last_error = ${lastError}, updated_at = ${now}
    WHERE id = ${id}`);
}

/**
 * A message of a paused channel: retrying after `waitMs`, its attempt given back (`attempts` is
 * the count before it).
 */
export async function markChannelWait(
  db: Db,
  now: Date,
  id: string,
  attempts: number,
  lastError: string,
  waitMs: number,
): Promise<void> {
  await db.execute(sql`
    UPDATE messages SET status = 'retrying', attempts = ${attempts}, claimed_until = NULL,
      first_job_id = NULL, last_error = ${lastError},
      next_attempt_at = ${now}::timestamptz + make_interval(secs => ${waitMs / 1000}),
      updated_at = ${now}
    WHERE id = ${id} AND status IN ('pending', 'retrying')`);
}

/**
 * Messages taken but not sent: each attempt is given back (`attempts` is the count before it)
 * and no job owns a first attempt of theirs any more.
 */
export async function giveBack(
  db: Db,
  now: Date,
  messages: readonly { id: string; attempts: number }[],
): Promise<void> {
  await db.execute(sql`
    UPDATE messages m SET attempts = v.attempts, claimed_until = NULL, first_job_id = NULL,
      updated_at = ${now}
    FROM unnest(${sql.param(messages.map((m) => m.id))}::uuid[],
                ${sql.param(messages.map((m) => m.attempts))}::int[]) AS v(id, attempts)
    WHERE m.id = v.id AND m.status IN ('pending', 'retrying')`);
}

/**
 * Moves notifications `ids` of message `message` to a new message of the same subscriber, due
 * now, in one transaction; a quiet message's rest keeps its hold. Returns the new message's id
 * and the notifications moved (none: no new message is left behind).
 */
export async function splitIntoFollowUp(
  db: Db,
  now: Date,
  message: { id: string; subscriberId: string; channel: Channel; hold: Hold | null },
  ids: readonly string[],
): Promise<{ followUp: string; moved: Set<string> }> {
  const followUp = ledgerId(now);
  const moved = await transaction(db, async (tx) => {
    await tx.execute(sql`
      INSERT INTO messages (id, subscriber_id, channel, status, hold, next_attempt_at,
        created_at, updated_at)
      VALUES (${followUp}, ${message.subscriberId}, ${message.channel}, 'pending',
              ${message.hold === 'quiet' ? 'quiet' : null}, ${now}, ${now}, ${now})`);
    const rows = await queryRows<{ id: string }>(
      tx,
      sql`UPDATE deliveries SET message_id = ${followUp}
          WHERE message_id = ${message.id} AND message_id <> id
            AND id = ANY(${sql.param([...ids])}::uuid[])
          RETURNING id`,
    );
    if (rows.length === 0) await tx.execute(sql`DELETE FROM messages WHERE id = ${followUp}`);
    return new Set(rows.map((r) => r.id));
  });
  return { followUp, moved };
}

/** A waiting robot message joins one due at most this much later than its own wait. */
const JOIN_SLACK_MS = 5_000;

/**
 * A robot message that cannot be posted for `waitMs` (docs/messages.md): when it was never
 * posted nor tried and the subscriber has a message waiting so, it joins that one (its id was
 * never seen); else it goes back to collecting ('open', hold 'throttle', a quiet one keeping its
 * hold and its id) until then, the attempt not counted. Under the scheduler's lock of the
 * subscriber's messages. Null: the message was settled meanwhile.
 */
export async function waitForRobotSlot(
  db: Db,
  now: Date,
  message: { id: string; subscriberId: string; hold: Hold | null },
  waitMs: number,
  why: string,
): Promise<{ joined: string } | { attempts: number } | null> {
  return transaction(db, async (tx) => {
    await tx.execute(sql`
      SELECT pg_advisory_xact_lock(hashtextextended(${MESSAGE_LOCK}::text || ${message.subscriberId}::text, 0))`);
    // Never posted, nor tried: not sent before a redelivery, no failed attempt that may have
    // reached the group after all (DingTalk's msgUuid is this id).
    const [own] = await queryRows<{ unseen: boolean }>(
      tx,
      sql`SELECT (sent_at IS NULL AND last_error IS NULL AND attempts = 1) AS unseen
          FROM messages WHERE id = ${message.id}`,
    );
    if (own?.unseen && message.hold !== 'quiet') {
      const [joined] = await queryRows<{ id: string }>(
        tx,
        sql`SELECT id FROM messages
            WHERE subscriber_id = ${message.subscriberId} AND id <> ${message.id}
              AND status = 'open' AND hold = 'throttle'
              AND next_attempt_at >= ${now}::timestamptz + make_interval(secs => ${JOIN_MARGIN_MS / 1000})
              -- Not one that waits much longer (the hourly limit): this one would wait with it.
              AND next_attempt_at <= ${now}::timestamptz + make_interval(secs => ${(waitMs + JOIN_SLACK_MS) / 1000})
            ORDER BY next_attempt_at, id
            LIMIT 1
            FOR UPDATE`,
      );
      if (joined) {
        await tx.execute(
          sql`UPDATE deliveries d SET message_id = ${joined.id}
            WHERE ${carriedBy(sql`ARRAY[${message.id}]::uuid[]`)}`,
        );
        await tx.execute(sql`DELETE FROM messages WHERE id = ${message.id}`);
        return { joined: joined.id };
      }
    }
    const [row] = await queryRows<{ attempts: number }>(
      tx,
      sql`UPDATE messages SET status = 'open',
            hold = CASE WHEN hold = 'quiet' THEN 'quiet' ELSE 'throttle' END,
            attempts = attempts - 1, claimed_until = NULL, first_job_id = NULL,
            next_attempt_at = ${now}::timestamptz + make_interval(secs => ${waitMs / 1000}),
            last_error = ${why}, updated_at = ${now}
          WHERE id = ${message.id} AND status IN ('pending', 'retrying')
          RETURNING attempts`,
    );
    return row ? { attempts: row.attempts } : null;
  });
}
