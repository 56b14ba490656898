import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { queryPrepared, transaction, type Tx } from '../db/client.js';
import {
  detectChanges,
  NO_EVENTS,
  type DetectResult,
  type EventType,
  type FetchOutcome,
  type TrackedWarning,
} from '../domain/detect.js';
import type { Warning } from '../domain/warning.js';
import { filterAccepts } from '../domain/filters.js';
import { continueHandedOver } from '../domain/handover.js';
import {
  expiryOwedToSubscriber,
  parsePointKey,
  POINT_KEY_PATTERN,
  type Point,
  type V1PointsMode,
} from '../domain/points.js';
import { UpstreamCircuitOpenError } from '../ops/upstream.js';
import {
  commitLightlyIfNothingOwed,
  detectSettingsOf,
  finishCheck,
  emptyOutcome,
  isStale,
  logSkippedRecords,
  type CheckOutcome,
} from './check-outcome.js';
import { cycleStartedAtField, englishField, inEnglishToo, skippedOf } from './check-location.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  insertNotifications,
  NOTHING_INSERTED,
  notifiedLevel,
  toFilter,
  type InsertedNotifications,
  type NewNotification,
  tellTheStoryTold,
} from '../ledger/index.js';
import { adoptV7Warnings } from './handover.js';
import {
  statesElsewhere,
  subscriptionsAt,
  subscriptionsNear,
  watchesPoint,
  type PointSubscriptionRow,
} from './point-subscriptions.js';
import { lockCheckedRow, quietChecksFor, type UnlockedRead } from './quiet-check.js';
import {
  detectionWritesCte,
  eventKey,
  INSERTED_EVENTS,
  readTracked,
  toTracked,
  writeWarnings,
  type InsertedEvent,
} from './warning-store.js';

/**
 * The v1 check (QWEATHER_ALERT_SOURCE=v1, or auto once v7 is retired): one watched point, `GET /weatheralert/v1/current/
 * {lat}/{lon}`, detection against the alerts tracked at that point, and one transaction writing
 * warnings, events and delivery rows, as `runCheck` does for a v7 place.
 *
 * One alert id is returned at every point of its area, so alerts are tracked per point (each
 * point's misses and chain links are its own) while notifications are keyed per subscriber:
 * the ledger's unique (subscriber, warning id, event type) makes the second point that reports
 * an alert to the same subscriber a no-op. Two rules keep the points from contradicting each
 * other (see docs/v1.md):
 * - every point check takes a transaction-scoped advisory lock per alert id it has events for,
 *   in id order, so checks of different points that report the same alert are serialized;
 * - `expired` goes to a subscriber only when the alert is over at every point they watch
 *   (`expiryOwedToSubscriber`).
 */

/** Runs on the `check` queue: the v1 counterpart of `checkPayload`, told apart by `pointId`. */
export const checkPointPayload = z.object({
  cycleId: z.string().uuid(),
  pointId: z.string().regex(POINT_KEY_PATTERN),
  cycleStartedAt: cycleStartedAtField,
  english: englishField,
});
export type CheckPointPayload = z.infer<typeof checkPointPayload>;

const OPERATION = 'weatherAlert';

interface PointRow {
  version: string;
  last_cycle_id: string | null;
  last_fetched_at: Date | null;
  last_tag: string | null;
  v7_adopted_at: Date | null;
}

interface PointAnswer {
  tag: string | null;
  attributions: string[];
}

/** One check of a point: the call's outcome and when it was made. */
interface PointCheck {
  cycleId: string;
  point: Point;
  fetch: FetchOutcome;
  answer: PointAnswer;
  fetchStartedAt: Date;
  cycleStartedAt: Date;
  now: Date;
}

/**
 * Takes each alert's transaction-scoped lock, in the order given (sorted by the caller), in one
 * round trip: `unnest` yields the ids in array order and each row's lock is taken as it is
 * produced. Namespaced so that no other advisory lock of qwn (migrate, seed) can collide.
 */
async function lockAlerts(tx: Tx, sortedIds: readonly string[]): Promise<void> {
  if (sortedIds.length === 0) return;
  await queryPrepared(
    tx,
    sql`SELECT pg_advisory_xact_lock(hashtextextended('qwn-alert/' || id, 0))
        FROM unnest(${sql.param(sortedIds)}::text[]) AS id`,
  );
}

/**
 * The events of `alertIds` that cycle `cycleId` has written at points other than `pointKey`:
 * those alerts are not news for the cycle's counters. Exported for the test that holds it to
 * the alerts' own rows (test/db/v1-check-plans.int.test.ts).
 */
export function reportedElsewhere(
  cycleId: string,
  pointKey: string,
  alertIds: readonly string[],
): SQL {
  return sql`SELECT DISTINCT warning_id, type, occurrence FROM events
    WHERE cycle_id = ${cycleId} AND place_id <> ${pointKey}
      AND warning_id = ANY(${sql.param(alertIds)}::text[])`;
}

/**
 * Writes a detection at this point: its warnings, its events and the delivery rows they owe.
 * Returns the new delivery ids and the events that are news for this cycle (the first report of
 * an alert id and type in the cycle, whichever point made it), which is what the cycle's
 * counters count.
 *
 * The warnings' writes, the events, the other points' reports of these alerts and, when any
 * event is new, the subscriptions at the point go in one prepared statement, as in a v7 check
 * (`writeDetection`, src/pipeline/check-location.ts): as separate statements they were four
 * round trips, each planned anew. The other points' reports are read in the same snapshot as
 * the insert: every check that reports these alerts and committed before this one took their
 * locks (`lockAlerts`) is in it.
 */
async function writePointDetection(
  tx: Tx,
  input: {
    cycleId: string;
    point: Point;
    detection: DetectResult;
    attributions: string[];
    now: Date;
    mode: V1PointsMode;
  },
): Promise<{ created: InsertedNotifications; counted: Record<EventType, number> }> {
  const counted = NO_EVENTS();
  const { detection, point } = input;
  if (detection.events.length === 0) {
    await writeWarnings(tx, point.key, detection, input.now);
    return { created: NOTHING_INSERTED(), counted };
  }
  const alertIds = [...new Set(detection.events.map((e) => e.warningId))];
  const found = await queryPrepared<
    {
      inserted: InsertedEvent[];
      elsewhere: { warning_id: string; type: EventType; occurrence: number }[] | null;
    } & (PointSubscriptionRow | { [column in keyof PointSubscriptionRow]: null })
  >(
    tx,
    sql`WITH ${detectionWritesCte(point.key, detection, {
      cycleId: input.cycleId,
      now: input.now,
      attributions: input.attributions,
    })},
        news AS (
          SELECT ${INSERTED_EVENTS} AS inserted,
            (SELECT json_agg(json_build_object('warning_id', warning_id, 'type', type,
                'occurrence', occurrence))
              FROM (${reportedElsewhere(input.cycleId, point.key, alertIds)}) e) AS elsewhere)
        SELECT n.inserted, n.elsewhere, w.*
        FROM news n
        LEFT JOIN LATERAL (${subscriptionsNear(point)}) w ON true
        WHERE n.inserted IS NOT NULL
        ORDER BY w.subscriber_id, w.place_id`,
  );
  const inserted = found[0]?.inserted ?? [];
  if (inserted.length === 0) return { created: NOTHING_INSERTED(), counted };
  const already = new Set(
    (found[0]?.elsewhere ?? []).map((r) => `${r.type}\u0000${r.warning_id}\u0000${r.occurrence}`),
  );
  const subscriptions = found.filter(
    (row): row is typeof row & PointSubscriptionRow =>
      row.subscriber_id !== null && watchesPoint(row, point, input.mode),
  );
  const byKey = new Map(detection.events.map((e) => [eventKey(e), e]));
  const rows: NewNotification[] = [];
  for (const event of inserted) {
    const key = eventKey(event);
    const detected = byKey.get(key);
    if (!detected) continue;
    if (!already.has(key)) counted[detected.type] += 1;

    // One row per subscriber even when several of their places share this point; the first
    // place (by id) that lets the event through names the location in the message.
    const chosen = new Map<string, PointSubscriptionRow>();
    for (const sub of subscriptions) {
      if (chosen.has(sub.subscriber_id)) continue;
      if (filterAccepts(toFilter(sub), { type: detected.type, warning: detected.warning })) {
        chosen.set(sub.subscriber_id, sub);
      }
    }
    if (detected.type === 'expired' && chosen.size > 0) {
      const elsewhere = await statesElsewhere(
        tx,
        point,
        detected.warningId,
        [...chosen.keys()],
        input.mode,
      );
      for (const [subscriberId, states] of elsewhere) {
        if (!expiryOwedToSubscriber(states)) chosen.delete(subscriberId);
      }
    }
    for (const sub of chosen.values()) {
      rows.push({
        subscriberId: sub.subscriber_id,
        eventId: event.id,
        cycleId: input.cycleId,
        placeId: sub.place_id,
        warningId: detected.warningId,
        eventType: detected.type,
        occurrence: detected.occurrence,
        channel: sub.channel,
        scheduled: sub.scheduled,
        cycleOnly: sub.cycle_only,
        level: notifiedLevel(detected.warning),
        supersedes: detected.supersedes,
        chain: detected.chain,
      });
    }
  }
  const created = await insertNotifications(tx, await tellTheStoryTold(tx, rows), {
    key: `${input.cycleId}_${point.key}`,
    now: input.now,
  });
  return { created, counted };
}

/**
 * The same tag means the same alerts as the last applied answer: nothing to diff. Unless an open
 * warning is missing from it: each answer of a later cycle without it may be one more miss
 * (src/domain/detect.ts, `countsAsMiss`), whatever the tag.
 */
function sameAnswerAsApplied(
  answer: PointAnswer,
  lastTag: string | null | undefined,
  tracked: readonly TrackedWarning[],
  alerts: readonly Warning[],
): boolean {
  if (answer.tag === null || answer.tag !== lastTag) return false;
  const present = new Set(alerts.map((w) => w.id));
  return tracked.every((t) => t.state !== 'open' || present.has(t.id));
}

export class InvalidPointError extends Error {
  override name = 'InvalidPointError';
}

/**
 * A point check that changes nothing, without the point's lock: its answer has the tag of the
 * last applied one and no alert there waits for its end to be confirmed (the locked path's
 * `unchangedTag`), or the call failed, or the answer is older than one already applied. Such a
 * check writes only what the locked path would: the point's bookkeeping (its cycle, fetch times,
 * and the answer's tag and attributions when it applies one) and the last-seen times of the
 * alerts it saw, with other checks of the process in one statement (`QuietChecks`), and only if
 * the point row is still the version it read. Every check that writes a point's warnings also
 * updates its row, the adoption of v7's warnings included, so a check in between sends this one
 * down the locked path. So does a point without a row yet, one that has not adopted v7's
 * warnings, and any other answer: `read`, with what this read saw when the locked path may use
 * it (its row version and tracked warnings), else null.
 */
async function applyQuietPointCheck(
  ctx: PipelineContext,
  input: PointCheck & { windowStart: Date },
): Promise<{ outcome: CheckOutcome; unchangedTag: boolean } | { read: UnlockedRead | null }> {
  const { cycleId, point, fetch, answer, fetchStartedAt, now } = input;
  const checks = quietChecksFor(ctx, 'alert_points');
  const row = await checks.read(point.key, input.windowStart);
  if (!row) return { read: null };
  const result = emptyOutcome(fetch.ok, skippedOf(fetch));
  if (row.last_cycle_id === cycleId) {
    return { outcome: { ...result, applied: false }, unchangedTag: false };
  }
  const apply = fetch.ok && !isStale(row.last_fetched_at, fetchStartedAt);
  let seen: string[] = [];
  if (apply) {
    if (!row.v7_adopted_at) return { read: null };
    const tracked = (row.tracked ?? []).map(toTracked);
    const alerts = continueHandedOver(tracked, fetch.warnings);
    if (!sameAnswerAsApplied(answer, row.last_tag, tracked, alerts)) {
      return { read: { version: row.version, tracked } };
    }
    seen = alerts.map((w) => w.id);
  }
  const applied = await checks.write({
    cycleId,
    key: point.key,
    fetchOk: fetch.ok,
    fetchStartedAt,
    now,
    version: row.version,
    seen,
    answer: apply ? answer : null,
  });
  return applied ? { outcome: result, unchangedTag: apply } : { read: null };
}

/**
 * Locks the point's row for this check and writes its bookkeeping (`lockCheckedRow`), the
 * answer's tag and attributions with it when the answer applies. The poll creates the row; a
 * check enqueued by an older cycle may find none yet, and inserts it first.
 */
async function lockPoint(tx: Tx, input: PointCheck): Promise<PointRow> {
  const { cycleId, point, fetch, answer, fetchStartedAt, now } = input;
  const statement = lockCheckedRow('alert_points', {
    cycleId,
    key: point.key,
    fetchOk: fetch.ok,
    fetchStartedAt,
    now,
    answer,
  });
  const [row] = await queryPrepared<PointRow>(tx, statement);
  if (row) return row;
  await tx.execute(sql`
    INSERT INTO alert_points (id, lat, lon)
    VALUES (${point.key}, ${point.lat}, ${point.lon})
    ON CONFLICT (id) DO NOTHING`);
  const [created] = await queryPrepared<PointRow>(tx, statement);
  if (!created) throw new Error(`alert point ${point.key} vanished inside its own check`);
  return created;
}

/**
 * The v1 check job: fetch the alerts at one point (local times), detect what changed there, and
 * write warnings, events and delivery rows in one transaction; enqueue deliveries after commit.
 */
export async function runCheckPoint(
  ctx: PipelineContext,
  payload: CheckPointPayload,
): Promise<CheckOutcome> {
  const { cycleId, pointId } = payload;
  const point = parsePointKey(pointId);
  if (!point) throw new InvalidPointError(`"${pointId}" is not a point key`);
  const log = ctx.logger.child({ job: 'check', cycleId, pointId });
  const fetchStartedAt = ctx.now();
  const cycleStartedAt = payload.cycleStartedAt ? new Date(payload.cycleStartedAt) : fetchStartedAt;

  let fetch: FetchOutcome;
  let englishCalls = 0;
  let answer: PointAnswer = { tag: null, attributions: [] };
  try {
    const result = await ctx.upstream.weatherAlert({
      lat: point.lat,
      lon: point.lon,
      // Times with the point's own offset: what a subscriber there reads on the message.
      localTime: true,
    });
    fetch = { ok: true, warnings: result.alerts, skipped: result.skipped.length };
    logSkippedRecords(log, result.skipped);
    if (payload.english) {
      englishCalls = 1;
      fetch = await inEnglishToo(
        ctx,
        log,
        fetch,
        OPERATION,
        async () =>
          (
            await ctx.upstream.weatherAlert({
              lat: point.lat,
              lon: point.lon,
              localTime: true,
              lang: 'en',
            })
          ).alerts,
      );
    }
    answer = { tag: result.tag, attributions: result.attributions };
    ctx.onUpstreamResult?.(OPERATION, null);
  } catch (err) {
    // docs/design.md invariant 3: a failed call says nothing; the stored state stays as it was.
    fetch = { ok: false };
    ctx.onUpstreamResult?.(OPERATION, err);
    // Held back by the upstream circuit (src/ops/upstream.ts): the refusal that opened it was
    // logged when it happened, and a line per point per cycle would bury it.
    if (err instanceof UpstreamCircuitOpenError) log.debug({ err }, 'alert check held back');
    else log.warn({ err }, 'alert check failed');
  }
  const now = ctx.now();
  const settings = detectSettingsOf(ctx.config);
  const mode = ctx.config.qweather.v1Points;

  let unchangedTag = false;
  let created = NOTHING_INSERTED();
  const windowStart = new Date(now.getTime() - settings.reappearWindowMs);
  const quiet = await applyQuietPointCheck(ctx, {
    cycleId,
    point,
    fetch,
    answer,
    fetchStartedAt,
    cycleStartedAt,
    now,
    windowStart,
  });
  if ('outcome' in quiet) unchangedTag = quiet.unchangedTag;
  const outcome =
    'outcome' in quiet
      ? quiet.outcome
      : await transaction(ctx.db, async (tx) => {
          const row = await lockPoint(tx, {
            cycleId,
            point,
            fetch,
            answer,
            fetchStartedAt,
            cycleStartedAt,
            now,
          });
          const result = emptyOutcome(fetch.ok, skippedOf(fetch));
          if (row.last_cycle_id === cycleId) return { ...result, applied: false };
          const apply = fetch.ok && !isStale(row.last_fetched_at, fetchStartedAt);

          if (fetch.ok && apply) {
            const adopting = row.v7_adopted_at === null;
            if (adopting) {
              // The first applied v1 answer here: take over what v7 left open
              // (src/pipeline/handover.ts).
              const watching = await subscriptionsAt(tx, point, mode);
              await adoptV7Warnings(
                tx,
                point,
                watching.map((sub) => sub.place_id),
                now,
              );
            }
            // Every check that writes a point's warnings updates its row in the same transaction,
            // so the same row version means the same tracked warnings as the unlocked read saw (as
            // in runCheck). An adoption has just written warnings that read did not see.
            const tracked =
              !adopting && quiet.read && quiet.read.version === row.version
                ? quiet.read.tracked
                : await readTracked(tx, point.key, windowStart);
            // Alerts that continue a warning told from v7 carry its id (src/domain/handover.ts).
            const alerts = continueHandedOver(tracked, fetch.warnings);
            unchangedTag = !adopting && sameAnswerAsApplied(answer, row.last_tag, tracked, alerts);
            if (unchangedTag) {
              await writeWarnings(
                tx,
                point.key,
                { seen: alerts.map((w) => w.id), changes: [] },
                now,
              );
            } else {
              const detected = detectChanges({
                tracked,
                fetch: { ok: true, warnings: alerts, skipped: skippedOf(fetch) },
                now,
                cycleStartedAt,
                settings,
              });
              // Before any write: a check of another point reporting the same alert, or an
              // earlier alert of its story, waits here, then sees what this one committed (the
              // expiry rule reads other points' states, the story what each subscriber was told).
              await lockAlerts(
                tx,
                [...new Set(detected.events.flatMap((e) => [e.warningId, ...e.chain]))].sort(),
              );
              const written = await writePointDetection(tx, {
                cycleId,
                point,
                detection: detected,
                attributions: answer.attributions,
                now,
                mode,
              });
              created = written.created;
              result.deliveries = created.count;
              result.events = written.counted;
            }
          }

          await commitLightlyIfNothingOwed(tx, result);
          return result;
        });
  await finishCheck(ctx, log, {
    cycleId,
    outcome,
    created,
    englishCalls,
    now,
    said: 'alerts checked',
    fields: { unchangedTag },
  });
  return outcome;
}
