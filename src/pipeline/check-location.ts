import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { queryPrepared, transaction, type Tx } from '../db/client.js';
import {
  detectChanges,
  type DetectSettings,
  type DetectResult,
  type FetchOutcome,
  type TrackedState,
} from '../domain/detect.js';
import { withEnglish } from '../domain/english.js';
import { filterAccepts } from '../domain/filters.js';
import type { Warning } from '../domain/warning.js';
import type { Logger } from '../logger.js';
import { expiryOwedToSubscriber } from '../domain/points.js';
import {
  tellTheStoryTold,
  insertNotifications,
  NOTHING_INSERTED,
  notifiedLevel,
  SUBSCRIBER_DELIVERY_COLUMNS,
  SUBSCRIBER_RECEIVES,
  toFilter,
  type InsertedNotifications,
  type NewNotification,
  type SubscriptionRow,
} from '../ledger/index.js';
import {
  commitLightlyIfNothingOwed,
  detectSettingsOf,
  finishCheck,
  emptyOutcome,
  isStale,
  logSkippedRecords,
  type CheckOutcome,
} from './check-outcome.js';
import type { PipelineContext } from '../runtime/context.js';
import { lockCheckedRow, quietChecksFor, type UnlockedRead } from './quiet-check.js';
import { isV7Retirement, weighRetirement } from './upstream-source.js';
import { UpstreamCircuitOpenError } from '../ops/upstream.js';
import {
  detectionWritesCte,
  eventKey,
  INSERTED_EVENTS,
  readTracked,
  toTracked,
  writeWarnings,
  type InsertedEvent,
} from './warning-store.js';

export const CHECK_JOB = 'check';

/**
 * When the check's cycle started: a miss counts only in a cycle that began after the warning
 * was last seen (src/domain/detect.ts, `countsAsMiss`). Jobs enqueued before it was carried
 * count their cycle as starting when they run.
 */
export const cycleStartedAtField = z.iso.datetime({ offset: true }).optional();

/** English subscribers watch the place or point: its warnings are asked for in English too. */
export const englishField = z.boolean().optional();

export const checkPayload = z.object({
  cycleId: z.string().uuid(),
  placeId: z.string().regex(/^[A-Za-z0-9]{1,32}$/),
  cycleStartedAt: cycleStartedAtField,
  english: englishField,
});
export type CheckPayload = z.infer<typeof checkPayload>;

/**
 * Writes a detection: the tracked warnings, the events and, for each event new to the store,
 * one delivery row per subscriber whose filters let it through. The unique constraints make a repeated event or delivery a no-op
 * (docs/design.md, invariant 2), whatever ran before.
 */
async function writeDetection(
  tx: Tx,
  input: { cycleId: string; placeId: string; detection: DetectResult; now: Date },
): Promise<InsertedNotifications> {
  const { detection } = input;
  if (detection.events.length === 0) {
    await writeWarnings(tx, input.placeId, detection, input.now);
    return NOTHING_INSERTED();
  }
  // The tracked warnings' writes, the events and, when any is new, the place's subscriptions,
  // in one statement: a storm's check made a dozen round trips, each a few hundred
  // microseconds of both processes' CPU.
  const found = await queryPrepared<
    { inserted: InsertedEvent[] } & (SubscriptionRow | { [column in keyof SubscriptionRow]: null })
  >(
    tx,
    sql`WITH ${detectionWritesCte(input.placeId, detection, {
      cycleId: input.cycleId,
      now: input.now,
      attributions: null,
    })},
        new_events AS (SELECT ${INSERTED_EVENTS} AS inserted)
        SELECT n.inserted, w.*
        FROM new_events n
        LEFT JOIN LATERAL (
          SELECT s.subscriber_id, s.min_level, s.types, s.events, ${SUBSCRIBER_DELIVERY_COLUMNS}
          FROM subscriptions s JOIN subscribers u ON u.id = s.subscriber_id
          WHERE s.place_id = ${input.placeId} AND ${SUBSCRIBER_RECEIVES}) w ON true
        WHERE n.inserted IS NOT NULL`,
  );
  const inserted = found[0]?.inserted ?? [];
  const subscriptions = found.filter(
    (row): row is typeof row & SubscriptionRow => row.subscriber_id !== null,
  );
  const byKey = new Map(detection.events.map((e) => [eventKey(e), e]));
  const rows: NewNotification[] = [];
  const ended = inserted.flatMap((e) => (e.type === 'expired' ? [e.warning_id] : []));
  const endedElsewhere =
    ended.length > 0
      ? await notEndedElsewhere(
          tx,
          input.placeId,
          ended,
          subscriptions.map((s) => s.subscriber_id),
        )
      : new Set<string>();
  for (const event of inserted) {
    const detected = byKey.get(eventKey(event));
    if (!detected) continue;
    for (const sub of subscriptions) {
      if (!filterAccepts(toFilter(sub), { type: detected.type, warning: detected.warning })) {
        continue;
      }
      // The same v7 id at two of their places: it ends for them when it ends at both.
      if (
        detected.type === 'expired' &&
        endedElsewhere.has(`${sub.subscriber_id}\u0000${detected.warningId}`)
      ) {
        continue;
      }
      rows.push({
        subscriberId: sub.subscriber_id,
        eventId: event.id,
        cycleId: input.cycleId,
        placeId: input.placeId,
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
  return insertNotifications(tx, await tellTheStoryTold(tx, rows), {
    key: `${input.cycleId}_${input.placeId}`,
    now: input.now,
  });
}

/**
 * The (subscriber, warning id) pairs, as `subscriber\0warning`, for which a warning that ended
 * at `placeId` is still tracked at another place the subscriber watches and not ended there
 * (`expiryOwedToSubscriber`): its end there will be their all-clear (README, promises).
 */
async function notEndedElsewhere(
  tx: Tx,
  placeId: string,
  warningIds: readonly string[],
  subscriberIds: readonly string[],
): Promise<Set<string>> {
  if (subscriberIds.length === 0) return new Set();
  const rows = await queryPrepared<{
    subscriber_id: string;
    warning_id: string;
    states: TrackedState[];
  }>(
    tx,
    sql`SELECT s.subscriber_id, w.warning_id, array_agg(w.state) AS states
        FROM warnings w
        JOIN subscriptions s ON s.place_id = w.place_id
        WHERE w.warning_id = ANY(${sql.param([...warningIds])}::text[])
          AND w.place_id <> ${placeId}
          AND s.subscriber_id = ANY(${sql.param([...new Set(subscriberIds)])}::uuid[])
        GROUP BY s.subscriber_id, w.warning_id`,
  );
  return new Set(
    rows
      .filter((r) => !expiryOwedToSubscriber(r.states))
      .map((r) => `${r.subscriber_id}\u0000${r.warning_id}`),
  );
}

/**
 * Most checks change nothing: the answer holds the warnings already stored, or the call failed.
 * Such a check reads the place and its tracked warnings without a lock, and writes its
 * bookkeeping (last-seen times, the place's cycle and fetch times) only if the place row is
 * still the version it read (`xmin`), each with other checks of the process in one statement
 * (`QuietChecks`). Every check that writes warnings also updates its place row, so another
 * check in between makes the write a no-op and this returns `read: null`: the locked
 * transaction then does the check as before. When the answer changes anything it returns what
 * it read, which saves a locked check that finds the same row version a second read.
 */
async function applyQuietCheck(
  ctx: PipelineContext,
  input: {
    cycleId: string;
    placeId: string;
    fetch: FetchOutcome;
    fetchStartedAt: Date;
    cycleStartedAt: Date;
    now: Date;
    settings: DetectSettings;
  },
): Promise<{ outcome: CheckOutcome } | { read: UnlockedRead | null }> {
  const { cycleId, placeId, fetch, fetchStartedAt, cycleStartedAt, now, settings } = input;
  const checks = quietChecksFor(ctx, 'places');
  const place = await checks.read(placeId, new Date(now.getTime() - settings.reappearWindowMs));
  if (!place) return { read: null };
  const result = emptyOutcome(fetch.ok, skippedOf(fetch));
  if (place.last_cycle_id === cycleId) return { outcome: { ...result, applied: false } };
  const tracked = (place.tracked ?? []).map(toTracked);
  const read = { version: place.version, tracked };
  let seen: string[] = [];
  if (fetch.ok && !isStale(place.last_fetched_at, fetchStartedAt)) {
    const detected = detectChanges({ tracked, fetch, now, cycleStartedAt, settings });
    if (detected.events.length > 0 || detected.changes.length > 0)
      return { read: { ...read, detected } };
    seen = detected.seen;
  }
  const applied = await checks.write({
    cycleId,
    key: placeId,
    fetchOk: fetch.ok,
    fetchStartedAt,
    now,
    version: place.version,
    seen,
  });
  return applied ? { outcome: result } : { read: null };
}

/**
 * The check job: fetch the warnings of one place, detect what changed, and write warnings,
 * events and delivery rows in one transaction; enqueue the deliveries after the commit.
 */
export async function runCheck(ctx: PipelineContext, payload: CheckPayload): Promise<CheckOutcome> {
  const { cycleId, placeId } = payload;
  const log = ctx.logger.child({ job: CHECK_JOB, cycleId, placeId });
  const fetchStartedAt = ctx.now();
  const cycleStartedAt = payload.cycleStartedAt ? new Date(payload.cycleStartedAt) : fetchStartedAt;

  let fetch: FetchOutcome;
  let englishCalls = 0;
  try {
    const answer = await ctx.upstream.warningNow({ location: placeId });
    fetch = { ok: true, warnings: answer.warnings, skipped: answer.skipped.length };
    logSkippedRecords(log, answer.skipped);
    ctx.onUpstreamResult?.('warningNow', null);
    if (payload.english) {
      englishCalls = 1;
      fetch = await inEnglishToo(
        ctx,
        log,
        fetch,
        'warningNow',
        async () => (await ctx.upstream.warningNow({ location: placeId, lang: 'en' })).warnings,
      );
    }
  } catch (err) {
    // A failed call is never read as "the warning ended" (docs/design.md, invariant 3): detection does
    // not run, and the stored state stays as it was.
    fetch = { ok: false };
    if (ctx.config.qweather.alertSource === 'auto' && isV7Retirement(err)) {
      // QWeather retired v7 (docs/configuration.md): evidence for this cycle; after three cycles in
      // a row the next cycle polls v1.
      await weighRetirement(ctx.db, log, { cycleId, operation: 'warningNow', err, now: ctx.now() });
    } else {
      ctx.onUpstreamResult?.('warningNow', err);
      if (err instanceof UpstreamCircuitOpenError) log.debug({ err }, 'warning check held back');
      else log.warn({ err }, 'warning check failed');
    }
  }
  const now = ctx.now();
  const settings = detectSettingsOf(ctx.config);

  let created = NOTHING_INSERTED();
  const quiet = await applyQuietCheck(ctx, {
    cycleId,
    placeId,
    fetch,
    fetchStartedAt,
    cycleStartedAt,
    now,
    settings,
  });
  const outcome =
    'outcome' in quiet
      ? quiet.outcome
      : await transaction(ctx.db, async (tx) => {
          // Serializes checks of one place and writes its bookkeeping (`lockCheckedRow`).
          const [place] = await queryPrepared<{
            version: string;
            last_cycle_id: string | null;
            last_fetched_at: Date | null;
          }>(
            tx,
            lockCheckedRow('places', {
              cycleId,
              key: placeId,
              fetchOk: fetch.ok,
              fetchStartedAt,
              now,
            }),
          );
          const result = emptyOutcome(fetch.ok, skippedOf(fetch));
          if (place?.last_cycle_id === cycleId) return { ...result, applied: false };
          if (fetch.ok && !isStale(place?.last_fetched_at, fetchStartedAt)) {
            const windowStart = new Date(now.getTime() - settings.reappearWindowMs);
            // Every check that writes a place's warnings updates its row in the same transaction,
            // so the same row version means the same tracked warnings as the unlocked read saw:
            // a storm's checks save that second read, and the detection it made of this answer.
            const read = quiet.read && quiet.read.version === place?.version ? quiet.read : null;
            const detected =
              read?.detected ??
              detectChanges({
                tracked: read ? read.tracked : await readTracked(tx, placeId, windowStart),
                fetch,
                now,
                cycleStartedAt,
                settings,
              });
            created = await writeDetection(tx, { cycleId, placeId, detection: detected, now });
            result.deliveries = created.count;
            for (const e of detected.events) result.events[e.type] += 1;
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
    said: 'warnings checked',
  });
  return outcome;
}

/**
 * A successful answer with the English texts of its warnings (src/domain/english.ts). A failed
 * English call costs only the English: the answer stands, and its subscribers read type and
 * level in English with the original text.
 */
export async function inEnglishToo(
  ctx: PipelineContext,
  log: Logger,
  fetch: Extract<FetchOutcome, { ok: true }>,
  operation: string,
  english: () => Promise<readonly Warning[]>,
): Promise<FetchOutcome> {
  try {
    const warnings = withEnglish(fetch.warnings, await english());
    ctx.onUpstreamResult?.(operation, null);
    return { ...fetch, warnings };
  } catch (err) {
    ctx.onUpstreamResult?.(operation, err);
    log.info({ err }, 'english texts not fetched');
    return fetch;
  }
}

/** Records of a successful answer that could not be read; 0 for a failed call. */
export function skippedOf(fetch: FetchOutcome): number {
  return fetch.ok ? (fetch.skipped ?? 0) : 0;
}
