import { describe, expect, it } from 'vitest';
import { callPlan, monthlyCost, v1IntervalSeconds } from '../../src/domain/plan.js';

describe('the call plan', () => {
  it('prices a month at the published tiers', () => {
    expect(monthlyCost(0)).toEqual({ yuan: 0, beyondTiers: false });
    expect(monthlyCost(50_000)).toEqual({ yuan: 0, beyondTiers: false });
    // QWeather's own example: 1,000,000 calls a month cost ¥665.
    expect(monthlyCost(1_000_000)).toEqual({ yuan: 665, beyondTiers: false });
    // 665 + 4,000,000 × 0.0005 + 5,000,000 × 0.00035 = 4,415
    expect(monthlyCost(10_000_000)).toEqual({ yuan: 4415, beyondTiers: false });
    expect(monthlyCost(50_000_001).beyondTiers).toBe(true);
  });

  it("counts the issue's national case by hand: 3,184 places every 300 s", () => {
    const plan = callPlan({
      watchedPlaces: 3184,
      v1Points: 3184,
      pollIntervalSeconds: 300,
      monthlyCalls: undefined,
    });
    // 288 cycles a day, 8,640 a month (30 days).
    expect(plan.v7Quiet).toMatchObject({ perCycle: 1, perDay: 288, perMonth: 8640, costYuan: 0 });
    expect(plan.v7Storm).toMatchObject({ perCycle: 3185, perDay: 917_280, perMonth: 27_518_400 });
    expect(plan.v1).toMatchObject({ perCycle: 3184, perDay: 916_992, perMonth: 27_509_760 });
    // 4,415 + 17,509,760 × 0.00015 = 7,041.46: "roughly ¥7,000".
    expect(plan.v1.costYuan).toBe(7041.46);
  });

  it('counts the calls in English for places and points with English subscribers, apart', () => {
    const plan = callPlan({
      watchedPlaces: 100,
      v1Points: 80,
      englishPlaces: 3,
      englishPoints: 2,
      pollIntervalSeconds: 300,
      monthlyCalls: undefined,
    });
    expect(plan).toMatchObject({ englishPlaces: 3, englishPoints: 2 });
    // A quiet v7 cycle checks no place, in any language.
    expect(plan.v7Quiet.perCycle).toBe(1);
    expect(plan.v7Storm.perCycle).toBe(1 + 100 + 3);
    expect(plan.v1.perCycle).toBe(80 + 2);
  });

  it('lengthens the v1 cycle just enough to fit a budget, never below the poll interval', () => {
    // 100 points every 300 s: 864,000 calls a month.
    expect(
      v1IntervalSeconds({ points: 100, pollIntervalSeconds: 300, monthlyCalls: 1_000_000 }),
    ).toBe(300);
    // Half the budget: twice the interval.
    expect(
      v1IntervalSeconds({ points: 100, pollIntervalSeconds: 300, monthlyCalls: 432_000 }),
    ).toBe(600);
    // Just enough: 100 × 2,592,000 / 500,000 = 518.4 → 519 s.
    const stretched = v1IntervalSeconds({
      points: 100,
      pollIntervalSeconds: 300,
      monthlyCalls: 500_000,
    });
    expect(stretched).toBe(519);
    expect(
      callPlan({
        watchedPlaces: 100,
        v1Points: 100,
        pollIntervalSeconds: 300,
        monthlyCalls: 500_000,
      }).v1.perMonth,
    ).toBeLessThanOrEqual(500_000);
    expect(v1IntervalSeconds({ points: 0, pollIntervalSeconds: 300, monthlyCalls: 1 })).toBe(300);
    expect(
      v1IntervalSeconds({ points: 100, pollIntervalSeconds: 300, monthlyCalls: undefined }),
    ).toBe(300);
  });
});
