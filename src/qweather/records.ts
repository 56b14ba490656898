import type { z } from 'zod';

/**
 * Reading the records of one answer one by one (README, promises, "one bad record never hides the
 * others"). A record that cannot be stored as it came is repaired where that is safe (NUL and
 * lone surrogates are taken out of its strings: Postgres refuses both in jsonb and text) or
 * skipped: nested deeper than any real record, beyond the answer's record limit, or of a shape
 * the schema refuses. A skipped record is reported with its id, when it has a readable one, so
 * that the check can log it, count it, and take the answer as no evidence that anything ended.
 */

/** A real warning record is three levels deep (v1 `messageType.supersedes[i]`); far beyond is an attack or a bug. */
export const MAX_RECORD_DEPTH = 16;

/** No place has ever had more than a handful of warnings in force; the rest of a longer answer is skipped. */
export const MAX_RECORDS = 200;

export interface SkippedRecord {
  /** The record's position in the answer's array, from 0. */
  index: number;
  /** Its `id` when that was a readable string or number, else null. */
  id: string | null;
  /** Why it was skipped, for the log. */
  reason: string;
}

export interface ReadRecords<T> {
  records: T[];
  skipped: SkippedRecord[];
  /** Records kept after their strings were repaired. */
  repaired: number;
}

// eslint-disable-next-line no-control-regex
const SUSPECT = /[\u0000\ud800-\udfff]/;
// eslint-disable-next-line no-control-regex
const NUL = /\u0000/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function repairString(value: string): string {
  return value.replace(NUL, '').replace(LONE_SURROGATE, '');
}

/** Whether a JSON value nests deeper than `limit`; never walks deeper than that itself. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit <= 0) return true;
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => nestsDeeperThan(child, limit - 1));
}

/**
 * A copy of a JSON value with NUL and lone surrogates taken out of every string, keys included;
 * the value itself when none has any. Called only on values within `MAX_RECORD_DEPTH`.
 */
export function repairStrings(value: unknown): unknown {
  if (typeof value === 'string') return SUSPECT.test(value) ? repairString(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const items: unknown[] = value;
    let copy: unknown[] | undefined;
    items.forEach((item, i) => {
      const fixed = repairStrings(item);
      if (fixed !== item) {
        copy ??= [...items];
        copy[i] = fixed;
      }
    });
    return copy ?? value;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const fixedKey = SUSPECT.test(key) ? repairString(key) : key;
    const fixed = repairStrings(item);
    if (fixedKey !== key || fixed !== item) changed = true;
    return [fixedKey, fixed] as const;
  });
  return changed ? Object.fromEntries(entries) : value;
}

function idOf(record: unknown): string | null {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return null;
  const id = (record as { id?: unknown }).id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  if (typeof id !== 'string') return null;
  const clean = repairString(id).trim();
  return clean === '' ? null : clean.slice(0, 80);
}

function shapeProblem(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(record)'}: ${i.message}`)
    .join('; ');
}

/**
 * Each record of an answer's array through `schema` and `build`, keeping the readable ones.
 * `build` receives the parsed record and the repaired raw one (what the archive keeps).
 */
export function readRecords<S extends z.ZodType, T>(
  items: readonly unknown[],
  schema: S,
  build: (parsed: z.output<S>, raw: unknown) => T,
  options: { maxRecords?: number } = {},
): ReadRecords<T> {
  const maxRecords = options.maxRecords ?? MAX_RECORDS;
  const out: ReadRecords<T> = { records: [], skipped: [], repaired: 0 };
  items.forEach((item, index) => {
    const skip = (reason: string) => out.skipped.push({ index, id: idOf(item), reason });
    if (index >= maxRecords) return skip(`beyond the first ${maxRecords} records`);
    if (nestsDeeperThan(item, MAX_RECORD_DEPTH)) {
      return skip(`nested deeper than ${MAX_RECORD_DEPTH} levels`);
    }
    const raw = repairStrings(item);
    const parsed = schema.safeParse(raw);
    if (!parsed.success) return skip(`unexpected shape: ${shapeProblem(parsed.error)}`);
    if (raw !== item) out.repaired += 1;
    out.records.push(build(parsed.data, raw));
  });
  return out;
}
