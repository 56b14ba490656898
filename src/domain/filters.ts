/**
 * Subscriber filters: which detected events a subscription wants. Pure; used by the pipeline
 * when it writes delivery rows, and by the seed file when it validates input.
 */
import { EVENT_TYPES, type EventType } from './detect.js';
import { LEVELS, levelRank, parseLevel, type KnownLevel, type Warning } from './warning.js';
import { canonicalTypeCode, typeCodeOfInput, warningTypeOf } from './warning-types.js';

export interface SubscriptionFilter {
  /** null = every level. */
  minLevel: KnownLevel | null;
  /** Type names or codes; null = every type. */
  types: readonly string[] | null;
  /** null = all four. */
  events: readonly EventType[] | null;
}

export const ACCEPT_ALL: SubscriptionFilter = Object.freeze({
  minLevel: null,
  types: null,
  events: null,
});

export interface FilterProblem {
  field: string;
  message: string;
}

export type ParsedFilter =
  { ok: true; filter: SubscriptionFilter } | { ok: false; problems: FilterProblem[] };

/** Whether a subscription wants an event: every one of its three conditions must hold. */
export function filterAccepts(
  filter: SubscriptionFilter,
  event: { type: EventType; warning: Warning },
): boolean {
  return (
    acceptsEventType(filter, event.type) &&
    acceptsLevel(filter, event.warning) &&
    acceptsType(filter, event.warning)
  );
}

export function acceptsEventType(filter: SubscriptionFilter, type: EventType): boolean {
  return filter.events === null || filter.events.includes(type);
}

export function acceptsLevel(filter: SubscriptionFilter, warning: Warning): boolean {
  if (filter.minLevel === null) return true;
  // The colour is a second opinion when the level itself did not survive normalization.
  const level = warning.level === 'unknown' ? parseLevel(warning.color) : warning.level;
  // A warning whose level we cannot read passes any minimum: for a safety service a missed
  // alert costs more than an extra one, and the upstream adds colours without notice.
  if (level === undefined) return true;
  return levelRank(level) >= levelRank(filter.minLevel);
}

/**
 * A warning's type against a subscription's list: by code (either style, or the code a known
 * Chinese or English name stands for), else by the name as written (lists stored before types
 * were kept as codes).
 */
export function acceptsType(filter: SubscriptionFilter, warning: Warning): boolean {
  if (filter.types === null) return true;
  const name = warning.typeName === null ? null : normalizeName(warning.typeName);
  const code =
    (warning.typeCode === null ? undefined : canonicalTypeCode(warning.typeCode)) ??
    (warning.typeName === null ? undefined : warningTypeOf(warning.typeName)?.code);
  return filter.types.some(
    (listed) =>
      (code !== undefined && (typeCodeOfInput(listed) ?? canonicalTypeCode(listed)) === code) ||
      (name !== null && normalizeName(listed) === name),
  );
}

export { canonicalTypeCode };

/** Names compare without surrounding space and, for English names, without case. */
function normalizeName(name: string): string {
  return name.trim().toLowerCase();
}

const LEVEL_RULE = `must be one of ${LEVELS.join(', ')} (or white, blue, yellow, orange, red)`;

/** Validates a seed file's filter fields; every problem names its field and the rule it broke. */
export function parseFilterInput(input: {
  minLevel?: unknown;
  types?: unknown;
  events?: unknown;
}): ParsedFilter {
  const problems: FilterProblem[] = [];
  const minLevel = parseMinLevel(input.minLevel, problems);
  const types = parseTypes(input.types, problems);
  const events = parseEvents(input.events, problems);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, filter: Object.freeze({ minLevel, types, events }) };
}

function parseMinLevel(value: unknown, problems: FilterProblem[]): KnownLevel | null {
  if (value === undefined || value === null) return null;
  const level = typeof value === 'string' ? parseLevel(value) : undefined;
  if (level === undefined) {
    problems.push({ field: 'minLevel', message: `${LEVEL_RULE}; got ${describe(value)}` });
    return null;
  }
  return level;
}

function parseTypes(value: unknown, problems: FilterProblem[]): readonly string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0) {
    problems.push({
      field: 'types',
      message: `must be a non-empty array of type names or codes; got ${describe(value)}`,
    });
    return null;
  }
  const types: string[] = [];
  value.forEach((item: unknown, index) => {
    if (typeof item !== 'string' || item.trim() === '') {
      problems.push({
        field: `types[${index}]`,
        message: `must be a non-empty string (a type name, or a code written as a string such as "1003"); got ${describe(item)}`,
      });
      return;
    }
    // Kept as the code: a misspelt name would match no warning, and nothing would say why.
    const code = typeCodeOfInput(item);
    if (code === undefined) {
      problems.push({
        field: `types[${index}]`,
        message: `${describe(item)} is not a QWeather warning type: write its code ("1001"), Chinese name ("台风") or English name ("typhoon"), as listed in docs/warning-types.md`,
      });
      return;
    }
    if (!types.includes(code)) types.push(code);
  });
  return Object.freeze(types);
}

function parseEvents(value: unknown, problems: FilterProblem[]): readonly EventType[] | null {
  if (value === undefined || value === null) return null;
  const rule = `must be one of ${EVENT_TYPES.join(', ')}`;
  if (!Array.isArray(value) || value.length === 0) {
    problems.push({
      field: 'events',
      message: `must be a non-empty array of event kinds (${EVENT_TYPES.join(', ')}); got ${describe(value)}`,
    });
    return null;
  }
  const listed = new Set<EventType>();
  value.forEach((item: unknown, index) => {
    const kind = EVENT_TYPES.find((type) => type === item);
    if (kind === undefined) {
      problems.push({ field: `events[${index}]`, message: `${rule}; got ${describe(item)}` });
    } else {
      listed.add(kind);
    }
  });
  // Canonical order, so equal filters compare and store equal whatever order the file used.
  return Object.freeze(EVENT_TYPES.filter((type) => listed.has(type)));
}

/** A short, safe rendering of bad input for an error message. */
function describe(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `a value of type ${typeof value}`;
}
