import { sql, type SQL } from 'drizzle-orm';
import { describeRobot } from '../channels/robot-identity.js';
import { carriedBy, MESSAGE_STATUS } from './lookups.js';
import type { Channel } from './message.js';
import { queryRows, type Db } from '../db/client.js';
import type { RobotVendor } from '../domain/robot-render.js';
import { CYCLE_WAIT_LIMIT_MS } from '../domain/schedule.js';

/**
 * Reading the ledger for `qwn deliveries` and `qwn redeliver`: each notification with the state
 * of the message that carries it (docs/messages.md). Plain queries over the store, no I/O of their
 * own beyond the database they are handed.
 */

/** A message's state as shown: `held` is a message still collecting (quiet hours, grouping). */
export const DELIVERY_STATUSES = ['held', 'pending', 'sent', 'retrying', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export function isDeliveryStatus(value: string): value is DeliveryStatus {
  return (DELIVERY_STATUSES as readonly string[]).includes(value);
}

/** The ledger's (and subscribers') ids are uuids; anything else cannot name a row. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isDeliveryId(value: string): boolean {
  return UUID.test(value);
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  /**
   * An email address (any case), a webhook URL exactly as subscribed, a subscriber's name (any
   * case: "was the Pudong desk told?"), a subscriber id, or a chat robot by its URL or as
   * listed (`host#fingerprint`).
   */
  subscriber?: string;
  /** Rows created at or after this time. */
  since?: Date;
  /** Rows created before this time. */
  until?: Date;
  /** Newest first, at most this many. */
  limit?: number;
}

export const DEFAULT_LIST_LIMIT = 50;

export interface DeliveryListing {
  /** The notification. */
  id: string;
  /** The message that carries it: the webhook-id and the email Message-ID. */
  messageId: string;
  /** Why the message waited: grouping, quiet hours or the hourly limit; null if it did not. */
  hold: string | null;
  createdAt: Date;
  status: DeliveryStatus;
  attempts: number;
  channel: Channel;
  /** A chat robot's vendor; null for email and webhook. */
  robotKind: RobotVendor | null;
  subscriberId: string;
  /**
   * The email address or webhook URL; a chat robot as `host#fingerprint` (`describeRobot`): its
   * URL is its credential and is never shown.
   */
  subscriber: string;
  subscriberActive: boolean;
  placeId: string;
  placeName: string | null;
  eventType: string;
  warningId: string;
  /** When the next attempt is due; null once the message is sent or dead. */
  nextAttemptAt: Date | null;
  lastError: string | null;
  sentAt: Date | null;
}

interface ListingRow {
  id: string;
  message_id: string;
  hold: string | null;
  created_at: Date | string;
  status: DeliveryStatus;
  attempts: number;
  channel: Channel;
  robot_kind: RobotVendor | null;
  robot_url: string | null;
  subscriber_id: string;
  subscriber: string | null;
  subscriber_active: boolean;
  place_id: string;
  place_name: string | null;
  event_type: string;
  warning_id: string;
  next_attempt_at: Date | string;
  last_error: string | null;
  sent_at: Date | string | null;
}

const toDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));

function toListing(row: ListingRow): DeliveryListing {
  const open = row.status === 'held' || row.status === 'pending' || row.status === 'retrying';
  return {
    id: row.id,
    messageId: row.message_id,
    hold: row.hold,
    createdAt: toDate(row.created_at),
    status: row.status,
    attempts: row.attempts,
    channel: row.channel,
    robotKind: row.robot_kind,
    subscriberId: row.subscriber_id,
    subscriber: row.robot_url !== null ? describeRobot(row.robot_url) : (row.subscriber ?? ''),
    subscriberActive: row.subscriber_active,
    placeId: row.place_id,
    placeName: row.place_name,
    eventType: row.event_type,
    warningId: row.warning_id,
    nextAttemptAt: open ? toDate(row.next_attempt_at) : null,
    lastError: row.last_error,
    sentAt: row.sent_at === null ? null : toDate(row.sent_at),
  };
}

/**
 * The status shown for notification `d` of message `m` (LEFT JOINed): `held` while the message
 * collects, whether in its row or, for a cycle's, still without one.
 */
export const SHOWN_STATUS = sql`CASE WHEN ${MESSAGE_STATUS} = 'open' THEN 'held'
  ELSE ${MESSAGE_STATUS} END`;

/**
 * A cycle message without its row collects until its cycle's end, 60 s after its first
 * notification at the latest (src/ledger/release.ts).
 */
const LISTING_COLUMNS = sql`
  d.id, d.message_id, coalesce(m.hold, 'cycle') AS hold, d.created_at,
  ${SHOWN_STATUS} AS status, coalesce(m.attempts, 0) AS attempts, d.channel,
  s.robot_kind, s.robot_url, d.subscriber_id, coalesce(s.email, s.webhook_url) AS subscriber,
  s.active AND s.unsubscribed_at IS NULL AS subscriber_active,
  d.place_id, p.name AS place_name, d.event_type, d.warning_id,
  coalesce(m.next_attempt_at,
    d.created_at + make_interval(secs => ${CYCLE_WAIT_LIMIT_MS / 1000})) AS next_attempt_at,
  m.last_error, m.sent_at`;

const LISTING_FROM = sql`
  FROM deliveries d
  LEFT JOIN messages m ON m.id = d.message_id
  JOIN subscribers s ON s.id = d.subscriber_id
  LEFT JOIN places p ON p.id = d.place_id`;

/** The message status a shown status stands for. */
export const storedStatus = (status: DeliveryStatus): string =>
  status === 'held' ? 'open' : status;

/** `robots`: the robot subscribers listed as `subscriber` (`robotsDescribedAs`). */
export function subscriberMatches(subscriber: string, robots: readonly string[]): SQL {
  const byId = isDeliveryId(subscriber) ? sql` OR s.id = ${subscriber}::uuid` : sql``;
  return sql`(lower(s.email) = lower(${subscriber}) OR s.webhook_url = ${subscriber}
              OR s.robot_url = ${subscriber} OR s.id = ANY(${sql.param([...robots])}::uuid[])
              OR lower(btrim(s.name)) = lower(${subscriber})${byId})`;
}

/** The ledger, newest first, narrowed by the filter. */
export async function listDeliveries(
  db: Db,
  filter: DeliveryFilter = {},
): Promise<DeliveryListing[]> {
  const conditions: SQL[] = [];
  if (filter.status) conditions.push(sql`${MESSAGE_STATUS} = ${storedStatus(filter.status)}`);
  if (filter.subscriber) {
    conditions.push(
      subscriberMatches(filter.subscriber, await robotsDescribedAs(db, filter.subscriber)),
    );
  }
  if (filter.since) conditions.push(sql`d.created_at >= ${filter.since.toISOString()}`);
  if (filter.until) conditions.push(sql`d.created_at < ${filter.until.toISOString()}`);
  const where = conditions.length > 0 ? sql`WHERE ${sql.join(conditions, sql` AND `)}` : sql``;
  const limit = filter.limit ?? DEFAULT_LIST_LIMIT;
  const rows = await queryRows<ListingRow>(
    db,
    sql`SELECT ${LISTING_COLUMNS} ${LISTING_FROM} ${where}
        ORDER BY d.created_at DESC, d.id
        LIMIT ${limit}`,
  );
  return rows.map(toListing);
}

/** Whether any subscriber is the one `--subscriber` names, the way `listDeliveries` matches. */
export async function subscriberKnown(db: Db, subscriber: string): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`SELECT s.id FROM subscribers s
        WHERE ${subscriberMatches(subscriber, await robotsDescribedAs(db, subscriber))} LIMIT 1`,
  );
  return rows.length > 0;
}

/** Robot subscribers listed as `text` (`host#fingerprint`); the fingerprint is computed here. */
export async function robotsDescribedAs(db: Db, text: string): Promise<string[]> {
  if (!/#[0-9a-f]{8}$/i.test(text)) return [];
  const robots = await queryRows<{ id: string; robot_url: string }>(
    db,
    sql`SELECT id, robot_url FROM subscribers WHERE robot_url IS NOT NULL`,
  );
  return robots
    .filter((r) => describeRobot(r.robot_url).toLowerCase() === text.toLowerCase())
    .map((r) => r.id);
}

/**
 * The notifications of these messages, in the order asked (a message's own notifications by
 * time); unknown ids are left out.
 */
export async function getDeliveries(db: Db, ids: readonly string[]): Promise<DeliveryListing[]> {
  const valid = ids.filter(isDeliveryId);
  if (valid.length === 0) return [];
  const rows = await queryRows<ListingRow>(
    db,
    sql`SELECT ${LISTING_COLUMNS} ${LISTING_FROM}
        WHERE ${carriedBy(sql`${sql.param(valid)}::uuid[]`)}
        ORDER BY d.created_at, d.id`,
  );
  const byMessage = new Map<string, DeliveryListing[]>();
  for (const row of rows) {
    const list = byMessage.get(row.message_id) ?? [];
    list.push(toListing(row));
    byMessage.set(row.message_id, list);
  }
  return valid.flatMap((id) => byMessage.get(id.toLowerCase()) ?? []);
}

/** `text` on one line, at most `max` characters, with an ellipsis when it was longer. */
export function cutShort(text: string | null, max: number): string {
  if (!text) return '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1))}…`;
}
