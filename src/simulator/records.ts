import { parseLevel, type KnownLevel } from '../domain/warning.js';
import { WARNING_TYPES } from '../domain/warning-types.js';
import { BUILTIN_PLACE_ROWS, type PlaceRow } from './places.js';

/**
 * Builders for upstream records that look like QWeather's own (v7 warnings, v1 alerts), and the
 * "sample quirks" the real API shows, applied on demand.
 */

export class SimulatorInputError extends Error {
  override name = 'SimulatorInputError';
}

/** A v7 warning record exactly as it goes on the wire (all values strings). */
export interface V7WarningRecord {
  readonly id: string;
  readonly [field: string]: unknown;
}

export type AlertArea =
  | { readonly lat: number; readonly lon: number; readonly radiusKm: number }
  | { readonly locationIds: readonly string[] };

/** A v1 alert record as it goes on the wire. */
export interface V1AlertRecord {
  readonly id: string;
  readonly [field: string]: unknown;
}

/** A v1 alert and the area where it is returned: every point inside gets the same alert id. */
export interface V1AreaAlert {
  readonly area: AlertArea;
  readonly alert: V1AlertRecord;
}

/** Deviations seen in QWeather's samples and in the field. */
export const RECORD_QUIRKS = [
  'typeNameInType',
  'localizedStatus',
  'noSender',
  'noTypeName',
  'noRelated',
  'emptyStartTime',
  'severityOnly',
] as const;
export const V1_QUIRKS = ['expiredTime', 'nullSupersedes'] as const;
export const RESPONSE_QUIRKS = ['statusKey', 'cnty'] as const;
export type RecordQuirk = (typeof RECORD_QUIRKS)[number];
export type V1Quirk = (typeof V1_QUIRKS)[number];
export type Quirk = RecordQuirk | V1Quirk | (typeof RESPONSE_QUIRKS)[number];
export const ALL_QUIRKS: readonly Quirk[] = [...RECORD_QUIRKS, ...V1_QUIRKS, ...RESPONSE_QUIRKS];

/** Type names by code (QWeather's list); any other code is served with the name it was given. */
export const TYPE_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  WARNING_TYPES.map((t) => [t.code, t.zh]),
);
const TYPE_CODES = new Map(Object.entries(TYPE_NAMES).map(([code, name]) => [name, code]));

interface LevelStyle {
  readonly severity: string;
  readonly color: string;
  readonly grade: string;
  readonly rgb: readonly [number, number, number];
}

const LEVEL_STYLES: Record<KnownLevel, LevelStyle> = {
  白色: { severity: 'Minor', color: 'White', grade: '', rgb: [255, 255, 255] },
  蓝色: { severity: 'Minor', color: 'Blue', grade: 'Ⅳ级/一般', rgb: [30, 50, 205] },
  黄色: { severity: 'Moderate', color: 'Yellow', grade: 'Ⅲ级/较重', rgb: [255, 215, 0] },
  橙色: { severity: 'Severe', color: 'Orange', grade: 'Ⅱ级/严重', rgb: [255, 140, 0] },
  红色: { severity: 'Extreme', color: 'Red', grade: 'Ⅰ级/特别严重', rgb: [220, 20, 60] },
};

export type WarningStatusText = 'active' | 'update' | 'cancel';
const LOCALIZED_STATUS: Record<string, string> = {
  active: '预警中',
  update: '更新',
  cancel: '取消',
};

const builtinById = new Map(BUILTIN_PLACE_ROWS.map((p) => [p.id, p]));

/** "yyyy-MM-ddTHH:mm+08:00": China time, the way QWeather writes v7 times. */
export function chinaTime(at: Date): string {
  return `${new Date(at.getTime() + 8 * 3_600_000).toISOString().slice(0, 16)}+08:00`;
}

/** "yyyy-MM-ddTHH:mmZ": UTC, as v1 writes times unless `localTime=true`. */
export function utcTime(at: Date): string {
  return `${at.toISOString().slice(0, 16)}Z`;
}

function toDate(value: string | Date, what: string): Date {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new SimulatorInputError(`${what}: not a time: ${String(value)}`);
  return date;
}

function stamp(at: Date): string {
  return chinaTime(at).slice(0, 16).replace(/[-T:]/g, '');
}

function levelOf(level: string | undefined): KnownLevel {
  const known = parseLevel(level);
  if (!known)
    throw new SimulatorInputError(
      `level: expected 白色/蓝色/黄色/橙色/红色 or a colour name, got "${level}"`,
    );
  return known;
}

function resolveType(
  typeCode: string | undefined,
  typeName: string | undefined,
): { code: string; name: string } {
  if (typeCode) return { code: typeCode, name: typeName ?? TYPE_NAMES[typeCode] ?? typeCode };
  if (typeName) return { code: TYPE_CODES.get(typeName) ?? typeName, name: typeName };
  throw new SimulatorInputError('typeCode or typeName is required');
}

/** The observatory that issues a place's warnings, e.g. 杭州市气象台, 北京市朝阳区气象台. */
export function senderFor(
  place: Pick<PlaceRow, 'name' | 'adm2' | 'iso'> | undefined,
  fallback: string,
): string {
  if (!place) return `${fallback}气象台`;
  if (place.iso === 'HK') return '香港天文台';
  const bareAdm2 = place.adm2.replace(/市$/, '');
  if (place.name === bareAdm2 || place.name === place.adm2)
    return `${place.adm2.endsWith('市') ? place.adm2 : `${place.adm2}市`}气象台`;
  const suffix = /[区县市旗]$/.test(place.name) ? '' : '区';
  return `${place.adm2}${place.name}${suffix}气象台`;
}

export interface V7WarningOptions {
  readonly locationId: string;
  /** Sequence within the timestamp; part of the id (default 1). */
  readonly seq?: number;
  /** Explicit id instead of Location ID + timestamp + sequence. */
  readonly id?: string;
  readonly typeCode?: string;
  readonly typeName?: string;
  readonly level: string;
  readonly status?: WarningStatusText;
  readonly related?: string;
  readonly pubTime?: string | Date;
  readonly startTime?: string | Date | null;
  readonly endTime?: string | Date | null;
  readonly title?: string;
  readonly text?: string;
  readonly sender?: string;
  /** For naming the sender when the place is not in the built-in table. */
  readonly place?: Pick<PlaceRow, 'name' | 'adm2' | 'iso'>;
  readonly quirks?: readonly RecordQuirk[];
}

/**
 * A v7 warning record like the real ones: id = 9-digit Location ID + yyyyMMddHHmm (China time)
 * + a 5-digit sequence, a title such as "杭州市气象台发布暴雨橙色预警[Ⅱ级/严重]", both the old
 * `level` and the newer `severity`/`severityColor` filled (quirks remove either).
 */
export function v7Warning(o: V7WarningOptions): V7WarningRecord {
  const level = levelOf(o.level);
  const style = LEVEL_STYLES[level];
  const type = resolveType(o.typeCode, o.typeName);
  const status = o.status ?? 'active';
  const pub = toDate(o.pubTime ?? new Date(Math.floor(Date.now() / 60_000) * 60_000), 'pubTime');
  const start = o.startTime === null ? '' : chinaTime(toDate(o.startTime ?? pub, 'startTime'));
  const end =
    o.endTime === null
      ? ''
      : chinaTime(toDate(o.endTime ?? new Date(pub.getTime() + 24 * 3_600_000), 'endTime'));
  const seq = o.seq ?? 1;
  if (!Number.isInteger(seq) || seq < 0 || seq > 99_999) {
    throw new SimulatorInputError(`seq: expected a whole number 0-99999, got ${seq}`);
  }
  const place = o.place ?? builtinById.get(o.locationId);
  const sender = o.sender ?? senderFor(place, o.locationId);
  const verb = status === 'cancel' ? '解除' : status === 'update' ? '更新' : '发布';
  const grade = style.grade && status !== 'cancel' ? `[${style.grade}]` : '';
  const title = o.title ?? `${sender}${verb}${type.name}${level}预警${grade}`;
  const pubText = chinaTime(pub).replace(
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}).*$/,
    '$1年$2月$3日$4时$5分',
  );
  const text =
    o.text ??
    (status === 'cancel'
      ? `${sender}${pubText}解除${type.name}${level}预警信号。`
      : `${sender}${pubText}${verb}${type.name}${level}预警信号：预计未来24小时内${place?.name ?? ''}将受${type.name}影响，请注意防范。`);
  const record: Record<string, unknown> = {
    id: o.id ?? `${o.locationId}${stamp(pub)}${String(seq).padStart(5, '0')}`,
    sender,
    pubTime: chinaTime(pub),
    title,
    startTime: start,
    endTime: end,
    status,
    level,
    severity: style.severity,
    severityColor: style.color,
    type: type.code,
    typeName: type.name,
    urgency: '',
    certainty: '',
    text,
    related: o.related ?? '',
  };
  return applyRecordQuirks(record as V7WarningRecord, o.quirks ?? []);
}

/** Applies v7 record quirks to a copy of the record. */
export function applyRecordQuirks(
  record: V7WarningRecord,
  quirks: readonly Quirk[],
): V7WarningRecord {
  if (quirks.length === 0) return record;
  const out: Record<string, unknown> = { ...record };
  for (const quirk of quirks) {
    switch (quirk) {
      case 'typeNameInType':
        // The spec's sample: a type name where the code belongs, and no typeName.
        if (typeof out.typeName === 'string' && out.typeName) out.type = out.typeName;
        else if (typeof out.type === 'string') out.type = TYPE_NAMES[out.type] ?? out.type;
        delete out.typeName;
        break;
      case 'localizedStatus':
        if (typeof out.status === 'string') out.status = LOCALIZED_STATUS[out.status] ?? out.status;
        break;
      case 'noSender':
        delete out.sender;
        break;
      case 'noTypeName':
        delete out.typeName;
        break;
      case 'noRelated':
        delete out.related;
        break;
      case 'emptyStartTime':
        out.startTime = '';
        break;
      case 'severityOnly':
        out.level = '';
        break;
      default:
        break;
    }
  }
  return out as V7WarningRecord;
}

/** Applies v1 quirks to a copy of an alert record. */
export function applyV1Quirks(record: V1AlertRecord, quirks: readonly Quirk[]): V1AlertRecord {
  if (quirks.length === 0) return record;
  const out: Record<string, unknown> = { ...record };
  for (const quirk of quirks) {
    if (quirk === 'expiredTime' && 'expireTime' in out) {
      out.expiredTime = out.expireTime;
      delete out.expireTime;
    }
    if (quirk === 'nullSupersedes') {
      const messageType = out.messageType as Record<string, unknown> | undefined;
      const supersedes = messageType?.supersedes;
      if (messageType && (!Array.isArray(supersedes) || supersedes.length === 0)) {
        out.messageType = { ...messageType, supersedes: null };
      }
    }
  }
  return out as V1AlertRecord;
}

export interface V1AlertOptions {
  readonly area: AlertArea;
  readonly id?: string;
  readonly seq?: number;
  readonly typeCode?: string;
  readonly typeName?: string;
  readonly level: string;
  readonly messageType?: 'alert' | 'update' | 'cancel';
  readonly supersedes?: readonly string[] | null;
  readonly issuedTime?: string | Date;
  readonly onsetTime?: string | Date;
  readonly expireTime?: string | Date;
  readonly senderName?: string;
  readonly headline?: string;
  readonly description?: string;
  readonly instruction?: string;
  readonly criteria?: string;
  readonly quirks?: readonly V1Quirk[];
}

/** A v1 area alert shaped like the facts note's body; lower-case enumerations as in v1. */
export function v1Alert(o: V1AlertOptions): V1AreaAlert {
  validateArea(o.area);
  const level = levelOf(o.level);
  const style = LEVEL_STYLES[level];
  const type = resolveType(o.typeCode, o.typeName);
  const issued = toDate(
    o.issuedTime ?? new Date(Math.floor(Date.now() / 60_000) * 60_000),
    'issuedTime',
  );
  const onset = toDate(o.onsetTime ?? issued, 'onsetTime');
  const expire = toDate(o.expireTime ?? new Date(issued.getTime() + 24 * 3_600_000), 'expireTime');
  const messageType = o.messageType ?? 'alert';
  const senderName = o.senderName ?? '中央气象台';
  const verb = messageType === 'cancel' ? '解除' : messageType === 'update' ? '更新' : '发布';
  const seq = o.seq ?? 1;
  const record: Record<string, unknown> = {
    id: o.id ?? `${stamp(issued)}${type.code}${String(seq).padStart(4, '0')}`,
    senderName,
    issuedTime: chinaTime(issued),
    messageType: { code: messageType, supersedes: o.supersedes === undefined ? [] : o.supersedes },
    eventType: { name: type.name, code: type.code },
    urgency: null,
    severity: style.severity.toLowerCase(),
    certainty: null,
    icon: type.code,
    color: {
      code: style.color.toLowerCase(),
      red: style.rgb[0],
      green: style.rgb[1],
      blue: style.rgb[2],
      alpha: 1,
    },
    effectiveTime: chinaTime(issued),
    onsetTime: chinaTime(onset),
    expireTime: chinaTime(expire),
    headline: o.headline ?? `${senderName}${verb}${type.name}${level}预警`,
    description: o.description ?? `${senderName}${verb}${type.name}${level}预警信号，请注意防范。`,
    criteria: o.criteria ?? '',
    responseTypes: [],
    instruction: o.instruction ?? '请关注预警信息，做好防范工作。',
  };
  return { area: o.area, alert: applyV1Quirks(record as V1AlertRecord, o.quirks ?? []) };
}

export function validateArea(area: AlertArea): void {
  if ('locationIds' in area) {
    if (!Array.isArray(area.locationIds) || area.locationIds.some((id) => typeof id !== 'string')) {
      throw new SimulatorInputError('area.locationIds: expected an array of Location IDs');
    }
    return;
  }
  const { lat, lon, radiusKm } = area;
  if (
    !Number.isFinite(lat) ||
    !Number.isFinite(lon) ||
    Math.abs(lat) > 90 ||
    Math.abs(lon) > 180 ||
    !Number.isFinite(radiusKm) ||
    radiusKm <= 0
  ) {
    throw new SimulatorInputError('area: expected {lat, lon, radiusKm} or {locationIds}');
  }
}
