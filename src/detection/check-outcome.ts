import type { Config } from '../config.js';
import type { Tx } from '../db/client.js';
import { sql } from 'drizzle-orm';
import {
  DEFAULT_DETECT_SETTINGS,
  NO_EVENTS,
  type DetectSettings,
  type EventType,
  type FetchOutcome,
} from '../domain/detect.js';
import { enqueueInserted, type InsertedNotifications } from '../ledger/index.js';
import { withEnglish } from '../domain/english.js';
import type { Warning } from '../domain/warning.js';
import type { Logger } from '../logger.js';
import type { SkippedRecord } from '../qweather/client.js';
import type { PipelineContext } from '../runtime/context.js';
import { cycleCounterFor } from './cycle-counters.js';

/** What a check (v7 place or v1 point) did, as the cycle's counters and the logs read it. */

export interface CheckOutcome {
  /** false when this cycle's check of the place had already been applied (a re-run job). */
  applied: boolean;
  fetchOk: boolean;
  events: Record<EventType, number>;
  /** Delivery rows this check created (their jobs are enqueued after the commit). */
  deliveries: number;
  /** Records of the answer that could not be read (README, promises). */
  skippedRecords: number;
}

/** An applied check that has not found anything yet. */
export function emptyOutcome(fetchOk: boolean, skippedRecords = 0): CheckOutcome {
  return { applied: true, fetchOk, events: NO_EVENTS(), deliveries: 0, skippedRecords };
}

/** Detection's settings as configured (EXPIRE_AFTER_MISSES, EXPIRE_AFTER_SECONDS). */
export function detectSettingsOf(config: Config): DetectSettings {
  return {
    ...DEFAULT_DETECT_SETTINGS,
    expireAfterMisses: config.expireAfterMisses,
    expireAfterMs: config.expireAfterSeconds * 1000,
  };
}

/**
 * One line per record an answer could not read, with the place and the record's id: an operator
 * must be able to find a warning that was not told because its record was poisoned.
 */
export function logSkippedRecords(log: Logger, skipped: readonly SkippedRecord[]): void {
  for (const record of skipped) {
    log.warn(
      { recordIndex: record.index, recordId: record.id, reason: record.reason },
      'upstream record skipped',
    );
  }
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

/**
 * Ends a check's transaction without waiting for its WAL flush when it wrote nothing owed to
 * anyone (no event, no notification): only bookkeeping (last-seen times, misses), which a
 * database crash makes the next cycle check again. Waiting for that flush was most of a quiet
 * cycle's time. A check that wrote what a deliver job will read keeps the durable commit, so
 * no job is enqueued for a row that is not on disk.
 */
export async function commitLightlyIfNothingOwed(tx: Tx, result: CheckOutcome): Promise<void> {
  if (result.deliveries === 0 && Object.values(result.events).every((n) => n === 0)) {
    await tx.execute(sql`SET LOCAL synchronous_commit = off`);
  }
}

/**
 * What every check does after its commit, in this order: the first attempts of what it created
 * are enqueued (the sooner they go, the better), the check is counted in its cycle (after the
 * commit, many checks per statement: inside the transaction the cycle row's lock queued every
 * check behind one another), and a check that found anything or was not applied is logged.
 */
export async function finishCheck(
  ctx: PipelineContext,
  log: Logger,
  check: {
    cycleId: string;
    outcome: CheckOutcome;
    created: InsertedNotifications;
    englishCalls: number;
    now: Date;
    /** The log line's phrase, and what it adds to the outcome's fields. */
    said: string;
    fields?: Record<string, unknown>;
  },
): Promise<void> {
  const { outcome } = check;
  await enqueueInserted(ctx, check.created, check.now);
  if (outcome.applied) {
    await cycleCounterFor(ctx).count({
      cycleId: check.cycleId,
      fetchOk: outcome.fetchOk,
      events: outcome.events,
      deliveries: outcome.deliveries,
      skippedRecords: outcome.skippedRecords,
      englishCalls: check.englishCalls,
      now: check.now,
    });
  }
  const total = Object.values(outcome.events).reduce((a, b) => a + b, 0);
  if (total > 0 || outcome.deliveries > 0 || !outcome.applied) {
    log.info(
      {
        events: outcome.events,
        deliveries: outcome.deliveries,
        applied: outcome.applied,
        ...check.fields,
      },
      check.said,
    );
  }
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
