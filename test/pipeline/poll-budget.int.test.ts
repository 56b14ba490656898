import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { fitPollToBudget } from '../../src/pipeline/poll-budget.js';
import { scheduledPollSeconds, scheduleRecurring } from '../../src/pipeline/workers.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * `qwn plan` against a hand count, and QWEATHER_MONTHLY_CALLS stretching the v1 cycle in the
 * poll scheduler. The seed, counted by hand:
 * - places 101210101 (杭州, point 30.25,120.21), 101010100 (北京, 39.9,116.4), 101280601 (no
 *   coordinates): 3 watched places;
 * - v1 points, exact: 30.25,120.21 (杭州, twice), 39.9,116.4, and the exact point 30.27,120.16
 *   of a `lon,lat` subscription that also stored 杭州's own point: 3; place: 2 (the exact point
 *   gives way to 杭州's centre);
 * - every 600 s: 144 cycles a day, 4,320 a month.
 */
describe('the call plan and the budget', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { POLL_INTERVAL_SECONDS: '600' } });
    const db = h.database.db;
    await db.execute(sql`
      INSERT INTO places (id, name, lat, lon, country) VALUES
        ('101210101', '杭州', 30.246, 120.2108, '中国'),
        ('101010100', '北京', 39.9, 116.4, '中国'),
        ('101280601', '深圳', NULL, NULL, '中国')`);
    await h.addWebhookSubscriber('/a', ['101210101', '101010100']);
    await h.addEmailSubscriber('b@example.com', ['101210101']);
    await h.addEmailSubscriber('c@example.com', ['101280601']);
    const exact = await h.addEmailSubscriber('d@example.com', []);
    await db.execute(sql`
      INSERT INTO subscriptions (subscriber_id, place_id, points)
      VALUES (${exact}, '101210101', ARRAY['30.27,120.16', '30.25,120.21'])`);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('qwn plan --json matches the hand count', async () => {
    const run = await h.qwn(['plan', '--json']);
    expect(run.code).toBe(0);
    const plan = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(plan).toMatchObject({
      source: 'v7',
      alertSource: 'auto',
      watchedPlaces: 3,
      v1Points: 3,
      pollIntervalSeconds: 600,
      v1IntervalSeconds: 600,
      monthlyCalls: null,
      v7Quiet: { perCycle: 1, perDay: 144, perMonth: 4320, costYuan: 0 },
      v7Storm: { perCycle: 4, perDay: 576, perMonth: 17_280, costYuan: 0 },
      v1: { perCycle: 3, perDay: 432, perMonth: 12_960, costYuan: 0 },
    });

    const byPlace = JSON.parse(
      (await h.qwn(['plan', '--json'], { V1_POINTS: 'place' })).stdout,
    ) as Record<string, unknown>;
    expect(byPlace).toMatchObject({ v1Points: 2, v1: { perCycle: 2, perMonth: 8640 } });

    // Half of v1's 12,960 calls: the v1 cycle doubles.
    const budgeted = await h.qwn(['plan'], { QWEATHER_MONTHLY_CALLS: '6480' });
    expect(budgeted.code).toBe(0);
    expect(budgeted.stdout).toContain('v1 interval in use: 1200 s');
    expect(budgeted.stdout).toMatch(/v1\s+1200 s\s+3\s+216\s+6,480\s+¥0/);
  });

  it('lengthens the scheduled v1 cycle just enough, and leaves v7 alone', async () => {
    const runtime = h.runtime({ QWEATHER_MONTHLY_CALLS: '6480' });
    const log = createLogger('silent');
    await scheduleRecurring(runtime.ctx);
    expect(await scheduledPollSeconds(runtime.ctx)).toBe(600);
    // Still v7 (auto, not switched): a storm's cost is not the cycle's to cut.
    expect(await fitPollToBudget(runtime.ctx, log)).toBe(600);
    expect(await scheduledPollSeconds(runtime.ctx)).toBe(600);

    await h.database.db.execute(
      sql`INSERT INTO upstream_source (source, reason) VALUES ('v1', 'test')`,
    );
    expect(await fitPollToBudget(runtime.ctx, log)).toBe(1200);
    expect(await scheduledPollSeconds(runtime.ctx)).toBe(1200);

    // A budget that fits changes nothing; the period never drops below POLL_INTERVAL_SECONDS.
    const roomy = h.runtime({ QWEATHER_MONTHLY_CALLS: '1000000' });
    expect(await fitPollToBudget(roomy.ctx, log)).toBe(600);
    expect(await scheduledPollSeconds(roomy.ctx)).toBe(600);
  });
});
