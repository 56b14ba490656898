/**
 * The normalized warning: one shape whatever the upstream sent (v7 old or new style, or v1).
 * Produced by `src/qweather/` and consumed by detection, filters, rendering and the store.
 */

/** One level scale, lowest first (白色 is used only in Guangdong). */
export const LEVELS = ['白色', '蓝色', '黄色', '橙色', '红色'] as const;
export type KnownLevel = (typeof LEVELS)[number];
export type Level = KnownLevel | 'unknown';

/** The levels' English names, as English messages show them. */
export const LEVEL_EN: Readonly<Record<Level, string>> = Object.freeze({
  白色: 'White',
  蓝色: 'Blue',
  黄色: 'Yellow',
  橙色: 'Orange',
  红色: 'Red',
  unknown: 'Unknown',
});

/** Ordinal of a level on the scale; unknown ranks below every known level (-1). */
export function levelRank(level: Level): number {
  return level === 'unknown' ? -1 : LEVELS.indexOf(level);
}

const LEVEL_ALIASES: Record<string, KnownLevel> = {
  白色: '白色',
  白: '白色',
  white: '白色',
  蓝色: '蓝色',
  蓝: '蓝色',
  blue: '蓝色',
  黄色: '黄色',
  黄: '黄色',
  yellow: '黄色',
  橙色: '橙色',
  橙: '橙色',
  orange: '橙色',
  红色: '红色',
  红: '红色',
  red: '红色',
};

/** A level name in Chinese or an English colour name (any case); undefined when not a level. */
export function parseLevel(text: string | null | undefined): KnownLevel | undefined {
  if (!text) return undefined;
  const key = text.trim().toLowerCase();
  // Own keys only: "constructor" or "__proto__" must not find Object.prototype's members.
  return Object.hasOwn(LEVEL_ALIASES, key) ? LEVEL_ALIASES[key] : undefined;
}

/**
 * v7 `status` after normalization. The upstream may send localized text ("预警中", "更新",
 * "取消", "Active"…) or nothing; the client maps all of them onto these three.
 */
export type WarningStatus = 'active' | 'update' | 'cancel';

export type WarningSource = 'v7' | 'v1';

/** What the upstream said of a warning in English (`lang=en`), for English subscribers. */
export interface WarningEnglish {
  readonly title: string;
  readonly text: string;
  readonly sender: string | null;
  readonly typeName: string | null;
  readonly instruction: string | null;
}

export interface Warning {
  /** Upstream id; v7 ids begin with the 9-digit Location ID, v1 ids cover a whole area. */
  readonly id: string;
  readonly source: WarningSource;
  readonly title: string;
  /** Issuing body; null when the upstream left it out. */
  readonly sender: string | null;
  /** ISO 8601 instants with an offset, or null when missing or empty upstream. */
  readonly pubTime: string | null;
  readonly startTime: string | null;
  readonly endTime: string | null;
  readonly status: WarningStatus;
  readonly level: Level;
  /** v7 `severity` / v1 `severity`, lower-cased (minor, moderate, severe, extreme, unknown). */
  readonly severity: string | null;
  /** v7 `severityColor` / v1 `color.code`, lower-cased (white, blue, yellow, …). */
  readonly color: string | null;
  /** Type code when the upstream sent one (v7 `type`, v1 `eventType.code`); never required known. */
  readonly typeCode: string | null;
  /** Type name as given (v7 `typeName`, or a name found in `type`; v1 `eventType.name`). */
  readonly typeName: string | null;
  /** Full text (v7 `text`, v1 `description`). */
  readonly text: string;
  /** Ids this warning updates or cancels (v7 `related`, v1 `messageType.supersedes`). */
  readonly related: readonly string[];
  /** v1 only: instruction and criteria text; null for v7. */
  readonly instruction: string | null;
  /** The record exactly as received, kept for the archive and for debugging. */
  readonly raw: unknown;
  /**
   * Set when a v1 alert continues a warning first told from v7 (src/domain/handover.ts): the
   * alert's own id, while `id` stays the v7 id subscribers know.
   */
  readonly v1Id?: string;
  /**
   * The upstream's English texts of this warning, asked for where English subscribers watch
   * (src/domain/english.ts); absent when none were asked for or given.
   */
  readonly english?: WarningEnglish;
}

/** QWeather's own assumption for a warning with no end time: valid 24 hours from its start. */
export const ASSUMED_VALIDITY_MS = 24 * 60 * 60 * 1000;

// Only instants with an explicit offset: a bare local time would be read in the process's
// time zone, and China's warnings are issued in UTC+8 whatever the server runs in.
const INSTANT_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** An ISO 8601 instant with an offset as a Date; null when missing, local-only or invalid. */
export function parseInstant(text: string | null | undefined): Date | null {
  if (!text || !INSTANT_WITH_OFFSET.test(text.trim())) return null;
  const ms = Date.parse(text.trim());
  return Number.isNaN(ms) ? null : new Date(ms);
}

/**
 * When a warning stops being in force: its end time; with none, 24 hours after its start (as
 * QWeather itself assumes), else 24 hours after publication; null when it carries no usable time.
 */
export function impliedEnd(
  warning: Pick<Warning, 'endTime' | 'startTime' | 'pubTime'>,
): Date | null {
  const end = parseInstant(warning.endTime);
  if (end) return end;
  const start = parseInstant(warning.startTime) ?? parseInstant(warning.pubTime);
  return start ? new Date(start.getTime() + ASSUMED_VALIDITY_MS) : null;
}
