import { sql, type SQL } from 'drizzle-orm';
import { queryPrepared, type Tx } from '../db/client.js';
import type { DetectResult, EventType, TrackedWarning } from '../domain/detect.js';
import type { Warning } from '../domain/warning.js';

/**
 * The tracked warnings of a v7 place or a v1 point: what detection compares an answer with,
 * and the writes that record its verdict. Both checks share them.
 */

export interface WarningRow {
  warning_id: string;
  state: TrackedWarning['state'];
  record: Omit<Warning, 'raw'>;
  raw: unknown;
  first_seen: Date;
  last_seen: Date;
  misses: number;
  last_miss_at: Date | null;
  closed_at: Date | null;
  occurrence: number;
}

export function toTracked(row: WarningRow): TrackedWarning {
  return {
    id: row.warning_id,
    state: row.state,
    warning: { ...row.record, raw: row.raw },
    firstSeen: new Date(row.first_seen),
    lastSeen: new Date(row.last_seen),
    misses: row.misses,
    lastMissAt: row.last_miss_at ? new Date(row.last_miss_at) : null,
    closedAt: row.closed_at ? new Date(row.closed_at) : null,
    occurrence: row.occurrence,
  };
}

/** A warning as its events store it: without the upstream's record. */
export function withoutRaw(warning: Warning): Omit<Warning, 'raw'> {
  const { raw: _raw, ...record } = warning;
  return record;
}

const instant = (text: string | null) => {
  if (!text) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : new Date(ms);
};

/** The warnings tracked at a place or point: those last seen within the reappear window. */
export async function readTracked(
  tx: Tx,
  key: string,
  windowStart: Date,
): Promise<TrackedWarning[]> {
  const rows = await queryPrepared<WarningRow>(
    tx,
    sql`SELECT warning_id, state, record, raw, first_seen, last_seen, misses, last_miss_at,
          closed_at, occurrence
        FROM warnings WHERE place_id = ${key} AND last_seen > ${windowStart}`,
  );
  return rows.map(toTracked);
}

/** What a detection decided for a place's or point's tracked warnings (`DetectResult`). */
export interface WarningWrites {
  /** Warnings present in the answer: seen now, no misses. */
  seen: readonly string[];
  /** Warnings new or changed, each in full. */
  changes: readonly TrackedWarning[];
}

/**
 * The writes of a detection as the common table expressions `seen_warnings` and
 * `changed_warnings`, for a statement that may do more: a check spends a round trip less than
 * with statements of their own. A warning both seen and changed is written once, by its change,
 * which carries the refreshed last-seen time (a row written twice in one statement would be
 * undefined).
 */
function warningWritesCte(key: string, writes: WarningWrites, now: Date): SQL {
  const changed = new Set(writes.changes.map((t) => t.id));
  const seenOnly = writes.seen.filter((id) => !changed.has(id));
  const rows = writes.changes.map((t) => ({
    warning_id: t.id,
    state: t.state,
    title: t.warning.title,
    level: t.warning.level,
    type_code: t.warning.typeCode,
    type_name: t.warning.typeName,
    status: t.warning.status,
    start_time: instant(t.warning.startTime),
    end_time: instant(t.warning.endTime),
    record: withoutRaw(t.warning),
    raw: t.warning.raw ?? null,
    first_seen: t.firstSeen,
    last_seen: t.lastSeen,
    misses: t.misses,
    last_miss_at: t.lastMissAt,
    closed_at: t.closedAt,
    occurrence: t.occurrence,
  }));
  return sql`seen_warnings AS (
      UPDATE warnings SET last_seen = ${now}, misses = 0, last_miss_at = NULL
      WHERE place_id = ${key} AND warning_id = ANY(${sql.param(seenOnly)}::text[])),
    changed_warnings AS (
      INSERT INTO warnings (place_id, warning_id, state, title, level, type_code, type_name,
        status, start_time, end_time, record, raw, first_seen, last_seen, misses, last_miss_at,
        closed_at, occurrence)
      SELECT ${key}, w.* FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS w(
        warning_id text, state text, title text, level text, type_code text, type_name text,
        status text, start_time timestamptz, end_time timestamptz, record jsonb, raw jsonb,
        first_seen timestamptz, last_seen timestamptz, misses integer,
        last_miss_at timestamptz, closed_at timestamptz, occurrence integer)
      ON CONFLICT (place_id, warning_id) DO UPDATE SET
        state = excluded.state, title = excluded.title, level = excluded.level,
        type_code = excluded.type_code, type_name = excluded.type_name,
        status = excluded.status, start_time = excluded.start_time,
        end_time = excluded.end_time, record = excluded.record, raw = excluded.raw,
        last_seen = excluded.last_seen, misses = excluded.misses,
        last_miss_at = excluded.last_miss_at, closed_at = excluded.closed_at,
        occurrence = excluded.occurrence)`;
}

/** An event a detection's statement inserted (`detectionWritesCte`). */
export interface InsertedEvent {
  id: number;
  warning_id: string;
  type: EventType;
  occurrence: number;
}

/** The key of a detected or inserted event within one check: type, warning id, occurrence. */
export function eventKey(
  e: { type: EventType; occurrence: number } & ({ warningId: string } | { warning_id: string }),
): string {
  const id = 'warningId' in e ? e.warningId : e.warning_id;
  return `${e.type}\u0000${id}\u0000${e.occurrence}`;
}

/**
 * All of a detection's writes as common table expressions, for a check's one statement: the
 * warnings' (`warningWritesCte`) and `inserted`, its events not already written (a re-run
 * inserts none), each with its id. `INSERTED_EVENTS` reads them back as one JSON array, or null.
 * `attributions`: v1's, on every event of the answer; null for v7.
 */
export function detectionWritesCte(
  key: string,
  detection: DetectResult,
  event: { cycleId: string; now: Date; attributions: readonly string[] | null },
): SQL {
  const candidates = detection.events.map((e) => ({
    warning_id: e.warningId,
    type: e.type,
    supersedes: e.supersedes,
    record: withoutRaw(e.warning),
    occurrence: e.occurrence,
  }));
  return sql`${warningWritesCte(key, detection, event.now)},
    inserted AS (
      INSERT INTO events (cycle_id, place_id, warning_id, type, supersedes, record,
        attributions, occurrence, detected_at)
      SELECT ${event.cycleId}::uuid, ${key}, d.warning_id, d.type, d.supersedes, d.record,
        ${sql.param(event.attributions)}::text[], d.occurrence, ${event.now}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(candidates)}::jsonb)
        AS d(warning_id text, type text, supersedes text[], record jsonb, occurrence integer)
      ON CONFLICT DO NOTHING
      RETURNING id, warning_id, type, occurrence)`;
}

/** The events `detectionWritesCte` inserted, as a JSON array of `InsertedEvent` (null if none). */
export const INSERTED_EVENTS = sql`(SELECT json_agg(json_build_object(
    'id', id, 'warning_id', warning_id, 'type', type, 'occurrence', occurrence)) FROM inserted)`;

/** A detection's writes (`warningWritesCte`) in a statement of their own. */
export async function writeWarnings(
  tx: Tx,
  key: string,
  writes: WarningWrites,
  now: Date,
): Promise<void> {
  if (writes.seen.length === 0 && writes.changes.length === 0) return;
  await queryPrepared(tx, sql`WITH ${warningWritesCte(key, writes, now)} SELECT 1`);
}
