import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * V1_POINTS over real HTTP: a subscriber seeded at an exact point in 杭州 (30.27,120.16), and an
 * alert the simulator answers at 杭州's own point (30.25,120.21) only. `exact` asks the exact
 * point and hears nothing there; `place` asks the place's point, one call for the place, and
 * tells the subscriber: the precision trade-off docs/v1.md describes.
 */
describe('V1_POINTS', () => {
  let h: PipelineHarness;
  const PLACE = '101210101';

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { QWEATHER_ALERT_SOURCE: 'v1' } });
    await h.database.db.execute(sql`
      INSERT INTO places (id, name, lat, lon, country) VALUES (${PLACE}, '杭州', 30.246, 120.2108, '中国')`);
    const id = await h.addEmailSubscriber('exact@example.com', []);
    await h.database.db.execute(sql`
      INSERT INTO subscriptions (subscriber_id, place_id, points)
      VALUES (${id}, ${PLACE}, ARRAY['30.27,120.16'])`);
    h.sim.setWarnings(PLACE, [v7Warning({ locationId: PLACE, typeCode: '1003', level: '橙色' })]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('exact: the exact point is asked, and the alert at the centre is not heard there', async () => {
    const run = await h.pollOnce({ V1_POINTS: 'exact' });
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ source: 'v1', checked: 1, events: { new: 0 } });
    expect(h.sim.requests().byLocation['30.27,120.16']).toBe(1);
  });

  it("place: the place's point is asked instead, and the subscriber is told", async () => {
    const run = await h.pollOnce({ V1_POINTS: 'place' });
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({
      source: 'v1',
      checked: 1,
      upstreamCalls: 1,
      events: { new: 1 },
      deliveries: { sent: 1 },
    });
    expect(h.sim.requests().byLocation['30.25,120.21']).toBe(1);
    const rows = await h.deliveries();
    expect(rows.map((r) => [r.subscriber, r.event_type])).toEqual([['exact@example.com', 'new']]);
  });
});
