import { v1IntervalSeconds } from '../domain/plan.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';
import { watchedPoints } from '../detection/poll-points.js';
import { currentSource } from '../detection/upstream-source.js';
import { schedulePoll, scheduledPollSeconds } from './workers.js';

/**
 * The poll period that keeps a month's upstream calls within `QWEATHER_MONTHLY_CALLS`
 * (docs/configuration.md): POLL_INTERVAL_SECONDS, or in v1, where every watched point costs a call
 * every cycle, just long enough to fit (src/domain/plan.ts). v7 is left alone: its cost follows
 * the storm, and a longer cycle would only delay warnings.
 */
export async function budgetedPollSeconds(ctx: PipelineContext): Promise<number> {
  const { pollIntervalSeconds, qweather } = ctx.config;
  if (qweather.monthlyCalls === undefined) return pollIntervalSeconds;
  if ((await currentSource(ctx.db, ctx.config)) !== 'v1') return pollIntervalSeconds;
  const { points } = await watchedPoints(ctx.db, qweather.v1Points);
  return v1IntervalSeconds({
    points: points.length,
    pollIntervalSeconds,
    monthlyCalls: qweather.monthlyCalls,
  });
}

/**
 * Re-declares the poll scheduler when the budgeted period differs from the one in Redis (the
 * source switched, subscriptions changed); logs each change. Returns the period in use.
 */
export async function fitPollToBudget(ctx: PipelineContext, log: Logger): Promise<number> {
  const wanted = await budgetedPollSeconds(ctx);
  const scheduled = await scheduledPollSeconds(ctx);
  if (scheduled !== wanted) {
    await schedulePoll(ctx, wanted);
    if (scheduled !== null || wanted !== ctx.config.pollIntervalSeconds) {
      log.warn(
        {
          pollIntervalSeconds: ctx.config.pollIntervalSeconds,
          effectiveSeconds: wanted,
          previousSeconds: scheduled,
          monthlyCalls: ctx.config.qweather.monthlyCalls,
        },
        wanted > ctx.config.pollIntervalSeconds
          ? 'poll interval lengthened to fit QWEATHER_MONTHLY_CALLS'
          : 'poll interval back to POLL_INTERVAL_SECONDS',
      );
    }
  }
  return wanted;
}
