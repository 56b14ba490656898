import { sql } from 'drizzle-orm';
import { queryPrepared, transaction, type Tx } from '../db/client.js';
import { chainOf } from '../domain/detect.js';
import { filterAccepts } from '../domain/filters.js';
import { subscriptionPointKeys } from '../domain/points.js';
import type { Warning } from '../domain/warning.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  enqueueInserted,
  insertNotifications,
  NOTHING_INSERTED,
  notifiedLevel,
  SUBSCRIBER_DELIVERY_COLUMNS,
  toFilter,
  type InsertedNotifications,
  type NewNotification,
  type SubscriptionRow,
  toldOf,
} from '../ledger/index.js';
import type { PolledSource } from '../detection/upstream-source.js';
import type { WarningRow } from '../detection/warning-store.js';

/**
 * Late joiners (README, promises): a subscription made, widened or brought back while warnings are
 * in force at its place is told them at the next cycle, as `warning.new` with
 * `inForceWhenSubscribed`. Detection tells only what changes, so without this a new desk heard
 * nothing of a red warning until its all-clear. Each cycle's poll takes the subscriptions whose
 * catch-up is pending (`subscriptions.catch_up`), tells each the open warnings where it watches
 * (its place for v7, its points for v1) that its filters let through and whose story it was not
 * told yet, and clears the flag, in one transaction per batch.
 */

/** Subscriptions one transaction catches up: a whole seed file of new desks goes in batches. */
const BATCH = 2000;

interface PendingRow extends SubscriptionRow {
  id: string;
  place_id: string;
  points: string[] | null;
  country: string | null;
  lat: number | null;
  lon: number | null;
  receives: boolean;
}

interface TrackedRow extends Pick<WarningRow, 'warning_id' | 'state' | 'record' | 'occurrence'> {
  key: string;
  attributions: string[] | null;
}

/** Catches up every pending subscription; returns what it told. */
export async function catchUpLateJoiners(
  ctx: PipelineContext,
  log: Logger,
  input: { cycleId: string; source: PolledSource },
): Promise<InsertedNotifications> {
  const told = NOTHING_INSERTED();
  for (let batch = 0; ; batch += 1) {
    const now = ctx.now();
    const result = await transaction(ctx.db, (tx) =>
      catchUpBatch(tx, { ...input, batch, now, mode: ctx.config.qweather.v1Points }),
    );
    await enqueueInserted(ctx, result.inserted, now);
    told.count += result.inserted.count;
    told.messages.push(...result.inserted.messages);
    told.releases.push(...result.inserted.releases);
    if (result.inserted.count > 0) {
      log.info(
        { subscriptions: result.subscriptions, notifications: result.inserted.count },
        'late joiners told the warnings in force',
      );
    }
    if (result.subscriptions < BATCH) return told;
  }
}

async function catchUpBatch(
  tx: Tx,
  input: {
    cycleId: string;
    source: PolledSource;
    batch: number;
    now: Date;
    mode: PipelineContext['config']['qweather']['v1Points'];
  },
): Promise<{ subscriptions: number; inserted: InsertedNotifications }> {
  // SKIP LOCKED: two pollers never tell the same desk twice, and neither waits on a seed that
  // is still writing its subscriptions.
  const pending = await queryPrepared<PendingRow>(
    tx,
    sql`SELECT s.id, s.subscriber_id, s.place_id, s.points, s.min_level, s.types, s.events,
          p.country, p.lat, p.lon, (u.active AND u.unsubscribed_at IS NULL) AS receives,
          ${SUBSCRIBER_DELIVERY_COLUMNS}
        FROM subscriptions s
        JOIN subscribers u ON u.id = s.subscriber_id
        LEFT JOIN places p ON p.id = s.place_id
        WHERE s.catch_up
        ORDER BY s.id
        LIMIT ${BATCH}
        FOR UPDATE OF s SKIP LOCKED`,
  );
  if (pending.length === 0) return { subscriptions: 0, inserted: NOTHING_INSERTED() };
  await queryPrepared(
    tx,
    sql`UPDATE subscriptions SET catch_up = false
        WHERE id = ANY(${sql.param(pending.map((p) => p.id))}::uuid[])`,
  );

  const keysOf = (sub: PendingRow): string[] =>
    input.source === 'v7' ? [sub.place_id] : subscriptionPointKeys(sub, sub.points, input.mode);
  const receiving = pending.filter((p) => p.receives);
  const keys = [...new Set(receiving.flatMap(keysOf))];
  if (keys.length === 0) return { subscriptions: pending.length, inserted: NOTHING_INSERTED() };
  const tracked = await queryPrepared<TrackedRow>(
    tx,
    sql`SELECT w.place_id AS key, w.warning_id, w.state, w.record, w.occurrence, a.attributions
        FROM warnings w LEFT JOIN alert_points a ON a.id = w.place_id
        WHERE w.place_id = ANY(${sql.param(keys)}::text[])
          AND w.last_seen > ${input.now}::timestamptz - interval '72 hours'`,
  );
  const inForce = tracked.filter((t) => t.state === 'open');
  if (inForce.length === 0) return { subscriptions: pending.length, inserted: NOTHING_INSERTED() };

  // Each warning's story as these places know it: who was told any of it knows it.
  const links = new Map<string, Warning>(
    tracked.map((t) => [t.warning_id, { ...t.record, raw: null }]),
  );

  const byKey = new Map<string, TrackedRow[]>();
  for (const t of inForce) byKey.set(t.key, [...(byKey.get(t.key) ?? []), t]);
  const candidates: { sub: PendingRow; warning: TrackedRow; chain: string[] }[] = [];
  const owed = new Set<string>();
  for (const sub of receiving) {
    for (const key of keysOf(sub)) {
      for (const t of byKey.get(key) ?? []) {
        const warning: Warning = { ...t.record, raw: null };
        if (!filterAccepts(toFilter(sub), { type: 'new', warning })) continue;
        const pair = `${sub.subscriber_id}\u0000${t.warning_id}`;
        if (owed.has(pair)) continue;
        owed.add(pair);
        candidates.push({ sub, warning: t, chain: chainOf(warning, links) });
      }
    }
  }
  const told = await toldOf(
    tx,
    candidates.map((c) => ({
      subscriberId: c.sub.subscriber_id,
      story: [c.warning.warning_id, ...c.chain],
    })),
  );
  const untold = candidates.filter((c) => {
    const story = new Set([c.warning.warning_id, ...c.chain]);
    return !(told.get(c.sub.subscriber_id) ?? []).some((t) => story.has(t.warningId));
  });
  if (untold.length === 0) return { subscriptions: pending.length, inserted: NOTHING_INSERTED() };

  // One event per place (or point) and warning for the cycle, beside its detected events: what
  // the notifications render, and how the cycle finds what it created.
  const announced = [
    ...new Map(untold.map((c) => [`${c.warning.key}\u0000${c.warning.warning_id}`, c])).values(),
  ];
  const events = await queryPrepared<{ id: number; place_id: string; warning_id: string }>(
    tx,
    sql`INSERT INTO events (cycle_id, place_id, warning_id, type, supersedes, record, attributions,
          occurrence, in_force, detected_at)
        SELECT ${input.cycleId}::uuid, e.key, e.warning_id, 'new', '{}', e.record, e.attributions,
          0, true, ${input.now}::timestamptz
        FROM jsonb_to_recordset(${JSON.stringify(
          announced.map((c) => ({
            key: c.warning.key,
            warning_id: c.warning.warning_id,
            record: c.warning.record,
            attributions: c.warning.attributions,
          })),
        )}::jsonb) AS e(key text, warning_id text, record jsonb, attributions text[])
        ON CONFLICT (cycle_id, place_id, warning_id) WHERE in_force
          DO UPDATE SET record = excluded.record
        RETURNING id, place_id, warning_id`,
  );
  const eventId = new Map(events.map((e) => [`${e.place_id}\u0000${e.warning_id}`, e.id]));
  const rows: NewNotification[] = untold.map(({ sub, warning, chain }) => ({
    subscriberId: sub.subscriber_id,
    eventId: eventId.get(`${warning.key}\u0000${warning.warning_id}`)!,
    cycleId: input.cycleId,
    placeId: sub.place_id,
    warningId: warning.warning_id,
    eventType: 'new',
    occurrence: 0,
    channel: sub.channel,
    scheduled: sub.scheduled,
    cycleOnly: sub.cycle_only,
    level: notifiedLevel({ ...warning.record, raw: null }),
    supersedes: [],
    chain,
  }));
  const inserted = await insertNotifications(tx, rows, {
    key: `${input.cycleId}_catchup${input.batch}`,
    now: input.now,
  });
  return { subscriptions: pending.length, inserted };
}
