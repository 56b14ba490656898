import { expect } from 'vitest';
import type { Outcome } from './harness.js';

/** The outcome every fault must leave: all owed delivered once per id, nothing made up. */
export function expectNothingLostOrSplit(outcome: Outcome, o: { allowDead?: boolean } = {}): void {
  expect(outcome.crashes).toEqual([]);
  expect(outcome.lost).toEqual([]);
  expect(outcome.unexpected).toEqual([]);
  expect(outcome.wronglyDead).toEqual([]);
  expect(outcome.splitIds).toEqual([]);
  expect(outcome.unreceived).toEqual([]);
  if (!o.allowDead) expect(outcome.delivered).toBe(outcome.owed);
  else expect(outcome.delivered + outcome.dead).toBe(outcome.owed);
  // Storms only issue and update warnings: a cancel or an expiry would be made up.
  expect(outcome.events.cancel ?? 0).toBe(0);
  expect(outcome.events.expired ?? 0).toBe(0);
  // The at-least-once window (a send accepted just before its process died) stays narrow.
  expect(outcome.duplicates).toBeLessThanOrEqual(Math.max(5, Math.ceil(outcome.owed * 0.02)));
}
