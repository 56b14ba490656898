import { sql, type SQL } from 'drizzle-orm';
import { queryPrepared } from '../db/client.js';
import type { TrackedState } from '../domain/detect.js';
import { subscriptionPointKeys, type Point, type V1PointsMode } from '../domain/points.js';
import {
  KNOWN_SUBSCRIBER_COLUMNS,
  SUBSCRIBER_DELIVERY_COLUMNS,
  SUBSCRIBER_RECEIVES,
} from '../ledger/index.js';
import type { Tx } from '../db/client.js';
import { subscriberWarning, type Watcher } from './check-subject.js';

/**
 * Who watches a v1 point (src/detection/point-subject.ts): the active subscriptions that store the
 * point or whose place rounds to it, and, for an alert's end, its states at the other points
 * each subscriber watches (`expiryOwedToSubscriber`).
 */

/** A subscription at a point, with what its notification needs of its subscriber. */
export interface PointSubscriptionRow extends Watcher {
  points: string[] | null;
  country: string | null;
  lat: number | null;
  lon: number | null;
}

/**
 * The statement of `subscriptionsAt`: the active subscriptions that may watch `point`, through
 * stored points or their place's coordinates. Exported for the test that holds it to index
 * lookups (test/db/v1-check-plans.int.test.ts).
 */
export function subscriptionsNear(point: Point): SQL {
  // Each way of watching the point is a branch of its own, found through its own index: one OR
  // across the two tables read every subscription joined to its place (16 ms a check for
  // 100,000 subscriptions, most of a v1 storm's Postgres time), and ids collected first then
  // read again by key took four times what the branches take (2.5 against 0.65 ms at Beijing).
  // A subscription that stores the point is the first branch's, whatever its place.
  const columns = sql`s.subscriber_id, s.place_id, s.min_level, s.types, s.events, s.points,
    p.country, p.lat, p.lon, ${SUBSCRIBER_DELIVERY_COLUMNS}, ${KNOWN_SUBSCRIBER_COLUMNS}`;
  const stores = sql`s.points @> ARRAY[${point.key}]::text[]`;
  return sql`SELECT ${columns}
    FROM subscriptions s
    JOIN subscribers u ON u.id = s.subscriber_id
    LEFT JOIN places p ON p.id = s.place_id
    WHERE ${SUBSCRIBER_RECEIVES} AND ${stores}
    UNION ALL
    SELECT ${columns}
    FROM places p
    JOIN subscriptions s ON s.place_id = p.id
    JOIN subscribers u ON u.id = s.subscriber_id
    WHERE ${SUBSCRIBER_RECEIVES}
      AND p.lat BETWEEN ${point.lat - 0.01} AND ${point.lat + 0.01}
      AND p.lon BETWEEN ${point.lon - 0.01} AND ${point.lon + 0.01}
      AND NOT coalesce(${stores}, false)
    ORDER BY subscriber_id, place_id`;
}

/**
 * Whether a row `subscriptionsNear` found watches `point`: coordinates are rounded in JS (as the
 * client rounds them), the statement only narrows the candidates.
 */
export function watchesPoint(
  row: Pick<PointSubscriptionRow, 'points' | 'country' | 'lat' | 'lon'>,
  point: Point,
  mode: V1PointsMode,
): boolean {
  return subscriptionPointKeys(row, row.points, mode).includes(point.key);
}

/** Active subscriptions that watch this point, through stored points or their place. */
export async function subscriptionsAt(
  tx: Tx,
  point: Point,
  mode: V1PointsMode,
): Promise<PointSubscriptionRow[]> {
  const rows = await queryPrepared<PointSubscriptionRow>(tx, subscriptionsNear(point));
  return rows.filter((row) => watchesPoint(row, point, mode));
}

/**
 * For each subscriber and alert, as `subscriber\0alert`: the alert's states at the other points
 * the subscriber watches.
 */
export async function statesElsewhere(
  tx: Tx,
  point: Point,
  alertIds: readonly string[],
  subscriberIds: readonly string[],
  mode: V1PointsMode,
): Promise<Map<string, TrackedState[]>> {
  const result = new Map<string, TrackedState[]>();
  if (subscriberIds.length === 0 || alertIds.length === 0) return result;
  const watched = await queryPrepared<{
    subscriber_id: string;
    place_id: string;
    points: string[] | null;
    country: string | null;
    lat: number | null;
    lon: number | null;
  }>(
    tx,
    sql`SELECT s.subscriber_id, s.place_id, s.points, p.country, p.lat, p.lon
        FROM subscriptions s LEFT JOIN places p ON p.id = s.place_id
        WHERE s.subscriber_id = ANY(${sql.param([...subscriberIds])}::uuid[])`,
  );
  const others = new Map<string, Set<string>>();
  for (const row of watched) {
    const keys = others.get(row.subscriber_id) ?? new Set<string>();
    for (const key of subscriptionPointKeys(row, row.points, mode))
      if (key !== point.key) keys.add(key);
    others.set(row.subscriber_id, keys);
  }
  const allKeys = [...new Set([...others.values()].flatMap((keys) => [...keys]))];
  const states =
    allKeys.length === 0
      ? []
      : await queryPrepared<{ place_id: string; warning_id: string; state: TrackedState }>(
          tx,
          sql`SELECT place_id, warning_id, state FROM warnings
              WHERE warning_id = ANY(${sql.param([...alertIds])}::text[])
                AND place_id = ANY(${sql.param(allKeys)}::text[])`,
        );
  const stateAt = new Map(states.map((s) => [`${s.place_id}\u0000${s.warning_id}`, s.state]));
  for (const id of subscriberIds) {
    const keys = [...(others.get(id) ?? [])];
    for (const alertId of alertIds) {
      result.set(
        subscriberWarning(id, alertId),
        keys.flatMap((key) => {
          const state = stateAt.get(`${key}\u0000${alertId}`);
          return state ? [state] : [];
        }),
      );
    }
  }
  return result;
}
