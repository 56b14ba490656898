import { sql, type SQL } from 'drizzle-orm';

/**
 * How readers find notifications (`deliveries d`) by what they belong to. Every index on
 * `deliveries` costs an entry per notification of a storm, so each lookup says which index it
 * goes through.
 */

/**
 * The notifications `d` of the messages `ids` (an SQL expression of type uuid[]). A direct
 * notification is its own message and is found by primary key; `deliveries_message_idx` holds
 * only notifications carried by another message (migration 0014).
 */
export function carriedBy(ids: SQL): SQL {
  return sql`((d.message_id = ANY(${ids}) AND d.message_id <> d.id)
    OR (d.id = ANY(${ids}) AND d.message_id = d.id))`;
}

/**
 * The notifications `d` that poll cycle `cycleId` created: those of the events its checks
 * detected (a check writes its events and their notifications in one transaction, both with its
 * cycle), through `events_cycle_idx` and `deliveries_event_idx`. `deliveries.cycle_id` says the
 * same but has no index: one more index entry per notification of a storm (migration 0016).
 */
export function createdInCycle(cycleId: string): SQL {
  return sql`d.event_id IN (SELECT e.id FROM events e WHERE e.cycle_id = ${cycleId})`;
}

/**
 * Whether notification `d` waits in its cycle's message, which has no row while the cycle
 * collects: the cycle's release writes it (src/ledger/release.ts). Every other notification's
 * message has its row from the statement that wrote the notification.
 */
export const IN_COLLECTING_MESSAGE = sql`(d.message_id <> d.id
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = d.message_id))`;

/**
 * The status of notification `d`'s message `m`, joined with a LEFT JOIN: a message without its
 * row collects for its cycle ('open').
 */
export const MESSAGE_STATUS = sql`coalesce(m.status, 'open')`;
