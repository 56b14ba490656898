/**
 * The seed fields that decide when a subscriber's messages leave (docs/messages.md): `group`,
 * `timezone`, `quietHours` and `maxPerHour`. Pure: what can be decided from the text alone.
 *
 * Messages follow the seed format "<field> <quoted value> <what is wrong>", so that a printed
 * line reads `subscribers[3] "Hangzhou duty desk": quietHours.from "25:00" is not a time of day`.
 */
import { LEVELS, parseLevel, type KnownLevel } from '../domain/warning.js';

/** The subscriber columns these fields fill; null everywhere means "the defaults". */
export interface SubscriberSchedule {
  /** null: the channel's default (email 'cycle', webhook 'none'). */
  groupMode: 'none' | 'cycle' | 'window' | null;
  groupWindowSeconds: number | null;
  /** null: the time zone of the subscriber's first place, else Asia/Shanghai (decided late). */
  timezone: string | null;
  quietFrom: string | null;
  quietTo: string | null;
  quietBypassLevel: KnownLevel | null;
  maxPerHour: number | null;
}

export const DEFAULT_SCHEDULE: Readonly<SubscriberSchedule> = Object.freeze({
  groupMode: null,
  groupWindowSeconds: null,
  timezone: null,
  quietFrom: null,
  quietTo: null,
  quietBypassLevel: null,
  maxPerHour: null,
});

export interface ScheduleProblem {
  field: string;
  message: string;
}

export const SCHEDULE_FIELDS = ['group', 'timezone', 'quietHours', 'maxPerHour'] as const;

/** The ranges of the database's check constraints (src/db/schema.ts), kept in one place. */
const WINDOW_SECONDS = { min: 1, max: 3600 };
const MAX_PER_HOUR = { min: 1, max: 1000 };
// Seconds are accepted too (the demo's window ends within the minute it is shown in).
const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$/;
/** The database's shape for a zone name; Intl also takes offsets such as "+08:00", this not. */
const DB_TIMEZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;
const QUOTE_LIMIT = 40;

/** The bad value as the message shows it: quoted, shortened when long, never a whole object. */
export function quoteValue(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}…` : value);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return String(value);
  }
  if (Array.isArray(value)) return value.length === 0 ? '[]' : '[…]';
  if (typeof value === 'object') return '{…}';
  return `(${typeof value})`;
}

export function parseScheduleInput(input: {
  group?: unknown;
  timezone?: unknown;
  quietHours?: unknown;
  maxPerHour?: unknown;
}): { ok: true; schedule: SubscriberSchedule } | { ok: false; problems: ScheduleProblem[] } {
  const problems: ScheduleProblem[] = [];
  const add = (field: string, value: unknown, message: string) =>
    problems.push({ field, message: `${quoteValue(value)} ${message}` });
  const schedule: SubscriberSchedule = { ...DEFAULT_SCHEDULE };

  const group = input.group;
  if (group === 'none' || group === 'cycle') {
    schedule.groupMode = group;
  } else if (isObject(group)) {
    for (const key of Object.keys(group)) {
      if (key !== 'windowSeconds') add(`group.${key}`, group[key], 'is not a known field');
    }
    const seconds = readWhole(group.windowSeconds);
    if (group.windowSeconds === undefined || group.windowSeconds === null) {
      problems.push({
        field: 'group.windowSeconds',
        message: `is missing (a whole number of seconds from ${WINDOW_SECONDS.min} to ${WINDOW_SECONDS.max})`,
      });
    } else if (seconds === null || seconds < WINDOW_SECONDS.min || seconds > WINDOW_SECONDS.max) {
      add(
        'group.windowSeconds',
        group.windowSeconds,
        `is not a whole number of seconds from ${WINDOW_SECONDS.min} to ${WINDOW_SECONDS.max}`,
      );
    } else {
      schedule.groupMode = 'window';
      schedule.groupWindowSeconds = seconds;
    }
  } else if (group !== undefined && group !== null) {
    add('group', group, 'is not "none", "cycle" or {"windowSeconds": N}');
  }

  const timezone = input.timezone;
  if (timezone !== undefined && timezone !== null) {
    const zone = typeof timezone === 'string' ? canonicalTimeZone(timezone.trim()) : null;
    if (zone === null) add('timezone', timezone, 'is not an IANA time zone (e.g. "Asia/Shanghai")');
    else schedule.timezone = zone;
  }

  const quiet = input.quietHours;
  if (isObject(quiet)) {
    for (const key of Object.keys(quiet)) {
      if (!['from', 'to', 'bypassLevel'].includes(key)) {
        add(`quietHours.${key}`, quiet[key], 'is not a known field');
      }
    }
    const from = readTime(quiet.from);
    const to = readTime(quiet.to);
    for (const [field, value, time] of [
      ['from', quiet.from, from],
      ['to', quiet.to, to],
    ] as const) {
      if (value === undefined || value === null) {
        problems.push({
          field: `quietHours.${field}`,
          message: 'is missing (a time of day, HH:MM)',
        });
      } else if (time === null) {
        add(`quietHours.${field}`, value, 'is not a time of day (HH:MM)');
      }
    }
    if (from !== null && to !== null && from === to) {
      add('quietHours.to', quiet.to, 'is the same as quietHours.from: the window would be empty');
    }
    let bypass: KnownLevel | null = null;
    if (quiet.bypassLevel !== undefined && quiet.bypassLevel !== null) {
      bypass =
        typeof quiet.bypassLevel === 'string' ? (parseLevel(quiet.bypassLevel) ?? null) : null;
      if (bypass === null) {
        add(
          'quietHours.bypassLevel',
          quiet.bypassLevel,
          `is not a level (${LEVELS.join(', ')}, or white, blue, yellow, orange, red)`,
        );
      }
    }
    if (from !== null && to !== null && from !== to) {
      schedule.quietFrom = from;
      schedule.quietTo = to;
      schedule.quietBypassLevel = bypass;
    }
  } else if (quiet !== undefined && quiet !== null) {
    add('quietHours', quiet, 'is not {"from": "HH:MM", "to": "HH:MM", "bypassLevel"?: level}');
  }

  const maxPerHour = input.maxPerHour;
  if (maxPerHour !== undefined && maxPerHour !== null) {
    const count = readWhole(maxPerHour);
    if (count === null || count < MAX_PER_HOUR.min || count > MAX_PER_HOUR.max) {
      add(
        'maxPerHour',
        maxPerHour,
        `is not a whole number of messages from ${MAX_PER_HOUR.min} to ${MAX_PER_HOUR.max}`,
      );
    } else {
      schedule.maxPerHour = count;
    }
  }

  return problems.length > 0 ? { ok: false, problems } : { ok: true, schedule };
}

/** The zone's canonical IANA name, or null when Intl does not know it. */
export function canonicalTimeZone(name: string): string | null {
  if (!DB_TIMEZONE.test(name)) return null;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions()
      .timeZone;
    return DB_TIMEZONE.test(resolved) ? resolved : null;
  } catch {
    return null;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A whole number, written as a number (JSON) or as digits (YAML reads every scalar as text). */
function readWhole(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value === 'string' && /^\d{1,9}$/.test(value.trim())) return Number(value.trim());
  return null;
}

function readTime(value: unknown): string | null {
  return typeof value === 'string' && TIME_OF_DAY.test(value.trim()) ? value.trim() : null;
}
