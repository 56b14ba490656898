import { sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Db } from '../db/client.js';
import { queryPrepared, queryRows } from '../db/client.js';
import { events, warnings } from '../db/schema.js';
import {
  DEFAULT_DETECT_SETTINGS,
  detectChanges,
  NO_EVENTS,
  type DetectSettings,
  type DetectedEvent,
  type EventType,
  type FetchOutcome,
  type TrackedWarning,
} from '../domain/detect.js';
import { filterAccepts, type SubscriptionFilter } from '../domain/filters.js';
import { parseLevel, type Warning } from '../domain/warning.js';
import type { PipelineContext } from './context.js';
import { cycleCounterFor } from './cycle-counters.js';
import { enqueueFirstAttempts, planFirstAttempts, type Channel } from './deliver.js';

export const CHECK_JOB = 'check';

export const checkPayload = z.object({
  cycleId: z.string().uuid(),
  placeId: z.string().regex(/^[A-Za-z0-9]{1,32}$/),
});
export type CheckPayload = z.infer<typeof checkPayload>;

export interface CheckOutcome {
  /** false when this cycle's check of the place had already been applied (a re-run job). */
  applied: boolean;
  fetchOk: boolean;
  events: Record<EventType, number>;
  /** Delivery rows this check created (their jobs are enqueued after the commit). */
  deliveries: number;
}

/** An applied check that has not found anything yet. */
export function emptyOutcome(fetchOk: boolean): CheckOutcome {
  return { applied: true, fetchOk, events: NO_EVENTS(), deliveries: 0 };
}

/**
 * Whether an answer was fetched before the one already applied to its place or point:
 * applying it could count a miss twice or bring back what a newer answer closed.
 */
export function isStale(
  lastFetchedAt: Date | string | null | undefined,
  fetchStartedAt: Date,
): boolean {
  return lastFetchedAt != null && new Date(lastFetchedAt) > fetchStartedAt;
}

/** A delivery row just created, and the job that will carry its first attempt. */
export interface CreatedDelivery {
  id: string;
  channel: Channel;
  firstJobId: string | null;
}

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

interface SubscriptionRow {
  subscriber_id: string;
  channel: 'email' | 'webhook';
  min_level: string | null;
  types: string[] | null;
  events: EventType[] | null;
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

export function toFilter(row: SubscriptionRow): SubscriptionFilter {
  return {
    minLevel: parseLevel(row.min_level) ?? null,
    types: row.types,
    events: row.events,
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

/**
 * Inserts the events and, for each one new to the store, one delivery row per subscriber whose
 * filters let it through. The unique constraints make a repeated event or delivery a no-op
 * (DESIGN invariant 2), whatever ran before.
 */
async function writeEventsAndDeliveries(
  tx: Tx,
  input: { cycleId: string; placeId: string; detected: DetectedEvent[]; now: Date },
): Promise<CreatedDelivery[]> {
  if (input.detected.length === 0) return [];
  const inserted = await tx
    .insert(events)
    .values(
      input.detected.map((e) => ({
        cycleId: input.cycleId,
        placeId: input.placeId,
        warningId: e.warningId,
        type: e.type,
        supersedes: e.supersedes,
        record: withoutRaw(e.warning),
        detectedAt: input.now,
      })),
    )
    .onConflictDoNothing()
    .returning({ id: events.id, warningId: events.warningId, type: events.type });
  if (inserted.length === 0) return [];

  const subscriptions = await queryRows<SubscriptionRow>(
    tx,
    sql`SELECT s.subscriber_id, s.min_level, s.types, s.events,
          CASE WHEN u.email IS NOT NULL THEN 'email' ELSE 'webhook' END AS channel
        FROM subscriptions s JOIN subscribers u ON u.id = s.subscriber_id
        WHERE s.place_id = ${input.placeId} AND u.active`,
  );
  const byKey = new Map(input.detected.map((e) => [`${e.type}\u0000${e.warningId}`, e]));
  const rows: Omit<NewDelivery, 'firstJobId'>[] = [];
  for (const event of inserted) {
    const detected = byKey.get(`${event.type}\u0000${event.warningId}`);
    if (!detected) continue;
    for (const sub of subscriptions) {
      if (!filterAccepts(toFilter(sub), { type: detected.type, warning: detected.warning })) {
        continue;
      }
      rows.push({
        subscriberId: sub.subscriber_id,
        eventId: event.id,
        cycleId: input.cycleId,
        placeId: input.placeId,
        warningId: detected.warningId,
        eventType: detected.type,
        channel: sub.channel,
        nextAttemptAt: input.now,
      });
    }
  }
  if (rows.length === 0) return [];
  return insertDeliveries(tx, planFirstAttempts(rows, `${input.cycleId}_${input.placeId}`));
}

/**
 * Most checks change nothing: the answer holds the warnings already stored, or the call failed.
 * Such a check reads the place and its tracked warnings in one statement, without a lock, and
 * writes its bookkeeping (last-seen times, the place's cycle and fetch times) in one more,
 * which applies only if the place row is still the version it read (`xmin`). Every check that writes warnings also updates its place row, so another check in
 * between makes the write a no-op and this returns null: the locked transaction then does the
 * check as before. Also null when the answer changes anything. Saves a quiet check the
 * transaction's round trips (BEGIN, lock, read, two writes, COMMIT, the count) that kept a
 * quiet cycle of 3,184 places over its 5 s target.
 */
async function applyQuietCheck(
  ctx: PipelineContext,
  input: {
    cycleId: string;
    placeId: string;
    fetch: FetchOutcome;
    fetchStartedAt: Date;
    now: Date;
    settings: DetectSettings;
  },
): Promise<CheckOutcome | null> {
  const { cycleId, placeId, fetch, fetchStartedAt, now, settings } = input;
  const windowStart = new Date(now.getTime() - settings.reappearWindowMs);
  const [place] = await queryPrepared<{
    version: string;
    last_cycle_id: string | null;
    last_fetched_at: Date | null;
    tracked: WarningRow[] | null;
  }>(
    ctx.db,
    sql`SELECT p.xmin::text AS version, p.last_cycle_id, p.last_fetched_at,
          (SELECT json_agg(json_build_object(
              'warning_id', w.warning_id, 'state', w.state, 'record', w.record, 'raw', w.raw,
              'first_seen', w.first_seen, 'last_seen', w.last_seen, 'misses', w.misses,
              'closed_at', w.closed_at))
           FROM warnings w WHERE w.place_id = p.id AND w.last_seen > ${windowStart}) AS tracked
        FROM places p WHERE p.id = ${placeId}`,
  );
  if (!place) return null;
  const result = emptyOutcome(fetch.ok);
  if (place.last_cycle_id === cycleId) return { ...result, applied: false };
  let seen: string[] = [];
  if (fetch.ok && !isStale(place.last_fetched_at, fetchStartedAt)) {
    const tracked = (place.tracked ?? []).map(toTracked);
    const detected = detectChanges({ tracked, fetch, now, settings });
    if (detected.events.length > 0 || detected.changes.length > 0) return null;
    seen = detected.seen;
  }
  // Bookkeeping only, so no wait for the WAL flush (as in the locked path below).
  const [written] = await queryPrepared<{ n: number }>(
    ctx.db,
    sql`WITH place AS (
          UPDATE places SET last_cycle_id = ${cycleId},
            last_fetched_at = GREATEST(last_fetched_at, ${fetchStartedAt}),
            last_ok_at = CASE WHEN ${fetch.ok} THEN ${now} ELSE last_ok_at END
          WHERE id = ${placeId} AND xmin::text = ${place.version}
            AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))
          RETURNING id),
        seen AS (
          UPDATE warnings SET last_seen = ${now}, misses = 0
          WHERE place_id IN (SELECT id FROM place)
            AND warning_id = ANY(${sql.param(seen)}::text[]))
        SELECT count(*)::int AS n FROM place`,
  );
  return written?.n === 1 ? result : null;
}

/** A delivery row a check owes, before it is inserted. */
export interface NewDelivery {
  subscriberId: string;
  eventId: number;
  cycleId: string;
  placeId: string;
  warningId: string;
  eventType: EventType;
  channel: Channel;
  nextAttemptAt: Date;
  firstJobId: string;
}

/** Bounded statements: one national storm can owe thousands of rows to one place. */
const DELIVERY_INSERT_CHUNK = 5000;

/**
 * Inserts delivery rows, skipping those that exist (DESIGN invariant 2), as one column array
 * per field: a statement of nine parameters, not nine per row, which a storm's checks spent
 * most of their time building and Postgres parsing.
 */
export async function insertDeliveries(
  tx: Tx,
  rows: readonly NewDelivery[],
): Promise<CreatedDelivery[]> {
  const created: CreatedDelivery[] = [];
  for (let i = 0; i < rows.length; i += DELIVERY_INSERT_CHUNK) {
    const chunk = rows.slice(i, i + DELIVERY_INSERT_CHUNK);
    const column = <T>(pick: (r: NewDelivery) => T) => sql.param(chunk.map(pick));
    const inserted = await queryRows<{ id: string; channel: Channel; first_job_id: string | null }>(
      tx,
      sql`INSERT INTO deliveries (subscriber_id, event_id, cycle_id, place_id, warning_id,
            event_type, channel, next_attempt_at, first_job_id)
          SELECT * FROM unnest(${column((r) => r.subscriberId)}::uuid[],
            ${column((r) => r.eventId)}::bigint[], ${column((r) => r.cycleId)}::uuid[],
            ${column((r) => r.placeId)}::text[], ${column((r) => r.warningId)}::text[],
            ${column((r) => r.eventType)}::text[], ${column((r) => r.channel)}::text[],
            ${column((r) => r.nextAttemptAt.toISOString())}::timestamptz[],
            ${column((r) => r.firstJobId)}::text[])
          ON CONFLICT DO NOTHING
          RETURNING id, channel, first_job_id`,
    );
    for (const r of inserted) {
      created.push({ id: r.id, channel: r.channel, firstJobId: r.first_job_id });
    }
  }
  return created;
}

/**
 * The check job: fetch the warnings of one place, detect what changed, and write warnings,
 * events and delivery rows in one transaction; enqueue the deliveries after the commit.
 */
export async function runCheck(ctx: PipelineContext, payload: CheckPayload): Promise<CheckOutcome> {
  const { cycleId, placeId } = payload;
  const log = ctx.logger.child({ job: CHECK_JOB, cycleId, placeId });
  const fetchStartedAt = ctx.now();

  let fetch: FetchOutcome;
  try {
    const answer = await ctx.upstream.warningNow({ location: placeId });
    fetch = { ok: true, warnings: answer.warnings };
    ctx.onUpstreamResult?.('warningNow', null);
  } catch (err) {
    // A failed call is never read as "the warning ended" (DESIGN invariant 3): detection does
    // not run, and the stored state stays as it was.
    fetch = { ok: false };
    ctx.onUpstreamResult?.('warningNow', err);
    log.warn({ err }, 'warning check failed');
  }
  const now = ctx.now();
  const settings = {
    ...DEFAULT_DETECT_SETTINGS,
    expireAfterMisses: ctx.config.expireAfterMisses,
  };

  let created: CreatedDelivery[] = [];
  const quiet = await applyQuietCheck(ctx, {
    cycleId,
    placeId,
    fetch,
    fetchStartedAt,
    now,
    settings,
  });
  const outcome =
    quiet ??
    (await ctx.db.transaction(async (tx) => {
      // Serializes checks of one place across processes and cycles.
      const [place] = await queryRows<{
        last_cycle_id: string | null;
        last_fetched_at: Date | null;
      }>(
        tx,
        sql`SELECT last_cycle_id, last_fetched_at FROM places WHERE id = ${placeId} FOR UPDATE`,
      );
      const result = emptyOutcome(fetch.ok);
      if (place?.last_cycle_id === cycleId) return { ...result, applied: false };
      if (fetch.ok && !isStale(place?.last_fetched_at, fetchStartedAt)) {
        const windowStart = new Date(now.getTime() - settings.reappearWindowMs);
        const tracked = await readTracked(tx, placeId, windowStart);
        const detected = detectChanges({ tracked, fetch, now, settings });
        await markSeen(tx, placeId, detected.seen, now);
        await writeWarnings(tx, placeId, detected.changes);
        created = await writeEventsAndDeliveries(tx, {
          cycleId,
          placeId,
          detected: detected.events,
          now,
        });
        result.deliveries = created.length;
        for (const e of detected.events) result.events[e.type] += 1;
      }

      await tx.execute(sql`
      UPDATE places SET last_cycle_id = ${cycleId},
        last_fetched_at = GREATEST(last_fetched_at, ${fetchStartedAt}),
        last_ok_at = CASE WHEN ${fetch.ok} THEN ${now} ELSE last_ok_at END
      WHERE id = ${placeId}`);
      if (Object.values(result.events).every((n) => n === 0)) {
        // A check that found nothing wrote only bookkeeping (last-seen times, misses): waiting
        // for its WAL flush was most of a quiet cycle's time. Losing such a commit in a database
        // crash only makes the next cycle check again. Checks that wrote events keep the durable
        // commit, so no deliver job is enqueued for a row that is not on disk.
        await tx.execute(sql`SET LOCAL synchronous_commit = off`);
      }
      return result;
    }));

  // After the commit: a crash here leaves rows without jobs, which the sweeper finds.
  await enqueueFirstAttempts(ctx.queues, created);
  if (outcome.applied) {
    // Every check of a cycle updates this one row. Inside the check's transaction its lock was
    // held across the client round trips up to COMMIT, so checks queued behind one another
    // (the bench's quiet cycle: 60-84 % of busy backend time waiting on this row's lock); in
    // the quiet check's own statement it still queued them (39 % of busy time). Counted after
    // the commit, many checks per statement (CycleCounter).
    await cycleCounterFor(ctx).count({
      cycleId,
      fetchOk: fetch.ok,
      events: outcome.events,
      deliveries: outcome.deliveries,
      now,
    });
  }
  const total = Object.values(outcome.events).reduce((a, b) => a + b, 0);
  if (total > 0 || !outcome.applied) {
    log.info(
      { events: outcome.events, deliveries: outcome.deliveries, applied: outcome.applied },
      'warnings checked',
    );
  }
  return outcome;
}
