import type { Config } from '../config.js';
import {
  DEFAULT_DETECT_SETTINGS,
  NO_EVENTS,
  type DetectSettings,
  type EventType,
} from '../domain/detect.js';
import type { Logger } from '../logger.js';
import type { SkippedRecord } from '../qweather/client.js';

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
