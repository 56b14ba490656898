/**
 * The real service answers Weather Alert v1 from the same warnings v7 served, under other ids.
 * So does the simulator: a v7 warning of a place is also a v1 alert at the place's point (its
 * coordinates rounded to two decimals, either way), with its own id, links translated to those
 * ids, and an issue time a few minutes off, as the two APIs report one warning.
 */
import { createHash } from 'node:crypto';
import { hundredths } from './alert-routes.js';
import type { GeoIndex } from './geo.js';
import { v1Alert, type V1AlertRecord, type V7WarningRecord } from './records.js';

/** The v1 id the simulator gives a v7 warning: stable, and unlike any v7 id. */
export function v1IdOf(v7Id: string): string {
  return `V1${createHash('sha256').update(v7Id).digest('hex').slice(0, 18).toUpperCase()}`;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

/** Minutes the v1 issue time is off from v7's: 0-9, fixed per warning. */
function issueSkewMs(v7Id: string): number {
  return (createHash('sha256').update(`skew/${v7Id}`).digest()[0]! % 10) * 60_000;
}

/** The v1 record of one v7 warning; undefined when the record lacks what v1 needs. */
export function v1FromV7(record: V7WarningRecord, locationId: string): V1AlertRecord | undefined {
  const pubTime = text(record.pubTime);
  const level = text(record.level) ?? text(record.severityColor);
  const typeCode = text(record.type);
  const typeName = text(record.typeName);
  if (!pubTime || !level || (!typeCode && !typeName)) return undefined;
  const issued = new Date(Date.parse(pubTime) + issueSkewMs(record.id));
  if (Number.isNaN(issued.getTime())) return undefined;
  const status = text(record.status);
  const related = text(record.related);
  try {
    return v1Alert({
      area: { locationIds: [locationId] },
      id: v1IdOf(record.id),
      level,
      ...(typeCode ? { typeCode } : {}),
      ...(typeName ? { typeName } : {}),
      messageType: status === 'update' ? 'update' : status === 'cancel' ? 'cancel' : 'alert',
      supersedes: related ? [v1IdOf(related)] : [],
      issuedTime: issued,
      onsetTime: text(record.startTime) ?? issued,
      ...(text(record.endTime) ? { expireTime: text(record.endTime)! } : {}),
      ...(text(record.sender) ? { senderName: text(record.sender)! } : {}),
      ...(text(record.title) ? { headline: text(record.title)! } : {}),
      ...(text(record.text) ? { description: text(record.text)! } : {}),
    }).alert;
  } catch {
    // A raw record v1 could not express (an unknown level): v1 leaves it out.
    return undefined;
  }
}

/** The v1 alerts at a point that mirror the v7 warnings of the places there. */
export class V7InV1 {
  private cells: Map<string, string[]> | null = null;

  constructor(private readonly geo: GeoIndex) {}

  /** Call when the v7 warnings change. */
  invalidate(): void {
    this.cells = null;
  }

  at(lat: number, lon: number, warnings: ReadonlyMap<string, readonly V7WarningRecord[]>) {
    this.cells ??= this.index(warnings);
    const ids = this.cells.get(`${Math.round(lat * 100)},${Math.round(lon * 100)}`) ?? [];
    const found = new Map<string, V1AlertRecord>();
    for (const locationId of ids) {
      for (const record of warnings.get(locationId) ?? []) {
        const alert = v1FromV7(record, locationId);
        if (alert) found.set(alert.id, alert);
      }
    }
    // After an update B of A, A is no longer returned (facts note).
    const replaced = new Set<string>();
    for (const alert of found.values()) {
      const supersedes = (alert.messageType as { supersedes?: unknown } | undefined)?.supersedes;
      if (Array.isArray(supersedes)) for (const id of supersedes) replaced.add(String(id));
    }
    return [...found.values()].filter((alert) => !replaced.has(alert.id));
  }

  private index(warnings: ReadonlyMap<string, readonly V7WarningRecord[]>) {
    const cells = new Map<string, string[]>();
    for (const locationId of warnings.keys()) {
      const place = this.geo.place(locationId);
      if (!place) continue;
      for (const lat of hundredths(place.lat)) {
        for (const lon of hundredths(place.lon)) {
          const key = `${lat},${lon}`;
          const list = cells.get(key);
          if (!list) cells.set(key, [locationId]);
          else if (!list.includes(locationId)) list.push(locationId);
        }
      }
    }
    return cells;
  }
}
