import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySeed } from '../../src/admin/seed.js';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { createClientFromConfig } from '../../src/qweather/client.js';
import { v1Alert } from '../../src/simulator/index.js';
import { TEST_SECRET } from '../support/pipeline.js';
import { startV1Harness, type V1Harness } from './v1-harness.js';

/** Around the West Lake (西湖 district) and a point a few kilometres east of it. */
const WEST_LAKE = '30.27,120.15';
const EAST = '30.24,120.19';
const CITY = '30.25,120.21';
const PARIS = '48.86,2.35';

const ids = (rows: { subscriber: string; warning_id: string; event_type: string }[]) =>
  rows.map((r) => `${r.subscriber} ${r.warning_id} ${r.event_type}`).sort();

/**
 * Subscriptions by coordinates, seeded through the city lookup (over JWT), watched as rounded,
 * shared points; one alert id over several points is one alert per subscriber, and its end
 * reaches a subscriber only when it is over at every point they watch.
 */
describe('v1 points seeded from lon,lat entries', () => {
  let v: V1Harness;

  beforeAll(async () => {
    v = await startV1Harness();
    const lookup = createClientFromConfig(v.h.config);
    try {
      const result = await applySeed(
        { db: v.h.database.db, lookup, logger: createLogger('silent') },
        {
          subscribers: [
            { email: 'a@example.com', locations: ['120.1502,30.2711'] },
            { email: 'b@example.com', locations: ['120.19,30.24'] },
            // Two points inside one area: one notification all the same.
            { email: 'c@example.com', locations: ['120.15,30.27', '120.21,30.25'] },
            // Outside China: seeds fine; v1 covers it.
            {
              webhook: v.h.hooks.url('/paris'),
              secret: TEST_SECRET,
              locations: ['2.3522,48.8566'],
            },
          ],
        },
      );
      expect(result.ok, JSON.stringify(result)).toBe(true);
    } finally {
      await lookup.close();
    }
  });
  afterAll(async () => {
    await v?.close();
  });

  it('keeps the coordinates given, rounded, rather than the nearest city centre', async () => {
    const rows = await queryRows<{ subscriber: string; place_id: string; points: string[] }>(
      v.h.database.db,
      sql`SELECT coalesce(u.email, u.name) AS subscriber, s.place_id, s.points
          FROM subscriptions s JOIN subscribers u ON u.id = s.subscriber_id
          ORDER BY subscriber, s.place_id`,
    );
    const bySubscriber = (who: string) => rows.filter((r) => r.subscriber === who);
    expect(bySubscriber('a@example.com').map((r) => r.points)).toEqual([[WEST_LAKE]]);
    expect(bySubscriber('b@example.com').map((r) => r.points)).toEqual([[EAST]]);
    expect(
      bySubscriber('c@example.com')
        .flatMap((r) => r.points)
        .sort(),
    ).toEqual([CITY, WEST_LAKE].sort());
    expect(rows.filter((r) => r.points.includes(PARIS))).toHaveLength(1);
  });

  it('notifies each subscriber once for one alert over all their points', async () => {
    const rain = v1Alert({
      area: { lat: 30.25, lon: 120.18, radiusKm: 10 },
      id: 'V1AREA0001',
      typeCode: '1003',
      level: '橙色',
    });
    v.sim.setAlerts([rain]);
    const { code, summary, stderr } = await v.h.pollOnce();
    expect(code, stderr).toBe(0);
    expect(summary).toMatchObject({
      checked: 4,
      upstreamCalls: 4,
      events: { new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: 3, failed: 0, pending: 0, held: 0 },
    });
    expect(v.alertCalls()).toEqual({ [WEST_LAKE]: 1, [EAST]: 1, [CITY]: 1, [PARIS]: 1 });
    expect(ids(await v.h.deliveries())).toEqual([
      'a@example.com V1AREA0001 new',
      'b@example.com V1AREA0001 new',
      'c@example.com V1AREA0001 new',
    ]);
    expect(v.h.smtp.messages).toHaveLength(3);
  });

  it('ends an alert for a subscriber only when it is over at every point they watch', async () => {
    // The area shrinks to the east: the West Lake leaves it, the other points stay inside.
    const rain = v1Alert({
      area: { lat: 30.245, lon: 120.2, radiusKm: 2 },
      id: 'V1AREA0001',
      typeCode: '1003',
      level: '橙色',
    });
    v.sim.setAlerts([rain]);
    await v.h.pollOnce();
    const shrunk = await v.h.pollOnce();
    expect(shrunk.summary.events.expired).toBe(1);
    // a watched only the West Lake; c still has the alert at its other point.
    expect(ids(await v.h.deliveries())).toContain('a@example.com V1AREA0001 expired');
    expect(ids(await v.h.deliveries())).not.toContain('c@example.com V1AREA0001 expired');

    v.sim.setAlerts([]);
    await v.h.pollOnce();
    const over = await v.h.pollOnce();
    expect(over.summary.events.expired).toBe(1);
    expect(ids(await v.h.deliveries())).toEqual([
      'a@example.com V1AREA0001 expired',
      'a@example.com V1AREA0001 new',
      'b@example.com V1AREA0001 expired',
      'b@example.com V1AREA0001 new',
      'c@example.com V1AREA0001 expired',
      'c@example.com V1AREA0001 new',
    ]);
  });

  it('serves a point outside China like any other', async () => {
    const wind = v1Alert({
      area: { lat: 48.85, lon: 2.35, radiusKm: 20 },
      id: 'V1PARIS001',
      typeCode: '1006',
      level: 'yellow',
      headline: 'Yellow wind warning',
    });
    v.sim.setAlerts([wind]);
    const { summary } = await v.h.pollOnce();
    expect(summary.events).toEqual({ new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 });
    const hooks = v.h.hooks.requestsTo('/paris');
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.verified).toBe(true);
    expect(hooks[0]!.json).toMatchObject({
      type: 'warning.new',
      data: { warning: { id: 'V1PARIS001', title: 'Yellow wind warning', source: 'v1' } },
    });
  });
});

describe('v1 points shared by many subscribers', () => {
  let v: V1Harness;
  const SUBSCRIBERS = 40;

  beforeAll(async () => {
    v = await startV1Harness();
    // Two places of one district whose coordinates round to the same point, and subscribers
    // given that point directly: one point in all.
    await v.addPlace('101210113', '西湖', 30.2729, 120.1474);
    await v.addPlace('101210199', '西湖街道', 30.2712, 120.1468);
    for (let i = 0; i < SUBSCRIBERS; i += 1) {
      const watched =
        i % 3 === 0
          ? [{ place: '101210113' }]
          : i % 3 === 1
            ? [{ place: '101210199' }]
            : [{ place: '101210113', points: [WEST_LAKE] }];
      await v.subscribe({ email: `s${i}@example.com` }, watched);
    }
  });
  afterAll(async () => {
    await v?.close();
  });

  it('costs one upstream call per cycle for the whole district', async () => {
    v.sim.setAlerts([
      v1Alert({
        area: { lat: 30.27, lon: 120.15, radiusKm: 5 },
        id: 'V1SHARED01',
        typeCode: '1017',
        level: '黄色',
      }),
    ]);
    const first = await v.h.pollOnce();
    expect(first.summary).toMatchObject({
      checked: 1,
      upstreamCalls: 1,
      events: { new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: SUBSCRIBERS, failed: 0, pending: 0, held: 0 },
    });
    const second = await v.h.pollOnce();
    expect(second.summary).toMatchObject({ checked: 1, upstreamCalls: 1 });
    expect(v.alertCalls()).toEqual({ [WEST_LAKE]: 2 });
    expect(v.sim.requests().total).toBe(2);
    expect(await v.h.deliveries()).toHaveLength(SUBSCRIBERS);
  });
});
