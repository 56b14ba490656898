import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { v1Alert } from '../../src/simulator/index.js';
import { startV1Harness, type V1Harness } from './v1-harness.js';
import { notificationsOutsideTheirEventsCycle } from '../support/pipeline.js';

const HANGZHOU = '101210101';
const XIHU = '101210113';
const NINGBO = '101210401';
/** The watched points: the places' coordinates rounded to two decimals. */
const P_HANGZHOU = '30.25,120.21';
const P_XIHU = '30.27,120.15';
const P_NINGBO = '29.86,121.62';

/** Covers Hangzhou and Xihu (about 6 km apart), not Ningbo. */
const AREA = { lat: 30.25, lon: 120.2, radiusKm: 30 };

/** What the simulator sends in `metadata.attributions`. */
const ATTRIBUTION = 'https://developer.qweather.com/attribution.html';

const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000);

/**
 * The pipeline scenario of the v7 source, rewritten for Weather Alert v1 and JWT auth, through
 * `qwn poll --once` with QWEATHER_ALERT_SOURCE=v1: alert, unchanged (same tag), update with
 * supersedes, upstream failure, gone twice → expired, cancel. One alert id is returned at every
 * point of its area: the ledger must still hold one notification per subscriber.
 */
describe('poll --once in v1 mode over an alert timeline', () => {
  let v: V1Harness;
  const yellow = v1Alert({
    area: AREA,
    id: 'V1RAIN0001',
    typeCode: '1003',
    level: '黄色',
    issuedTime: hoursAgo(6),
    instruction: '减少户外活动。',
    // supersedes null instead of []: accepted as "replaces nothing".
    quirks: ['nullSupersedes'],
  });
  const orange = v1Alert({
    area: AREA,
    id: 'V1RAIN0002',
    typeCode: '1003',
    level: '橙色',
    messageType: 'update',
    supersedes: [yellow.alert.id],
    issuedTime: hoursAgo(5),
    instruction: '停止户外作业。',
  });
  const red = v1Alert({
    area: AREA,
    id: 'V1TYPH0003',
    typeCode: '1001',
    level: '红色',
    issuedTime: hoursAgo(2),
    // `expiredTime` as some pages spell it.
    quirks: ['expiredTime'],
  });
  const cancelRed = v1Alert({
    area: AREA,
    id: 'V1TYPH0004',
    typeCode: '1001',
    level: '红色',
    messageType: 'cancel',
    supersedes: [red.alert.id],
    issuedTime: hoursAgo(1),
  });

  beforeAll(async () => {
    v = await startV1Harness();
    await v.addPlace(HANGZHOU, '杭州', 30.246, 120.2108);
    await v.addPlace(XIHU, '西湖', 30.2729, 120.1474);
    await v.addPlace(NINGBO, '宁波', 29.8603, 121.6245);
    await v.subscribe({ email: 'duty@example.com' }, [{ place: HANGZHOU }]);
    // Orange and above only, and two of its three points lie in the alert's area.
    await v.subscribe(
      { webhookPath: '/dispatch' },
      [{ place: HANGZHOU }, { place: XIHU }, { place: NINGBO }],
      { minLevel: '橙色' },
    );
  });
  afterAll(async () => {
    await v?.close();
  });

  it('announces a new alert once, whatever number of points report it', async () => {
    v.sim.setAlerts([yellow]);
    const { code, summary, stderr } = await v.h.pollOnce();
    expect(code, stderr).toBe(0);
    expect(summary).toMatchObject({
      listed: 0,
      checked: 3,
      upstreamCalls: 3,
      upstreamErrors: 0,
      events: { new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: 1, failed: 0, pending: 0, held: 0 },
    });
    // No list call in v1: every watched point, once, with JWT auth.
    expect(v.alertCalls()).toEqual({ [P_HANGZHOU]: 1, [P_XIHU]: 1, [P_NINGBO]: 1 });
    expect(v.sim.requests().total).toBe(3);
    expect(
      (await v.h.deliveries()).map((d) => [d.subscriber, d.warning_id, d.event_type, d.status]),
    ).toEqual([['duty@example.com', yellow.alert.id, 'new', 'sent']]);

    const [mail] = v.h.smtp.messages;
    expect(mail?.subject).toContain(yellow.alert.headline);
    expect(mail?.parsed.text).toContain(yellow.alert.description);
    expect(mail?.parsed.text).toContain('减少户外活动。');
    expect(mail?.parsed.text).toContain('杭州 (101210101)');
    // The data attribution of the answer, after the product's own line.
    expect(mail?.parsed.text).toContain(`和风天气 QWeather\n${ATTRIBUTION}\n`);
  });

  it('skips an answer whose tag has not changed', async () => {
    const before = await queryRows<{ id: string; last_tag: string | null }>(
      v.h.database.db,
      sql`SELECT id, last_tag FROM alert_points ORDER BY id`,
    );
    expect(before.map((p) => p.id)).toEqual([P_NINGBO, P_HANGZHOU, P_XIHU]);
    expect(before.every((p) => p.last_tag !== null)).toBe(true);

    const { summary } = await v.h.pollOnce();
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(summary.deliveries).toEqual({ sent: 0, failed: 0, pending: 0, held: 0 });
    expect(await v.h.deliveries()).toHaveLength(1);
    // Tracked per point: the alert is open at the two points of its area.
    const tracked = await queryRows<{ place_id: string; state: string; misses: number }>(
      v.h.database.db,
      sql`SELECT place_id, state, misses FROM warnings WHERE warning_id = ${yellow.alert.id}
          ORDER BY place_id`,
    );
    expect(tracked).toEqual([
      { place_id: P_HANGZHOU, state: 'open', misses: 0 },
      { place_id: P_XIHU, state: 'open', misses: 0 },
    ]);
  });

  it('follows an update to the alert it supersedes, once per subscriber', async () => {
    v.sim.setAlerts([orange]);
    const { summary } = await v.h.pollOnce();
    expect(summary.events).toEqual({ new: 0, update: 1, cancel: 0, expired: 0, resumed: 0 });
    expect(summary.deliveries).toEqual({ sent: 2, failed: 0, pending: 0, held: 0 });
    const rows = await v.h.deliveries();
    // Rows from checks of different points (v1) or one transaction carry no reliable order.
    // /dispatch (orange and above) was never told the yellow warning: the orange one is its
    // first news of it, a new with nothing it replaces (README, promises).
    expect(
      rows
        .filter((d) => d.warning_id === orange.alert.id)
        .map((d) => [d.subscriber, d.warning_id, d.event_type])
        .sort((a, b) => a.join().localeCompare(b.join())),
    ).toEqual([
      ['/dispatch', orange.alert.id, 'new'],
      ['duty@example.com', orange.alert.id, 'update'],
    ]);
    const hook = v.h.hooks.requestsTo('/dispatch');
    expect(hook).toHaveLength(1);
    expect(hook[0]!.verified).toBe(true);
    expect(hook[0]!.json).toMatchObject({
      type: 'warning.new',
      data: {
        warning: {
          id: orange.alert.id,
          source: 'v1',
          title: orange.alert.headline,
          text: orange.alert.description,
          instruction: '停止户外作业。',
          level: '橙色',
          color: 'orange',
          type: '1003',
          typeName: '暴雨',
          status: 'update',
          related: yellow.alert.id,
        },
        supersedes: [],
        attributions: [ATTRIBUTION],
      },
    });
    // Times as asked: local, with the offset of the point.
    const warning = (hook[0]!.json as { data: { warning: { pubTime: string } } }).data.warning;
    expect(warning.pubTime).toMatch(/\+08:00$/);
  });

  it('reads an upstream failure as nothing, never as an end', async () => {
    v.sim.setAlerts([]);
    v.sim.addFault({ kind: 'http', status: 500, operation: 'weatherAlert' });
    const { code, summary } = await v.h.pollOnce();
    v.sim.clearFaults();
    expect(code).toBe(0);
    expect(summary.upstreamErrors).toBe(3);
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(await v.h.deliveries()).toHaveLength(3);
  });

  it('ends an alert only after it is missing from two answers, once per subscriber', async () => {
    const first = await v.h.pollOnce();
    expect(first.summary.events.expired).toBe(0);
    // The second answer has the same tag as the first: the pending end is confirmed anyway.
    const second = await v.h.pollOnce();
    expect(second.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 1, resumed: 0 });
    // /dispatch watched both points where it ended: still one notification.
    expect(second.summary.deliveries).toEqual({ sent: 2, failed: 0, pending: 0, held: 0 });

    v.sim.resetRequests();
    const third = await v.h.pollOnce();
    expect(third.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    // Every watched point is still asked: v1 has no list to say where nothing is.
    expect(v.alertCalls()).toEqual({ [P_HANGZHOU]: 1, [P_XIHU]: 1, [P_NINGBO]: 1 });
  });

  it('announces a cancel, never the cancel message as new, and not again when it goes', async () => {
    v.sim.setAlerts([red]);
    const raised = await v.h.pollOnce();
    expect(raised.summary.events).toEqual({ new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 });
    v.sim.setAlerts([cancelRed]);
    const cancelled = await v.h.pollOnce();
    expect(cancelled.summary.events).toEqual({
      new: 0,
      update: 0,
      cancel: 1,
      expired: 0,
      resumed: 0,
    });
    const again = await v.h.pollOnce();
    expect(again.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    // The cancel message disappears about an hour later: nothing to announce.
    v.sim.advanceClock(61 * 60_000);
    for (let i = 0; i < 2; i += 1) {
      const gone = await v.h.pollOnce();
      expect(gone.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    }
  });

  it('leaves exactly the owed notifications in the ledger, each delivered once', async () => {
    const rows = await v.h.deliveries();
    const owed = [
      ['duty@example.com', yellow.alert.id, 'new'],
      ['/dispatch', orange.alert.id, 'new'],
      ['duty@example.com', orange.alert.id, 'update'],
      ['/dispatch', orange.alert.id, 'expired'],
      ['duty@example.com', orange.alert.id, 'expired'],
      ['/dispatch', red.alert.id, 'new'],
      ['duty@example.com', red.alert.id, 'new'],
      ['/dispatch', cancelRed.alert.id, 'cancel'],
      ['duty@example.com', cancelRed.alert.id, 'cancel'],
    ];
    const key = (r: string[]) => r.join(' ');
    expect(rows.map((d) => key([d.subscriber, d.warning_id, d.event_type])).sort()).toEqual(
      owed.map(key).sort(),
    );
    expect(rows.every((d) => d.status === 'sent')).toBe(true);
    expect(v.h.smtp.messages).toHaveLength(5);
    const hooks = v.h.hooks.requestsTo('/dispatch');
    expect(hooks).toHaveLength(4);
    expect(hooks.every((r) => r.verified)).toBe(true);
    expect(new Set(hooks.map((r) => r.headers['webhook-id'])).size).toBe(4);
  });

  it('refuses to run on a key the upstream does not trust, changing nothing', async () => {
    const before = await v.h.deliveries();
    const { summary } = await v.h.pollOnce({ QWEATHER_JWT_PRIVATE_KEY: v.wrongKeyPath });
    expect(summary.upstreamErrors).toBe(3);
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(await v.h.deliveries()).toEqual(before);
  });

  it("wrote each notification with its event's cycle, by which a cycle's are found", async () => {
    expect(await notificationsOutsideTheirEventsCycle(v.h.database.db)).toEqual([]);
  });
});
