/**
 * What the simulator answers with `lang=en`: the same warnings, their texts in English, as
 * QWeather does for the places it publishes English for. A record may say how: `en: { … }`
 * gives its English fields (v7: title, text, sender, typeName; v1: headline, description,
 * senderName, instruction, eventType name as typeName), and `en: false` says no English was
 * published, so the Chinese record is served as it is. Otherwise the English is written from
 * the record's type, level and place. `en` itself is never served.
 */
import { LEVEL_EN, parseLevel } from '../domain/warning.js';
import { warningTypeOf } from '../domain/warning-types.js';
import type { PlaceRow } from './places.js';
import type { V1AlertRecord, V7WarningRecord } from './records.js';

interface EnglishFields {
  title?: string;
  text?: string;
  sender?: string;
  typeName?: string;
  instruction?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function englishOf(record: { readonly [field: string]: unknown }): EnglishFields | false {
  const en = record.en;
  if (en === false) return false;
  return en !== null && typeof en === 'object' ? en : {};
}

/** A record as served, without the simulator's own `en` field. */
export function served<T extends { readonly [field: string]: unknown }>(record: T): T {
  if (!('en' in record)) return record;
  const { en: _en, ...rest } = record;
  return rest as T;
}

const verbOf = (status: unknown): string =>
  status === 'cancel' || status === '取消'
    ? 'lifted'
    : status === 'update' || status === '更新'
      ? 'updated'
      : 'issued';

/** A v7 record in English, as `/v7/warning/now?lang=en` serves it. */
export function englishV7(record: V7WarningRecord, place: PlaceRow | undefined): V7WarningRecord {
  const en = englishOf(record);
  if (en === false) return served(record);
  const known = parseLevel(str(record.level) ?? str(record.severityColor));
  const level = known ? LEVEL_EN[known] : '';
  const type =
    warningTypeOf(str(record.type) ?? '')?.en ??
    warningTypeOf(str(record.typeName) ?? '')?.en ??
    'Weather';
  const placeName = place?.nameEn ?? '';
  const sender = en.sender ?? `${placeName} Meteorological Observatory`.trim();
  const verb = verbOf(record.status);
  const warning = `${level} ${type} Warning`.trim();
  return {
    ...served(record),
    sender,
    title: en.title ?? `${sender} ${verb} ${warning}`,
    typeName: en.typeName ?? type,
    text:
      en.text ??
      (verb === 'lifted'
        ? `${sender} lifted the ${warning}.`
        : `${sender} ${verb} the ${warning}: ${type.toLowerCase()} is expected to affect ${placeName || 'the area'} within 24 hours. Take precautions.`),
  };
}

/** A v1 alert in English, as `/weatheralert/v1/current?lang=en` serves it. */
export function englishV1(record: V1AlertRecord, placeNameEn: string | undefined): V1AlertRecord {
  const en = englishOf(record);
  if (en === false) return served(record);
  const eventType = (record.eventType ?? {}) as { name?: unknown; code?: unknown };
  const color = (record.color ?? {}) as { code?: unknown };
  const known = parseLevel(str(color.code));
  const level = known ? LEVEL_EN[known] : '';
  const type =
    warningTypeOf(str(eventType.code) ?? '')?.en ??
    warningTypeOf(str(eventType.name) ?? '')?.en ??
    'Weather';
  const sender = en.sender ?? 'China Meteorological Administration';
  const messageType = (record.messageType ?? {}) as { code?: unknown };
  const verb = verbOf(messageType.code);
  const warning = `${level} ${type} Warning`.trim();
  return {
    ...served(record),
    senderName: sender,
    eventType: { ...eventType, name: en.typeName ?? type },
    headline: en.title ?? `${sender} ${verb} ${warning}`,
    description:
      en.text ??
      `${sender} ${verb} the ${warning} for ${placeNameEn ?? 'this area'}. Take precautions.`,
    instruction: en.instruction ?? 'Follow the warning and take precautions.',
  };
}
