import { parseLevel, type Level, type Warning, type WarningStatus } from '../domain/warning.js';
import {
  placeSchema,
  v1AlertSchema,
  v7WarningSchema,
  type RawPlace,
  type RawV1Alert,
  type RawV7Warning,
} from './schemas.js';

/**
 * From wire records to the shapes the rest of qwn uses. Every function here accepts every
 * deviation listed in the spec and the facts note; none of them throws on a record that passed
 * its schema.
 */

/** A city/district record (service-api §2.1). Missing texts are empty strings. */
export interface Place {
  id: string;
  name: string;
  lat: number;
  lon: number;
  adm1: string;
  adm2: string;
  /** From `country`, or `cnty` as in the popular-city sample. */
  country: string;
  tz: string;
  utcOffset: string;
  isDst: boolean;
  type: string;
  /** Null when the upstream sent no usable rank. */
  rank: number | null;
  fxLink: string;
}

/** A POI record (service-api §2.2): the same fields as a place; `type` is the POI category. */
export type Poi = Place;

export function normalizePlace(raw: RawPlace): Place {
  const rank = raw.rank === undefined || raw.rank.trim() === '' ? NaN : Number(raw.rank);
  return {
    id: raw.id,
    name: raw.name,
    lat: raw.lat,
    lon: raw.lon,
    adm1: raw.adm1 ?? '',
    adm2: raw.adm2 ?? '',
    country: raw.country || raw.cnty || '',
    tz: raw.tz ?? '',
    utcOffset: raw.utcOffset ?? '',
    isDst: raw.isDst === '1' || raw.isDst?.toLowerCase() === 'true',
    type: raw.type ?? '',
    rank: Number.isFinite(rank) ? rank : null,
    fxLink: raw.fxLink ?? '',
  };
}

export function parsePlace(input: unknown): Place {
  return normalizePlace(placeSchema.parse(input));
}

// ---------------------------------------------------------------------------------------------
// Times

const WITH_OFFSET =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|[+-]\d{2}:?\d{2})$/i;
const WITHOUT_OFFSET = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/;

/** China's offset: where the documented v7 format gives none, the place is a Chinese county. */
export const CHINA_OFFSET = '+08:00';

function colonOffset(offset: string): string {
  if (offset.toUpperCase() === 'Z') return 'Z';
  return offset.includes(':') ? offset : `${offset.slice(0, 3)}:${offset.slice(3)}`;
}

/** The `±HH:MM` offset carried by an ISO time (Z → +00:00), or null. */
export function offsetOf(time: string | null | undefined): string | null {
  const match = time ? WITH_OFFSET.exec(time.trim()) : null;
  if (!match?.[3]) return null;
  const offset = colonOffset(match[3]);
  return offset === 'Z' ? '+00:00' : offset;
}

/**
 * An ISO 8601 time with an offset, or null for a missing/empty/unreadable value. The v7 spec
 * documents `startTime`/`endTime` with minutes and no offset; those get `fallbackOffset` (the
 * location's own offset when known) so that every stored time is an unambiguous instant.
 */
export function normalizeTime(
  value: string | null | undefined,
  fallbackOffset: string = CHINA_OFFSET,
): string | null {
  const trimmed = value?.trim();
  if (!trimmed) return null;
  const withOffset = WITH_OFFSET.exec(trimmed);
  if (withOffset) return `${withOffset[1]}T${withOffset[2]}${colonOffset(withOffset[3] ?? 'Z')}`;
  const withoutOffset = WITHOUT_OFFSET.exec(trimmed);
  if (withoutOffset) return `${withoutOffset[1]}T${withoutOffset[2]}${fallbackOffset}`;
  return Number.isFinite(Date.parse(trimmed)) ? trimmed : null;
}

// ---------------------------------------------------------------------------------------------
// Status, level, type

/**
 * Localized or English status text onto the three states. Unknown text means "in force": a
 * record we cannot read as update or cancel is still a warning someone issued.
 */
export function normalizeStatus(value: string | null | undefined): WarningStatus {
  const text = value?.trim().toLowerCase() ?? '';
  if (text === '') return 'active';
  if (/cancel|取消|解除/.test(text)) return 'cancel';
  if (/update|更新/.test(text)) return 'update';
  return 'active';
}

/** `level` wins when it names a level; otherwise the colour; otherwise unknown. */
export function levelFrom(
  level: string | null | undefined,
  color: string | null | undefined,
): Level {
  return parseLevel(level) ?? parseLevel(color) ?? 'unknown';
}

/** Codes look like 1003 or the old 11B03; a name (暴雨, Rainstorm) has no digit in it. */
function isTypeCode(value: string): boolean {
  return /^[A-Za-z0-9]+$/.test(value) && /\d/.test(value);
}

export function splitType(
  type: string | null | undefined,
  typeName: string | null | undefined,
): { typeCode: string | null; typeName: string | null } {
  const t = type?.trim() || null;
  const n = typeName?.trim() || null;
  if (t !== null && isTypeCode(t)) return { typeCode: t, typeName: n };
  return { typeCode: null, typeName: n ?? t };
}

const blankToNull = (value: string | undefined): string | null => {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
};

const lower = (value: string | undefined): string | null =>
  blankToNull(value)?.toLowerCase() ?? null;

// ---------------------------------------------------------------------------------------------
// Warnings

/**
 * v7 warning record → Warning. Times without an offset take the offset of the record's own
 * `pubTime` (documented with an offset, so it is the location's), else `fallbackOffset`.
 */
export function normalizeV7Warning(
  record: RawV7Warning,
  raw: unknown,
  fallbackOffset: string = CHINA_OFFSET,
): Warning {
  const offset = offsetOf(record.pubTime) ?? fallbackOffset;
  return {
    id: record.id,
    source: 'v7',
    title: record.title?.trim() ?? '',
    sender: blankToNull(record.sender),
    pubTime: normalizeTime(record.pubTime, offset),
    startTime: normalizeTime(record.startTime, offset),
    endTime: normalizeTime(record.endTime, offset),
    status: normalizeStatus(record.status),
    level: levelFrom(record.level, record.severityColor),
    severity: lower(record.severity),
    color: lower(record.severityColor),
    ...splitType(record.type, record.typeName),
    text: record.text ?? '',
    related: record.related.flatMap((r) => r.split(/[\s,]+/)).filter((r) => r !== ''),
    instruction: null,
    raw,
  };
}

export function parseV7Warning(input: unknown, fallbackOffset?: string): Warning {
  return normalizeV7Warning(v7WarningSchema.parse(input), input, fallbackOffset);
}

/** v1 messageType.code; enumerations may grow without notice, so unknown means in force. */
function v1Status(code: string | undefined): WarningStatus {
  const text = code?.trim().toLowerCase() ?? '';
  if (text === 'alert') return 'active';
  return normalizeStatus(text);
}

/**
 * v1 alert → Warning. Times lacking an offset are read as UTC (the API's default with
 * `localTime=false`), or as China time when local times were asked for.
 */
export function normalizeV1Alert(record: RawV1Alert, raw: unknown, localTime = false): Warning {
  const fallback = localTime ? CHINA_OFFSET : '+00:00';
  return {
    id: record.id,
    source: 'v1',
    title: record.headline?.trim() ?? '',
    sender: blankToNull(record.senderName),
    pubTime: normalizeTime(record.issuedTime, fallback),
    startTime: normalizeTime(blankToNull(record.effectiveTime) ?? record.onsetTime, fallback),
    endTime: normalizeTime(blankToNull(record.expireTime) ?? record.expiredTime, fallback),
    status: v1Status(record.messageType?.code),
    level: levelFrom(undefined, record.color?.code),
    severity: lower(record.severity),
    color: lower(record.color?.code),
    typeCode: blankToNull(record.eventType?.code),
    typeName: blankToNull(record.eventType?.name),
    text: record.description ?? '',
    related: record.messageType?.supersedes ?? [],
    instruction: blankToNull(record.instruction),
    raw,
  };
}

export function parseV1Alert(input: unknown, localTime = false): Warning {
  return normalizeV1Alert(v1AlertSchema.parse(input), input, localTime);
}
