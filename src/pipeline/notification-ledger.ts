import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { EventType } from '../domain/detect.js';
import type { SubscriptionFilter } from '../domain/filters.js';
import { parseLevel } from '../domain/warning.js';
import type { Channel } from './deliver.js';
import type { Tx } from './warning-store.js';

/**
 * The notification ledger's writes that both checks share: one row per (subscriber, warning
 * id, event type) that a subscriber's filters let through (DESIGN invariant 2).
 */

/** A delivery row just created, and the job that will carry its first attempt. */
export interface CreatedDelivery {
  id: string;
  channel: Channel;
  firstJobId: string | null;
}

export interface SubscriptionRow {
  subscriber_id: string;
  channel: 'email' | 'webhook';
  min_level: string | null;
  types: string[] | null;
  events: EventType[] | null;
}

export function toFilter(row: SubscriptionRow): SubscriptionFilter {
  return {
    minLevel: parseLevel(row.min_level) ?? null,
    types: row.types,
    events: row.events,
  };
}

/** A delivery row a check owes, before it is inserted. */
export interface NewDelivery {
  subscriberId: string;
  eventId: number;
  cycleId: string;
  placeId: string;
  warningId: string;
  eventType: EventType;
  channel: Channel;
  nextAttemptAt: Date;
  firstJobId: string;
}

/** Bounded statements: one national storm can owe thousands of rows to one place. */
const DELIVERY_INSERT_CHUNK = 5000;

/**
 * Inserts delivery rows, skipping those that exist (DESIGN invariant 2), as one column array
 * per field: a statement of nine parameters, not nine per row, which a storm's checks spent
 * most of their time building and Postgres parsing.
 */
export async function insertDeliveries(
  tx: Tx,
  rows: readonly NewDelivery[],
): Promise<CreatedDelivery[]> {
  const created: CreatedDelivery[] = [];
  for (let i = 0; i < rows.length; i += DELIVERY_INSERT_CHUNK) {
    const chunk = rows.slice(i, i + DELIVERY_INSERT_CHUNK);
    const column = <T>(pick: (r: NewDelivery) => T) => sql.param(chunk.map(pick));
    const inserted = await queryRows<{ id: string; channel: Channel; first_job_id: string | null }>(
      tx,
      sql`INSERT INTO deliveries (subscriber_id, event_id, cycle_id, place_id, warning_id,
            event_type, channel, next_attempt_at, first_job_id)
          SELECT * FROM unnest(${column((r) => r.subscriberId)}::uuid[],
            ${column((r) => r.eventId)}::bigint[], ${column((r) => r.cycleId)}::uuid[],
            ${column((r) => r.placeId)}::text[], ${column((r) => r.warningId)}::text[],
            ${column((r) => r.eventType)}::text[], ${column((r) => r.channel)}::text[],
            ${column((r) => r.nextAttemptAt.toISOString())}::timestamptz[],
            ${column((r) => r.firstJobId)}::text[])
          ON CONFLICT DO NOTHING
          RETURNING id, channel, first_job_id`,
    );
    for (const r of inserted) {
      created.push({ id: r.id, channel: r.channel, firstJobId: r.first_job_id });
    }
  }
  return created;
}
