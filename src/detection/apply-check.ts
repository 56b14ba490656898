import { sql } from 'drizzle-orm';
import { queryPrepared, transaction, type Tx } from '../db/client.js';
import { PreparedStatement } from '../db/prepared.js';
import {
  detectChanges,
  NO_EVENTS,
  type DetectResult,
  type DetectSettings,
  type EventType,
  type FetchOutcome,
  type TrackedWarning,
} from '../domain/detect.js';
import { filterAccepts } from '../domain/filters.js';
import { expiryOwedToSubscriber } from '../domain/points.js';
import type { Warning } from '../domain/warning.js';
import {
  insertNotifications,
  leasedChannels,
  notifiedLevel,
  NOTHING_INSERTED,
  tellTheStoryTold,
  toFilter,
  type Channel,
  type InsertedNotifications,
  type KnownEvent,
  type NewNotification,
} from '../ledger/index.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  commitLightlyIfNothingOwed,
  detectSettingsOf,
  emptyOutcome,
  finishCheck,
  isStale,
  skippedOf,
  type CheckOutcome,
} from './check-outcome.js';
import {
  subscriberWarning,
  type AnswerTag,
  type CheckSubject,
  type Watcher,
} from './check-subject.js';
import { lockCheckedRow, quietChecksFor, type UnlockedRead } from './quiet-check.js';
import {
  detectionWritesCte,
  eventKey,
  INSERTED_EVENTS,
  readTracked,
  toTracked,
  withoutRaw,
  writeWarnings,
  type InsertedEvent,
} from './warning-store.js';

export const CHECK_JOB = 'check';

/** One check of a subject: what its call brought and when, and the cycle it belongs to. */
interface Check {
  cycleId: string;
  fetch: FetchOutcome;
  answer: AnswerTag | null;
  fetchStartedAt: Date;
  cycleStartedAt: Date;
  now: Date;
  settings: DetectSettings;
  /** Warnings last seen before it are no longer tracked (the reappear window). */
  windowStart: Date;
  /** The channels whose first attempts this process sends itself (`leasedChannels`). */
  leased: readonly Channel[];
}

/**
 * The check of a v7 place or a v1 point: fetch its warnings, detect what changed, and write
 * warnings, events and the notifications they owe in one transaction; enqueue the first
 * attempts after the commit (`finishCheck`).
 */
export async function applyCheck(
  ctx: PipelineContext,
  subject: CheckSubject,
  job: { cycleId: string; cycleStartedAt?: string | undefined; english?: boolean | undefined },
): Promise<CheckOutcome> {
  const { cycleId } = job;
  const log = ctx.logger.child({ job: CHECK_JOB, cycleId, ...subject.logFields });
  const fetchStartedAt = ctx.now();
  const { fetch, answer, englishCalls } = await subject.fetch(ctx, log, {
    cycleId,
    english: job.english === true,
  });
  const now = ctx.now();
  const settings = detectSettingsOf(ctx.config);
  const check: Check = {
    cycleId,
    fetch,
    answer,
    fetchStartedAt,
    // A check enqueued before the field was carried counts its cycle as starting when it runs.
    cycleStartedAt: job.cycleStartedAt ? new Date(job.cycleStartedAt) : fetchStartedAt,
    now,
    settings,
    windowStart: new Date(now.getTime() - settings.reappearWindowMs),
    leased: leasedChannels(ctx),
  };

  const quiet = await checkQuietly(ctx, subject, check);
  const { outcome, created } =
    'outcome' in quiet
      ? { outcome: quiet.outcome, created: NOTHING_INSERTED() }
      : await transaction(ctx.db, (tx) => checkLocked(tx, subject, check, quiet.read));
  await finishCheck(ctx, log, { cycleId, outcome, created, englishCalls, now, said: subject.said });
  return outcome;
}

/**
 * What detection makes of an answer against the warnings tracked at the subject: `seen` when it
 * changes nothing but their last-seen times, else the detection. v1's tag spares detecting an
 * answer that is the one last applied, unless an open warning is missing from it: each answer
 * of a later cycle without it may be one more miss (src/domain/detect.ts, `countsAsMiss`).
 */
function examine(
  subject: CheckSubject,
  check: Check,
  fetch: Extract<FetchOutcome, { ok: true }>,
  lastTag: string | null | undefined,
  tracked: readonly TrackedWarning[],
): { seen: string[] } | { detected: DetectResult } {
  const warnings = subject.continuing(tracked, fetch.warnings);
  if (sameAnswerAsApplied(check.answer, lastTag, tracked, warnings)) {
    return { seen: warnings.map((w) => w.id) };
  }
  const detected = detectChanges({
    tracked: [...tracked],
    fetch: { ok: true, warnings, skipped: skippedOf(fetch) },
    now: check.now,
    cycleStartedAt: check.cycleStartedAt,
    settings: check.settings,
  });
  if (detected.events.length === 0 && detected.changes.length === 0) {
    return { seen: detected.seen };
  }
  return { detected };
}

function sameAnswerAsApplied(
  answer: AnswerTag | null,
  lastTag: string | null | undefined,
  tracked: readonly TrackedWarning[],
  warnings: readonly Warning[],
): boolean {
  if (!answer || answer.tag === null || answer.tag !== lastTag) return false;
  const present = new Set(warnings.map((w) => w.id));
  return tracked.every((t) => t.state !== 'open' || present.has(t.id));
}

/**
 * Most checks change nothing: the answer holds the warnings already stored, or the call failed.
 * Such a check reads its row and tracked warnings without a lock, and writes its bookkeeping
 * (last-seen times, the row's cycle, fetch times and v1's tag) only if the row is still the
 * version it read (`xmin`), each with other checks of the process in one statement
 * (`QuietChecks`). Every check that writes warnings also updates its row, so another check in
 * between makes the write a no-op and this returns `read: null`: the locked transaction then
 * does the check. When the answer changes anything it returns what it detected, which the
 * locked check takes when it finds the same row version. So does a row that is missing or has
 * yet to adopt v7's warnings.
 */
async function checkQuietly(
  ctx: PipelineContext,
  subject: CheckSubject,
  check: Check,
): Promise<{ outcome: CheckOutcome } | { read: UnlockedRead | null }> {
  const { cycleId, fetch } = check;
  const checks = quietChecksFor(ctx, subject.table);
  const row = await checks.read(subject.key, check.windowStart);
  if (!row) return { read: null };
  const result = emptyOutcome(fetch.ok, skippedOf(fetch));
  if (row.last_cycle_id === cycleId) return { outcome: { ...result, applied: false } };
  const apply = fetch.ok && !isStale(row.last_fetched_at, check.fetchStartedAt);
  let seen: string[] = [];
  if (fetch.ok && apply) {
    if (subject.mustAdopt(row)) return { read: null };
    const tracked = (row.tracked ?? []).map(toTracked);
    const examined = examine(subject, check, fetch, row.last_tag, tracked);
    if ('detected' in examined) return { read: { version: row.version, ...examined } };
    seen = examined.seen;
  }
  const applied = await checks.write({
    cycleId,
    key: subject.key,
    fetchOk: fetch.ok,
    fetchStartedAt: check.fetchStartedAt,
    now: check.now,
    version: row.version,
    seen,
    answer: apply ? check.answer : null,
  });
  return applied ? { outcome: result } : { read: null };
}

interface LockedRow {
  version: string;
  last_cycle_id: string | null;
  last_fetched_at: Date | null;
  last_tag?: string | null;
  v7_adopted_at?: Date | null;
}

/**
 * Locks the subject's row for this check and writes its bookkeeping (`lockCheckedRow`), v1's
 * answer with it when the answer applies. A row the subject can make and that is missing is
 * made first.
 */
async function lockRow(
  tx: Tx,
  subject: CheckSubject,
  check: Check,
): Promise<LockedRow | undefined> {
  const request = {
    cycleId: check.cycleId,
    key: subject.key,
    fetchOk: check.fetch.ok,
    fetchStartedAt: check.fetchStartedAt,
    now: check.now,
    ...(check.answer ? { answer: check.answer } : {}),
  };
  const [row] = await lockCheckedRow<LockedRow>(tx, subject.table, request);
  if (row || !(await subject.createRow(tx))) return row;
  const [created] = await lockCheckedRow<LockedRow>(tx, subject.table, request);
  if (!created)
    throw new Error(`${subject.table} row ${subject.key} vanished inside its own check`);
  return created;
}

/** The check that changes something, under its row's lock. */
async function checkLocked(
  tx: Tx,
  subject: CheckSubject,
  check: Check,
  read: UnlockedRead | null,
): Promise<{ outcome: CheckOutcome; created: InsertedNotifications }> {
  const { fetch } = check;
  const row = await lockRow(tx, subject, check);
  const result = emptyOutcome(fetch.ok, skippedOf(fetch));
  let created = NOTHING_INSERTED();
  if (row?.last_cycle_id === check.cycleId) {
    return { outcome: { ...result, applied: false }, created };
  }
  if (fetch.ok && !isStale(row?.last_fetched_at, check.fetchStartedAt)) {
    const adopting = row !== undefined && subject.mustAdopt(row);
    if (adopting) await subject.adopt(tx, check.now);
    // Every check that writes warnings updates its row in the same transaction, so the same
    // row version means the same tracked warnings as the unlocked read saw, and the same
    // detection of this answer. An adoption has just written warnings that read did not see.
    const examined =
      !adopting && read && read.version === row?.version
        ? { detected: read.detected }
        : examine(
            subject,
            check,
            fetch,
            row?.last_tag,
            await readTracked(tx, subject.key, check.windowStart),
          );
    if ('seen' in examined) {
      await writeWarnings(tx, subject.key, { seen: examined.seen, changes: [] }, check.now);
    } else {
      const written = await writeDetection(tx, subject, check, examined.detected);
      created = written.created;
      result.deliveries = created.count;
      result.events = written.counted;
    }
  }
  await commitLightlyIfNothingOwed(tx, result);
  return { outcome: result, created };
}

/**
 * Takes each warning's transaction-scoped lock, in id order, in one round trip (`unnest` yields
 * the ids in array order and each row's lock is taken as it is produced). A check of another
 * place or point that reports the same warning, or an earlier one of its story, waits here,
 * then sees what this one committed: the end rule reads the warning's states elsewhere, the
 * story what each subscriber was told. Namespaced so that no other advisory lock of qwn
 * (migrate, seed) can collide.
 */
async function lockWarnings(tx: Tx, detection: DetectResult): Promise<void> {
  const ids = [...new Set(detection.events.flatMap((e) => [e.warningId, ...e.chain]))].sort();
  if (ids.length === 0) return;
  await LOCK_WARNINGS.run(tx, { ids });
}

const LOCK_WARNINGS = new PreparedStatement<{ ids: string[] }>(
  (p) => sql`SELECT pg_advisory_xact_lock(hashtextextended('qwn-alert/' || id, 0))
    FROM unnest(${p.ids}::text[]) AS id`,
);

/**
 * Writes a detection: the tracked warnings, the events and, for each event new to the store, one
 * notification per subscriber whose filters let it through (the first of their places, by id,
 * that does names the location). The unique constraints make a repeated event or notification a
 * no-op (docs/design.md, invariant 2), whatever ran before. Returns the notifications and the
 * events that are news for the cycle's counters.
 *
 * The warnings' writes, the events, v1's reports of these alerts elsewhere and, when any event
 * is new, the subscriptions go in one prepared statement: as separate statements they were four
 * round trips, each planned anew. The reports elsewhere are read in the same snapshot as the
 * insert: every check that reported these warnings and committed first took their locks
 * (`lockWarnings`) and is in it.
 */
async function writeDetection(
  tx: Tx,
  subject: CheckSubject,
  check: Check,
  detection: DetectResult,
): Promise<{ created: InsertedNotifications; counted: Record<EventType, number> }> {
  const counted = NO_EVENTS();
  if (detection.events.length === 0) {
    await writeWarnings(tx, subject.key, detection, check.now);
    return { created: NOTHING_INSERTED(), counted };
  }
  await lockWarnings(tx, detection);
  const warningIds = [...new Set(detection.events.map((e) => e.warningId))];
  const elsewhere = subject.reportedElsewhere(check.cycleId, warningIds);
  const found = await queryPrepared<
    {
      inserted: InsertedEvent[];
      elsewhere: { warning_id: string; type: EventType; occurrence: number }[] | null;
    } & (Watcher | { [column in keyof Watcher]: null })
  >(
    tx,
    sql`WITH ${detectionWritesCte(subject.key, detection, {
      cycleId: check.cycleId,
      now: check.now,
      attributions: check.answer?.attributions ?? null,
    })},
        news AS (
          SELECT ${INSERTED_EVENTS} AS inserted,
            ${
              elsewhere
                ? sql`(SELECT json_agg(json_build_object('warning_id', warning_id, 'type', type,
                      'occurrence', occurrence)) FROM (${elsewhere}) e)`
                : sql`NULL::json`
            } AS elsewhere)
        SELECT n.inserted, n.elsewhere, w.*
        FROM news n
        LEFT JOIN LATERAL (${subject.watchers()}) w ON true
        WHERE n.inserted IS NOT NULL
        ORDER BY w.subscriber_id, w.place_id`,
  );
  const inserted = found[0]?.inserted ?? [];
  if (elsewhere === null) for (const e of detection.events) counted[e.type] += 1;
  if (inserted.length === 0) return { created: NOTHING_INSERTED(), counted };
  const already = new Set((found[0]?.elsewhere ?? []).map(eventKey));
  const watchers = found.filter(
    (row): row is typeof row & Watcher => row.subscriber_id !== null && subject.watches(row),
  );

  const byKey = new Map(detection.events.map((e) => [eventKey(e), e]));
  const told: {
    detected: DetectResult['events'][number];
    eventId: number;
    event: KnownEvent;
    to: Watcher[];
  }[] = [];
  for (const event of inserted) {
    const key = eventKey(event);
    const detected = byKey.get(key);
    if (!detected) continue;
    if (elsewhere !== null && !already.has(key)) counted[detected.type] += 1;
    // One notification per subscriber even when several of their places watch the subject.
    const chosen = new Map<string, Watcher>();
    for (const sub of watchers) {
      if (chosen.has(sub.subscriber_id)) continue;
      if (filterAccepts(toFilter(sub), { type: detected.type, warning: detected.warning })) {
        chosen.set(sub.subscriber_id, sub);
      }
    }
    told.push({
      detected,
      eventId: event.id,
      // The event row as this statement wrote it (`detectionWritesCte`).
      event: {
        event_id: String(event.id),
        record: withoutRaw(detected.warning),
        supersedes: [...detected.supersedes],
        attributions: check.answer?.attributions ?? null,
        detected_at: check.now,
        in_force: false,
      },
      to: [...chosen.values()],
    });
  }

  // An end is told to a subscriber when the warning is over wherever they watch it.
  const ended = told.filter((t) => t.detected.type === 'expired' && t.to.length > 0);
  const states =
    ended.length > 0
      ? await subject.statesElsewhere(
          tx,
          [...new Set(ended.map((t) => t.detected.warningId))],
          [...new Set(ended.flatMap((t) => t.to.map((sub) => sub.subscriber_id)))],
        )
      : new Map<string, never[]>();
  const rows: NewNotification[] = [];
  for (const { detected, eventId, event, to } of told) {
    for (const sub of to) {
      if (
        detected.type === 'expired' &&
        !expiryOwedToSubscriber(
          states.get(subscriberWarning(sub.subscriber_id, detected.warningId)) ?? [],
        )
      ) {
        continue;
      }
      rows.push({
        subscriberId: sub.subscriber_id,
        eventId,
        cycleId: check.cycleId,
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
        ...(check.leased.includes(sub.channel) ? { known: { subscriber: sub, event } } : {}),
      });
    }
  }
  const created = await insertNotifications(tx, await tellTheStoryTold(tx, rows), {
    key: `${check.cycleId}_${subject.key}`,
    now: check.now,
    leased: check.leased,
  });
  return { created, counted };
}
