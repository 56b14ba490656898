import { channelOfAddress, type Channel } from '../channels/kinds.js';
import { sql } from 'drizzle-orm';
import { describeRobot } from '../channels/robot-identity.js';
import { queryRows, type Db } from '../db/client.js';

/** Subscribers that are sent email: active, not unsubscribed, with an address. */
export async function countEmailSubscribers(db: Db): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM subscribers
        WHERE email IS NOT NULL AND active AND unsubscribed_at IS NULL`,
  );
  return row?.n ?? 0;
}

export type SubscriberState = 'active' | 'unsubscribed' | 'disabled' | 'paused';

/** One subscriber as `qwn subscribers` shows it. Robot URLs are credentials: never listed. */
export interface SubscriberListing {
  id: string;
  name: string | null;
  channel: Channel;
  /** The email address, the webhook URL, or a robot as vendor host#fingerprint. */
  address: string;
  lang: string;
  state: SubscriberState;
  /** Why it is not active: the unsubscribe time, the reason it was disabled. */
  stateDetail: string | null;
  places: {
    id: string;
    name: string;
    minLevel: string | null;
    types: string[] | null;
    events: string[] | null;
  }[];
}

interface Row {
  id: string;
  name: string | null;
  email: string | null;
  webhook_url: string | null;
  robot_kind: string | null;
  robot_url: string | null;
  lang: string;
  active: boolean;
  disabled_reason: string | null;
  unsubscribed_at: Date | string | null;
  places: SubscriberListing['places'];
}

/** Every subscriber with its places and filters, by name then address. */
export async function listSubscribers(db: Db): Promise<SubscriberListing[]> {
  const rows = await queryRows<Row>(
    db,
    sql`SELECT u.id, u.name, u.email, u.webhook_url, u.robot_kind, u.robot_url, u.lang, u.active,
          u.disabled_reason, u.unsubscribed_at,
          coalesce(json_agg(json_build_object('id', p.id, 'name', p.name,
              'minLevel', s.min_level, 'types', s.types, 'events', s.events)
            ORDER BY p.name, p.id) FILTER (WHERE p.id IS NOT NULL), '[]') AS places
        FROM subscribers u
        LEFT JOIN subscriptions s ON s.subscriber_id = u.id
        LEFT JOIN places p ON p.id = s.place_id
        GROUP BY u.id
        ORDER BY u.name NULLS LAST, lower(coalesce(u.email, u.webhook_url, u.robot_url)), u.id`,
  );
  return rows.map((r) => {
    const state: SubscriberState =
      r.unsubscribed_at !== null
        ? 'unsubscribed'
        : r.disabled_reason !== null
          ? 'disabled'
          : r.active
            ? 'active'
            : 'paused';
    return {
      id: r.id,
      name: r.name,
      channel: channelOfAddress(r),
      address:
        r.email ??
        r.webhook_url ??
        `${r.robot_kind ?? 'robot'} ${describeRobot(r.robot_url ?? '')}`,
      lang: r.lang,
      state,
      stateDetail:
        state === 'unsubscribed'
          ? `since ${new Date(r.unsubscribed_at!).toISOString()}`
          : state === 'disabled'
            ? r.disabled_reason
            : null,
      places: r.places,
    };
  });
}
