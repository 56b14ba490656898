/**
 * The simulator's Weather Alert v1 route (`/weatheralert/v1/current/{lat}/{lon}`) and the area
 * alerts it answers from: one alert id at every point of its area, as the real service does.
 */
import { createHash } from 'node:crypto';
import type { Body } from './geo-routes.js';
import { englishV1, served } from './english.js';
import { GeoIndex, haversineKm, nameLang } from './geo.js';
import { ApiError, LANG, type Params } from './http.js';
import {
  SimulatorInputError,
  applyV1Quirks,
  utcTime,
  validateArea,
  type Quirk,
  type V1AlertRecord,
  type V1AreaAlert,
} from './records.js';

const V1_ATTRIBUTIONS = ['https://developer.qweather.com/attribution.html'];
const CANCEL_VISIBLE_MS = 3_600_000;
const V1_TIME_FIELDS = ['issuedTime', 'effectiveTime', 'onsetTime', 'expireTime', 'expiredTime'];
const V1_LAT = /^-?\d{1,2}(\.\d{1,2})?$/;
const V1_LON = /^-?\d{1,3}(\.\d{1,2})?$/;

/** Both ends of the 2-decimal rounding of a coordinate, in hundredths. */
export function hundredths(value: number): number[] {
  const scaled = value * 100;
  const low = Math.floor(scaled + 1e-9);
  const high = Math.ceil(scaled - 1e-9);
  return low === high ? [low] : [low, high];
}

interface AlertIndex {
  readonly circles: ReadonlyArray<{
    alert: V1AlertRecord;
    lat: number;
    lon: number;
    radiusKm: number;
  }>;
  /** "latHundredths,lonHundredths" of listed locations → alerts covering them. */
  readonly cells: ReadonlyMap<string, V1AlertRecord[]>;
  readonly order: ReadonlyMap<string, number>;
}

function messageTypeOf(alert: V1AlertRecord): { code: string; supersedes: string[] } {
  const mt = alert.messageType as { code?: unknown; supersedes?: unknown } | undefined;
  const supersedes = Array.isArray(mt?.supersedes)
    ? mt.supersedes.filter((s): s is string => typeof s === 'string')
    : [];
  return { code: typeof mt?.code === 'string' ? mt.code : 'alert', supersedes };
}

/** The v1 area alerts in force, indexed by where they apply. */
export class AlertBoard {
  private current: readonly V1AreaAlert[] = [];
  private index: AlertIndex = { circles: [], cells: new Map(), order: new Map() };
  private hidden = new Set<string>();
  private cancelSeenAt = new Map<string, number>();

  constructor(private readonly geo: GeoIndex) {}

  get alerts(): readonly V1AreaAlert[] {
    return this.current;
  }

  /** Replaces the alerts; a cancel message keeps the time it first appeared. */
  set(next: readonly V1AreaAlert[], nowMs: number): void {
    for (const a of next) {
      validateArea(a.area);
      if (!a.alert || typeof a.alert.id !== 'string') {
        throw new SimulatorInputError('alert: every area alert needs an alert record with an id');
      }
    }
    this.current = [...next];
    const circles: Array<{ alert: V1AlertRecord; lat: number; lon: number; radiusKm: number }> = [];
    const cells = new Map<string, V1AlertRecord[]>();
    const order = new Map<string, number>();
    const hidden = new Set<string>();

    const seen = new Map<string, number>();
    this.current.forEach(({ area, alert }, i) => {
      order.set(alert.id, i);
      const mt = messageTypeOf(alert);
      // After an update B of A, A is no longer returned (facts note).
      for (const id of mt.supersedes) hidden.add(id);
      if (mt.code === 'cancel') seen.set(alert.id, this.cancelSeenAt.get(alert.id) ?? nowMs);
      if ('locationIds' in area) {
        for (const id of area.locationIds) {
          const place = this.geo.place(id);
          if (!place) continue;
          for (const lat of hundredths(place.lat)) {
            for (const lon of hundredths(place.lon)) {
              const key = `${lat},${lon}`;
              const list = cells.get(key);
              if (!list) cells.set(key, [alert]);
              else if (!list.includes(alert)) list.push(alert);
            }
          }
        }
      } else {
        circles.push({ alert, lat: area.lat, lon: area.lon, radiusKm: area.radiusKm });
      }
    });
    this.index = { circles, cells, order };
    this.hidden = hidden;
    this.cancelSeenAt = seen;
  }

  /** The alerts answered at a point, in the order they were set. */
  at(lat: number, lon: number, nowMs: number): V1AlertRecord[] {
    const found = new Set<V1AlertRecord>();
    const cell = this.index.cells.get(`${Math.round(lat * 100)},${Math.round(lon * 100)}`);
    if (cell) for (const alert of cell) found.add(alert);
    for (const c of this.index.circles) {
      if (haversineKm(lat, lon, c.lat, c.lon) <= c.radiusKm) found.add(c.alert);
    }
    return [...found]
      .filter((alert) => {
        if (this.hidden.has(alert.id)) return false;
        const seen = this.cancelSeenAt.get(alert.id);
        // A cancel message stays visible about one hour (facts note).
        return seen === undefined || nowMs - seen < CANCEL_VISIBLE_MS;
      })
      .sort((a, b) => (this.index.order.get(a.id) ?? 0) - (this.index.order.get(b.id) ?? 0));
  }
}

/** The v1 answer at a point: validates the path and query as the real API does. */
export function weatherAlertBody(
  found: (lat: number, lon: number) => V1AlertRecord[],
  latText: string,
  lonText: string,
  q: Params,
  quirks: readonly Quirk[],
  /** The English name of the place nearest a point, for answers in English. */
  englishNameAt: (lat: number, lon: number) => string | undefined = () => undefined,
): Body {
  const invalid: string[] = [];
  const lat = Number(latText);
  const lon = Number(lonText);
  if (!V1_LAT.test(latText) || Math.abs(lat) > 90) invalid.push('latitude');
  if (!V1_LON.test(lonText) || Math.abs(lon) > 180) invalid.push('longitude');
  const localTime = q.get('localTime') ?? 'false';
  if (localTime !== 'true' && localTime !== 'false') invalid.push('localTime');
  const lang = q.get('lang');
  if (lang !== null && !LANG.test(lang)) invalid.push('lang');
  if (invalid.length > 0) {
    throw new ApiError(400, `invalid ${invalid.join(', ')}`, invalid);
  }
  const alerts = found(lat, lon);
  const tag = createHash('sha256')
    .update(alerts.map((a) => `${a.id}|${JSON.stringify(a.issuedTime)}`).join('\n'))
    .digest('hex')
    .slice(0, 32);
  const english = nameLang(lang) === 'en';
  const placeName = english ? englishNameAt(lat, lon) : undefined;
  const records = alerts.map((alert) => {
    const localized = english ? englishV1(alert, placeName) : served(alert);
    const out: Record<string, unknown> = { ...applyV1Quirks(localized, quirks) };
    if (localTime === 'false') {
      for (const field of V1_TIME_FIELDS) {
        const value = out[field];
        if (typeof value !== 'string' || value === '') continue;
        const date = new Date(value);
        if (!Number.isNaN(date.getTime())) out[field] = utcTime(date);
      }
    }
    return out;
  });
  return {
    metadata: { tag, zeroResult: records.length === 0, attributions: V1_ATTRIBUTIONS },
    alerts: records,
  };
}
