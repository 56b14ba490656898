import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

const ZHANJIANG = '101281001';
const GUANGZHOU = '101280101';
const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000);

/** Subscription filters decide exactly who gets what, through the whole pipeline. */
describe('filters through the pipeline', () => {
  let h: PipelineHarness;
  const typhoonBlue = v7Warning({
    locationId: ZHANJIANG,
    seq: 1,
    typeCode: '1001',
    level: '蓝色',
    pubTime: hoursAgo(3),
  });
  const rainRed = v7Warning({
    locationId: ZHANJIANG,
    seq: 2,
    typeCode: '1003',
    level: '红色',
    pubTime: hoursAgo(3),
  });
  const typhoonRed = v7Warning({
    locationId: ZHANJIANG,
    seq: 3,
    typeCode: '1001',
    level: '红色',
    status: 'update',
    related: typhoonBlue.id,
    pubTime: hoursAgo(2),
  });
  const typhoonCancel = v7Warning({
    locationId: ZHANJIANG,
    seq: 4,
    typeCode: '1001',
    level: '红色',
    status: 'cancel',
    related: typhoonRed.id,
    pubTime: hoursAgo(1),
  });
  const windGz = v7Warning({
    locationId: GUANGZHOU,
    seq: 1,
    typeCode: '1006',
    level: '黄色',
    pubTime: hoursAgo(3),
  });

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(ZHANJIANG, '湛江');
    await h.addPlace(GUANGZHOU, '广州');
    await h.addEmailSubscriber('all@example.com', [ZHANJIANG, GUANGZHOU]);
    await h.addEmailSubscriber('typhoon@example.com', [ZHANJIANG, GUANGZHOU], { types: ['台风'] });
    await h.addEmailSubscriber('code@example.com', [ZHANJIANG], { types: ['1003'] });
    await h.addEmailSubscriber('severe@example.com', [ZHANJIANG, GUANGZHOU], { minLevel: '橙色' });
    await h.addWebhookSubscriber('/starts-and-ends', [ZHANJIANG], { events: ['new', 'cancel'] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('lets each event through to exactly the subscribers that want it', async () => {
    const { ctx, redis } = h.runtime();
    h.sim.setWarnings(ZHANJIANG, [typhoonBlue, rainRed]);
    h.sim.setWarnings(GUANGZHOU, [windGz]);
    await runCycleOnce(ctx, redis);
    h.sim.setWarnings(ZHANJIANG, [typhoonRed, rainRed]);
    await runCycleOnce(ctx, redis);
    h.sim.setWarnings(ZHANJIANG, [typhoonCancel, rainRed]);
    await runCycleOnce(ctx, redis);

    const got = (await h.deliveries()).map(
      (d) => `${d.subscriber} ${d.warning_id} ${d.event_type}`,
    );
    const owed = [
      `all@example.com ${typhoonBlue.id} new`,
      `all@example.com ${rainRed.id} new`,
      `all@example.com ${windGz.id} new`,
      `all@example.com ${typhoonRed.id} update`,
      `all@example.com ${typhoonCancel.id} cancel`,
      `typhoon@example.com ${typhoonBlue.id} new`,
      `typhoon@example.com ${typhoonRed.id} update`,
      `typhoon@example.com ${typhoonCancel.id} cancel`,
      `code@example.com ${rainRed.id} new`,
      // Blue typhoon and yellow wind are below orange: the red update is the first it hears of
      // the typhoon, so it comes as new, and its cancel follows (README, promises).
      `severe@example.com ${rainRed.id} new`,
      `severe@example.com ${typhoonRed.id} new`,
      `severe@example.com ${typhoonCancel.id} cancel`,
      // New and cancel only: no update.
      `/starts-and-ends ${typhoonBlue.id} new`,
      `/starts-and-ends ${rainRed.id} new`,
      `/starts-and-ends ${typhoonCancel.id} cancel`,
    ];
    expect(got.sort()).toEqual(owed.sort());
    expect((await h.deliveries()).every((d) => d.status === 'sent')).toBe(true);
  });
});
