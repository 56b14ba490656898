import { describe, expect, it } from 'vitest';
import { otherTransactionsBetween } from '../../bench/stats.js';

/**
 * What the bench prints beside its server-wide WAL figure: the other databases' transactions
 * during a scenario. Other test files create and drop their databases meanwhile (CI runs the
 * quick bench beside them): a dropped database must not make the count go down.
 */
describe("the other databases' transactions meanwhile", () => {
  it('counts what each went up by, a new one whole, and nothing for one dropped', () => {
    const before = new Map([
      [1, 100],
      [2, 50],
      [3, 7_000],
    ]);
    const after = new Map([
      [1, 130],
      [2, 50],
      [4, 12],
    ]);
    expect(otherTransactionsBetween(before, after)).toBe(30 + 0 + 12);
  });

  it('is 0 when nobody else wrote', () => {
    const same = new Map([[1, 5]]);
    expect(otherTransactionsBetween(same, new Map(same))).toBe(0);
  });
});
