import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import { carriedBy, createdInCycle, IN_COLLECTING_MESSAGE, MESSAGE_STATUS } from './lookups.js';
import { SHOWN_STATUS } from './list.js';
import type { Channel } from './message.js';
import { attemptUnderWay } from './settle.js';

/**
 * What the ledger says of messages and notifications, for `poll --once`, the metrics scrape and
 * the demo (`qwn deliveries` lists rows through list.ts): each status as one statement reads it.
 */

/** How many of each status. */
export interface StatusCount {
  status: string;
  n: number;
}

/** The messages carrying notifications of cycle `cycleId`, and the messages `released`. */
function carriersOf(cycleId: string, released: readonly string[]) {
  return sql`(SELECT d.message_id FROM deliveries d WHERE ${createdInCycle(cycleId)}
              UNION SELECT unnest(${sql.param(released)}::uuid[]))`;
}

/**
 * How many messages of cycle `cycleId` (and of `released`) still owe their first attempt: due
 * and not yet taken, or being sent. A held one waits for its hold.
 */
export async function firstAttemptsOwed(
  db: Db,
  now: Date,
  cycleId: string,
  released: readonly string[],
): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    db,
    // A "cycle" message of this cycle is released by the count that closed the cycle, a
    // moment after the cycle reads as done: it is owed now, whatever its due time says.
    sql`SELECT (SELECT count(*)::int FROM messages
          WHERE id IN ${carriersOf(cycleId, released)}
            AND (${attemptUnderWay(now)} OR (status = 'open' AND next_attempt_at <= ${now}::timestamptz)
                 OR (status = 'open' AND hold = 'cycle' AND cycle_id = ${cycleId})))
        + (SELECT count(*)::int FROM deliveries d
           WHERE ${createdInCycle(cycleId)} AND ${IN_COLLECTING_MESSAGE}) AS n`,
  );
  return row?.n ?? 0;
}

/** The statuses of cycle `cycleId`'s notifications and of its (and `released`'s) messages. */
export async function cycleStatus(
  db: Db,
  cycleId: string,
  released: readonly string[],
): Promise<{ notifications: StatusCount[]; messages: StatusCount[] }> {
  const notifications = await queryRows<StatusCount>(
    db,
    sql`SELECT ${MESSAGE_STATUS} AS status, count(*)::int AS n
        FROM deliveries d LEFT JOIN messages m ON m.id = d.message_id
        WHERE ${createdInCycle(cycleId)} GROUP BY 1`,
  );
  const messages = await queryRows<StatusCount>(
    db,
    // A message collecting for its cycle has no row yet: its notifications say it.
    sql`SELECT status, sum(n)::int AS n FROM (
          SELECT status, count(*) AS n FROM messages
          WHERE id IN ${carriersOf(cycleId, released)} GROUP BY status
          UNION ALL
          SELECT 'open', count(DISTINCT d.message_id) FROM deliveries d
          WHERE ${createdInCycle(cycleId)} AND ${IN_COLLECTING_MESSAGE}) c
        GROUP BY status HAVING sum(n) > 0`,
  );
  return { notifications, messages };
}

/**
 * What `qwn_oldest_due_seconds` and `qwn_messages_held` read on each scrape: how long the oldest
 * due message has waited, and how many messages are held. The metrics scrape runs it
 * (src/ops/metrics.ts); a test holds its plan to the collecting cycles
 * (test/db/metrics-plans.int.test.ts).
 */
export const dueAndHeld = (now: Date): SQL => sql`SELECT
    -- messages_due_idx holds exactly the unsent messages, ordered by next_attempt_at. A held
    -- message is due when its hold ends, not before.
    extract(epoch FROM ${now}::timestamptz - min(next_attempt_at)
      FILTER (WHERE next_attempt_at <= ${now}::timestamptz))
      AS age,
    count(*) FILTER (WHERE status = 'open')::int
    -- A cycle message has no row while its cycle collects. Found from the collecting cycles'
    -- events, each event's notifications by key (OFFSET 0 keeps the planner from joining them
    -- the other way round): asked from the notifications, a ledger of storm cycles made it read
    -- the notifications or the messages whole on every scrape.
    + (SELECT count(DISTINCT x.message_id)::int
       FROM poll_cycles c
       JOIN events e ON e.cycle_id = c.id
       CROSS JOIN LATERAL (
         SELECT d.message_id FROM deliveries d
         WHERE d.event_id = e.id AND ${IN_COLLECTING_MESSAGE}
         OFFSET 0) x
       WHERE c.released_at IS NULL) AS held
  FROM messages WHERE status IN ('open', 'pending', 'retrying')`;

/** Notifications by channel and shown status (`qwn deliveries`'s words). */
export interface ChannelStatusCount {
  channel: Channel;
  status: string;
  count: number;
}

/** The notifications of cycle `cycleId`, or of every cycle, by channel and shown status. */
export function notificationsByChannel(db: Db, cycleId?: string): Promise<ChannelStatusCount[]> {
  const where = cycleId === undefined ? sql`` : sql`WHERE ${createdInCycle(cycleId)}`;
  return queryRows<ChannelStatusCount>(
    db,
    sql`SELECT d.channel, ${SHOWN_STATUS} AS status, count(*)::int AS count
        FROM deliveries d LEFT JOIN messages m ON m.id = d.message_id
        ${where} GROUP BY 1, 2 ORDER BY 1, 2`,
  );
}

/** Messages held by quiet hours: when the last is due, and how many notifications they carry. */
export async function heldForQuietHours(db: Db): Promise<{ due: Date; n: number } | null> {
  const [row] = await queryRows<{ due: Date; n: number }>(
    db,
    sql`SELECT max(m.next_attempt_at) AS due, count(d.id)::int AS n
        FROM messages m JOIN deliveries d ON ${carriedBy(sql`ARRAY[m.id]`)}
        WHERE m.status = 'open' AND m.hold = 'quiet'
        HAVING count(d.id) > 0`,
  );
  return row ?? null;
}
