/**
 * Watched points of the v1 alert source. The Weather Alert v1 API takes coordinates with at most
 * two decimals (about 1 km), so every subscription is reduced to such points, and one point is
 * shared by everyone there: a thousand subscribers in one district cost one call per cycle.
 * Pure: no I/O.
 */
import type { TrackedState } from './detect.js';

export interface Point {
  readonly lat: number;
  readonly lon: number;
  /** "lat,lon", latitude first as in the v1 path: "30.27,120.16". Also the store's point id. */
  readonly key: string;
}

/**
 * Two decimals, rounded exactly as the QWeather client rounds a v1 path (`roundCoordinate` in
 * src/qweather/params.ts), so the point stored is the point asked about. -0 becomes 0.
 */
export function roundCoordinate(value: number): number {
  const rounded = Math.round(value * 100) / 100;
  return rounded === 0 ? 0 : rounded;
}

/** The point covering a coordinate pair; null when either is not a finite, in-range number. */
export function pointAt(lat: number, lon: number): Point | null {
  if (!Number.isFinite(lat) || !Number.isFinite(lon)) return null;
  if (Math.abs(lat) > 90 || Math.abs(lon) > 180) return null;
  const rLat = roundCoordinate(lat);
  const rLon = roundCoordinate(lon);
  return { lat: rLat, lon: rLon, key: `${rLat},${rLon}` };
}

/** A point key as `pointAt` writes it: "lat,lon", at most two decimals each. */
const POINT_KEY_PATTERN = /^-?\d{1,2}(\.\d{1,2})?,-?\d{1,3}(\.\d{1,2})?$/;

/** The point a key names; null unless the key is exactly what `pointAt` would write. */
export function parsePointKey(key: string): Point | null {
  if (!POINT_KEY_PATTERN.test(key)) return null;
  const [lat, lon] = key.split(',').map(Number);
  if (lat === undefined || lon === undefined) return null;
  const point = pointAt(lat, lon);
  return point?.key === key ? point : null;
}

/**
 * How subscriptions become points (`V1_POINTS`). `exact`: the points stored with a subscription
 * (from `lon,lat` entries), else its place's coordinates. `place`: a subscription in China is
 * polled at its place's own coordinates even when it was seeded with exact ones, so the calls a
 * cycle makes are bounded by the watched places (a county's centre stands for the county, as a
 * v7 Location ID did); abroad, where places can be far apart, the exact points stay.
 */
export type V1PointsMode = 'exact' | 'place';

export interface PointPlace {
  readonly lat: number | null;
  readonly lon: number | null;
  /** The place's Location ID and country, to tell a place in China (V1_POINTS=place). */
  readonly place_id?: string | null;
  readonly country?: string | null;
}

/** China's QWeather Location IDs are 9 digits beginning 101; the country field says it too. */
export function isPlaceInChina(place: PointPlace): boolean {
  const country = place.country?.trim().toLowerCase();
  if (country) return country === '中国' || country === 'china' || country === 'cn';
  return /^101\d{6}$/.test(place.place_id ?? '');
}

function placePoint(place: PointPlace | null): string[] {
  if (place?.lat == null || place.lon == null) return [];
  const point = pointAt(place.lat, place.lon);
  return point ? [point.key] : [];
}

/**
 * The points one subscription watches (see `V1PointsMode`); none when it has no stored points
 * and its place has no coordinates (v7-only data).
 */
export function subscriptionPointKeys(
  place: PointPlace | null,
  points: readonly string[] | null,
  mode: V1PointsMode = 'exact',
): string[] {
  if (mode === 'place' && place && isPlaceInChina(place)) {
    const centre = placePoint(place);
    if (centre.length > 0) return centre;
  }
  if (points !== null) {
    return [...new Set(points.filter((key) => parsePointKey(key) !== null))].sort();
  }
  return placePoint(place);
}

/**
 * The rule for an alert that ended at one of a subscriber's points while the subscriber watches
 * others. v1 returns one alert id at every point of its area, and an area can shrink: the id
 * leaving one point's answer does not end it for someone who still sees it elsewhere. The
 * subscriber is owed `expired` only when, at every other point they watch, the alert is not open
 * (still in force there: the `expired` comes from that point when it ends there) and not closed
 * by a link (superseded or cancelled there: the update or cancel told the story, and a warning
 * closed by its chain is never reported as expired — docs/design.md invariant 4). Unknown at a point
 * (never seen there) or expired there counts as ended.
 */
export function expiryOwedToSubscriber(statesAtOtherPoints: readonly TrackedState[]): boolean {
  return statesAtOtherPoints.every((state) => state === 'expired');
}
