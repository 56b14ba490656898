import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { queryRows } from '../db/client.js';
import { warnings } from '../db/schema.js';
import type { TrackedWarning } from '../domain/detect.js';
import type { Warning } from '../domain/warning.js';

/**
 * The tracked warnings of a v7 place or a v1 point: what detection compares an answer with,
 * and the writes that record its verdict. Both checks share them.
 */

export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface WarningRow {
  warning_id: string;
  state: TrackedWarning['state'];
  record: Omit<Warning, 'raw'>;
  raw: unknown;
  first_seen: Date;
  last_seen: Date;
  misses: number;
  closed_at: Date | null;
}

export function toTracked(row: WarningRow): TrackedWarning {
  return {
    id: row.warning_id,
    state: row.state,
    warning: { ...row.record, raw: row.raw },
    firstSeen: new Date(row.first_seen),
    lastSeen: new Date(row.last_seen),
    misses: row.misses,
    closedAt: row.closed_at ? new Date(row.closed_at) : null,
  };
}

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
  const rows = await queryRows<WarningRow>(
    tx,
    sql`SELECT warning_id, state, record, raw, first_seen, last_seen, misses, closed_at
        FROM warnings WHERE place_id = ${key} AND last_seen > ${windowStart}`,
  );
  return rows.map(toTracked);
}

/** Warnings present in a successful answer: seen now, no misses. */
export async function markSeen(
  tx: Tx,
  key: string,
  warningIds: readonly string[],
  now: Date,
): Promise<void> {
  if (warningIds.length === 0) return;
  await tx.execute(sql`
    UPDATE warnings SET last_seen = ${now}, misses = 0
    WHERE place_id = ${key} AND warning_id = ANY(${sql.param(warningIds)}::text[])`);
}

export async function writeWarnings(
  tx: Tx,
  placeId: string,
  changes: TrackedWarning[],
): Promise<void> {
  if (changes.length === 0) return;
  await tx
    .insert(warnings)
    .values(
      changes.map((t) => ({
        placeId,
        warningId: t.id,
        state: t.state,
        title: t.warning.title,
        level: t.warning.level,
        typeCode: t.warning.typeCode,
        typeName: t.warning.typeName,
        status: t.warning.status,
        startTime: instant(t.warning.startTime),
        endTime: instant(t.warning.endTime),
        record: withoutRaw(t.warning),
        raw: t.warning.raw ?? null,
        firstSeen: t.firstSeen,
        lastSeen: t.lastSeen,
        misses: t.misses,
        closedAt: t.closedAt,
      })),
    )
    .onConflictDoUpdate({
      target: [warnings.placeId, warnings.warningId],
      set: {
        state: sql`excluded.state`,
        title: sql`excluded.title`,
        level: sql`excluded.level`,
        typeCode: sql`excluded.type_code`,
        typeName: sql`excluded.type_name`,
        status: sql`excluded.status`,
        startTime: sql`excluded.start_time`,
        endTime: sql`excluded.end_time`,
        record: sql`excluded.record`,
        raw: sql`excluded.raw`,
        lastSeen: sql`excluded.last_seen`,
        misses: sql`excluded.misses`,
        closedAt: sql`excluded.closed_at`,
      },
    });
}
