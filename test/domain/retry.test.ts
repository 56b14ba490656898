import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_DELIVERY_ATTEMPTS,
  MAX_RETRY_AFTER_MS,
  RETRY_SCHEDULE_MS,
  hasAttemptsLeft,
  parseRetryAfter,
  retryDelayMs,
} from '../../src/domain/retry.js';

const HOUR = 3_600_000;
const middle = () => 0.5;

describe('retryDelayMs', () => {
  it('makes about eight attempts over about a day', () => {
    expect(MAX_DELIVERY_ATTEMPTS).toBe(8);
    let total = 0;
    for (let attempt = 1; attempt < MAX_DELIVERY_ATTEMPTS; attempt += 1) {
      total += retryDelayMs(attempt, middle);
    }
    expect(total).toBeGreaterThan(18 * HOUR);
    expect(total).toBeLessThan(30 * HOUR);
  });

  it('grows with every failed attempt', () => {
    const delays = RETRY_SCHEDULE_MS.map((_, i) => retryDelayMs(i + 1, middle));
    expect(delays[0]).toBe(60_000);
    for (let i = 1; i < delays.length; i += 1) {
      expect(delays[i]!).toBeGreaterThan(delays[i - 1]!);
    }
  });

  it('jitters by at most 20 % either way', () => {
    expect(retryDelayMs(1, () => 0)).toBe(48_000);
    expect(retryDelayMs(1, () => 0.999_999)).toBeCloseTo(72_000, -1);
  });

  it('keeps using the last step past the schedule, and the first for nonsense input', () => {
    expect(retryDelayMs(50, middle)).toBe(12 * HOUR);
    expect(retryDelayMs(0, middle)).toBe(60_000);
    expect(retryDelayMs(Number.NaN, middle)).toBe(60_000);
  });

  it('waits at least as long as Retry-After asks, up to six hours', () => {
    expect(retryDelayMs(1, middle, 10 * 60_000)).toBe(10 * 60_000);
    expect(retryDelayMs(1, middle, 5_000)).toBe(60_000);
    expect(retryDelayMs(1, middle, 48 * HOUR)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryDelayMs(7, middle, 48 * HOUR)).toBe(12 * HOUR);
    expect(retryDelayMs(1, middle, -5)).toBe(60_000);
  });

  it('stays within the jitter band or the bounded Retry-After (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 100 * HOUR }), { nil: undefined }),
        (attempt, r, retryAfter) => {
          const base = RETRY_SCHEDULE_MS[Math.min(attempt, RETRY_SCHEDULE_MS.length) - 1]!;
          const delay = retryDelayMs(attempt, () => r, retryAfter);
          const floor = Math.max(base * 0.8, Math.min(retryAfter ?? 0, MAX_RETRY_AFTER_MS));
          const ceiling = Math.max(base * 1.2, Math.min(retryAfter ?? 0, MAX_RETRY_AFTER_MS));
          expect(delay).toBeGreaterThanOrEqual(Math.floor(floor));
          expect(delay).toBeLessThanOrEqual(Math.ceil(ceiling));
        },
      ),
    );
  });
});

describe('hasAttemptsLeft', () => {
  it('allows retries until the last attempt has failed', () => {
    expect(hasAttemptsLeft(1)).toBe(true);
    expect(hasAttemptsLeft(MAX_DELIVERY_ATTEMPTS - 1)).toBe(true);
    expect(hasAttemptsLeft(MAX_DELIVERY_ATTEMPTS)).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2026-07-01T08:00:00Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(['30', '60'], now)).toBe(30_000);
  });

  it('reads an HTTP date relative to now, a past one as zero', () => {
    expect(parseRetryAfter('Wed, 01 Jul 2026 08:05:00 GMT', now)).toBe(300_000);
    expect(parseRetryAfter('Wed, 01 Jul 2026 07:00:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
