import { NO_EVENTS, type EventType } from '../domain/detect.js';

/** What a check (v7 place or v1 point) did, as the cycle's counters and the logs read it. */

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
