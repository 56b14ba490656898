/**
 * What polling costs upstream (docs/configuration.md, `qwn plan`): calls per cycle, day and month for v7
 * and v1, their price at QWeather's published pay-as-you-go tiers, and the v1 cycle that fits a
 * monthly budget. Pure: no I/O.
 */

/** A month, for call counts and QWeather's monthly billing: 30 days. */
export const MONTH_SECONDS = 30 * 86_400;

/**
 * QWeather's pay-as-you-go price per call by monthly volume ("Weather and Essential Services",
 * which include Warning), each tier charged on the calls that fall in it. Source:
 * https://dev.qweather.com/en/docs/finance/pricing/ , recorded 2026-11-25 (its worked example:
 * 1,000,000 calls a month cost ¥665). Beyond the last tier, and above 1,000,000 calls a day on
 * average, QWeather asks customers to contact sales; savings plans cost less.
 */
export const PRICE_TIERS: readonly { readonly calls: number; readonly yuanPerCall: number }[] =
  Object.freeze([
    { calls: 50_000, yuanPerCall: 0 },
    { calls: 950_000, yuanPerCall: 0.0007 },
    { calls: 4_000_000, yuanPerCall: 0.0005 },
    { calls: 5_000_000, yuanPerCall: 0.00035 },
    { calls: 40_000_000, yuanPerCall: 0.00015 },
  ]);
export const PRICE_SOURCE =
  'https://dev.qweather.com/en/docs/finance/pricing/ (recorded 2026-11-25)';

/** The published price of a month's calls; `beyondTiers` when some fall past the last tier. */
export function monthlyCost(calls: number): { yuan: number; beyondTiers: boolean } {
  let left = Math.max(0, calls);
  let yuan = 0;
  for (const tier of PRICE_TIERS) {
    const inTier = Math.min(left, tier.calls);
    yuan += inTier * tier.yuanPerCall;
    left -= inTier;
  }
  // Cents, so that floating-point sums print as prices.
  return { yuan: Math.round(yuan * 100) / 100, beyondTiers: left > 0 };
}

export interface CallVolume {
  perCycle: number;
  perDay: number;
  perMonth: number;
  costYuan: number;
  /** Part of the month is past the published tiers: the cost shown is a lower bound. */
  beyondTiers: boolean;
}

export function callVolume(perCycle: number, intervalSeconds: number): CallVolume {
  const perDay = Math.ceil((perCycle * 86_400) / intervalSeconds);
  const perMonth = Math.ceil((perCycle * MONTH_SECONDS) / intervalSeconds);
  const cost = monthlyCost(perMonth);
  return { perCycle, perDay, perMonth, costYuan: cost.yuan, beyondTiers: cost.beyondTiers };
}

/**
 * The v1 cycle that keeps a month's calls within the budget: POLL_INTERVAL_SECONDS when it fits,
 * else just long enough (whole seconds), never shorter than POLL_INTERVAL_SECONDS.
 */
export function v1IntervalSeconds(input: {
  points: number;
  pollIntervalSeconds: number;
  monthlyCalls: number | undefined;
}): number {
  const { points, pollIntervalSeconds, monthlyCalls } = input;
  if (monthlyCalls === undefined || points === 0) return pollIntervalSeconds;
  const fitting = Math.ceil((points * MONTH_SECONDS) / monthlyCalls);
  return Math.max(pollIntervalSeconds, fitting);
}

export interface CallPlan {
  watchedPlaces: number;
  v1Points: number;
  /** Watched places and v1 points with English subscribers: asked again with `lang=en`. */
  englishPlaces: number;
  englishPoints: number;
  pollIntervalSeconds: number;
  /** The v1 cycle in use: POLL_INTERVAL_SECONDS, or longer to fit the budget. */
  v1IntervalSeconds: number;
  monthlyCalls: number | null;
  /** No watched place listed: one list call per cycle. */
  v7Quiet: CallVolume;
  /**
   * Every watched place listed: the list call plus one check per watched place, and one more in
   * English per place English subscribers watch.
   */
  v7Storm: CallVolume;
  /** One call per point every v1 cycle, storm or not (v1 has no list), and the English ones. */
  v1: CallVolume;
}

export function callPlan(input: {
  watchedPlaces: number;
  v1Points: number;
  englishPlaces?: number;
  englishPoints?: number;
  pollIntervalSeconds: number;
  monthlyCalls: number | undefined;
}): CallPlan {
  const interval = input.pollIntervalSeconds;
  const englishPlaces = input.englishPlaces ?? 0;
  const englishPoints = input.englishPoints ?? 0;
  const v1Interval = v1IntervalSeconds({
    points: input.v1Points + englishPoints,
    pollIntervalSeconds: interval,
    monthlyCalls: input.monthlyCalls,
  });
  return {
    watchedPlaces: input.watchedPlaces,
    v1Points: input.v1Points,
    englishPlaces,
    englishPoints,
    pollIntervalSeconds: interval,
    v1IntervalSeconds: v1Interval,
    monthlyCalls: input.monthlyCalls ?? null,
    v7Quiet: callVolume(1, interval),
    v7Storm: callVolume(1 + input.watchedPlaces + englishPlaces, interval),
    v1: callVolume(input.v1Points + englishPoints, v1Interval),
  };
}
