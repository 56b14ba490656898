/**
 * The delivery retry schedule (docs/design.md): exponential backoff with jitter over about a
 * day, honouring a receiver's Retry-After within bounds. Pure: randomness and the clock come in.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Delay after failed attempt k (index k-1). Seven waits between eight attempts add up to about
 * 22.5 hours: a receiver that is down for most of a day still gets the message.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  1 * MINUTE,
  5 * MINUTE,
  20 * MINUTE,
  1 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
];

/** Attempts per notification, the first included; after the last failure the row is dead. */
export const MAX_DELIVERY_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

/** ±20 %: spreads the retries of one outage so they do not return as one burst. */
export const RETRY_JITTER = 0.2;

/** A receiver may ask for a longer wait, but never parks a notification for more than this. */
export const MAX_RETRY_AFTER_MS = 6 * HOUR;

/** Whether a notification whose attempt number `attempt` (1-based) just failed may try again. */
export function hasAttemptsLeft(attempt: number): boolean {
  return attempt < MAX_DELIVERY_ATTEMPTS;
}

/**
 * Milliseconds to wait after attempt `attempt` (1-based, the one that failed). `random` returns
 * values in [0, 1) like Math.random. A Retry-After from the receiver is a lower bound, capped at
 * MAX_RETRY_AFTER_MS; our own backoff still applies when it asks for less.
 */
export function retryDelayMs(attempt: number, random: () => number, retryAfterMs?: number): number {
  const index = Math.min(
    Math.max(Number.isFinite(attempt) ? Math.floor(attempt) - 1 : 0, 0),
    RETRY_SCHEDULE_MS.length - 1,
  );
  const base = RETRY_SCHEDULE_MS[index] ?? HOUR;
  const r = Math.min(Math.max(random(), 0), 1);
  const backoff = base * (1 + RETRY_JITTER * (2 * r - 1));
  const asked =
    retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0
      ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS)
      : 0;
  return Math.round(Math.max(backoff, asked));
}

/**
 * A Retry-After header value in milliseconds from `now`: delta-seconds or an HTTP date
 * (RFC 9110 §10.2.3). Undefined when absent or unreadable; a date in the past is 0.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  now: Date,
): number | undefined {
  const raw = (typeof value === 'string' ? value : value?.[0])?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * SECOND;
  // Only a real HTTP date: Date.parse alone would also take "1.5" or "-3" as years.
  if (!/^[A-Za-z]{3,9},? /.test(raw)) return undefined;
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
