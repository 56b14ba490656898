import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7Warning } from '../../src/simulator/index.js';
import {
  startPipelineHarness,
  type PipelineHarness,
  notificationsOutsideTheirEventsCycle,
} from '../support/pipeline.js';

const HANGZHOU = '101210101';
const NINGBO = '101210401';
const BEIJING = '101010100';

/**
 * The whole flow through `qwn poll --once`, step by step: new, unchanged, update, an upstream
 * failure, a warning leaving the list (expired only after confirmation), cancel. The ledger
 * must hold exactly the notifications owed (docs/design.md invariant 2–4).
 */
// Times near the real clock: a warning whose end time has passed is over at once by rule.
const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000);

describe('poll --once over a warning timeline', () => {
  let h: PipelineHarness;
  const yellow = v7Warning({
    locationId: HANGZHOU,
    seq: 1,
    typeCode: '1003',
    level: '黄色',
    pubTime: hoursAgo(6),
  });
  const orange = v7Warning({
    locationId: HANGZHOU,
    seq: 2,
    typeCode: '1003',
    level: '橙色',
    status: 'update',
    related: yellow.id,
    pubTime: hoursAgo(5),
  });
  const red = v7Warning({
    locationId: HANGZHOU,
    seq: 3,
    typeCode: '1001',
    level: '红色',
    pubTime: hoursAgo(2),
  });
  const cancelRed = v7Warning({
    locationId: HANGZHOU,
    seq: 4,
    typeCode: '1001',
    level: '红色',
    status: 'cancel',
    related: red.id,
    pubTime: hoursAgo(1),
  });
  const beijingWind = v7Warning({ locationId: BEIJING, seq: 1, typeCode: '1006', level: '蓝色' });

  const warningNowCalls = () => h.sim.requests().byOperationLocation.warningNow;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.addEmailSubscriber('duty@example.com', [HANGZHOU]);
    // Orange and above only: the yellow warning is filtered out for this subscriber.
    await h.addWebhookSubscriber('/dispatch', [HANGZHOU, NINGBO], { minLevel: '橙色' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('announces a new warning to the subscribers whose filters let it through', async () => {
    h.sim.setWarnings(HANGZHOU, [yellow]);
    h.sim.setWarnings(BEIJING, [beijingWind]);
    const { code, summary } = await h.pollOnce();
    expect(code).toBe(0);
    expect(summary).toMatchObject({
      listed: 2,
      checked: 1,
      upstreamCalls: 2,
      upstreamErrors: 0,
      events: { new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: 1, failed: 0, pending: 0, held: 0 },
      // The email subscriber's cycle message, sent once the cycle's checks were done.
      messages: { sent: 1, failed: 0, pending: 0, held: 0, released: 0 },
    });
    // Beijing is listed but nobody watches it: it costs no upstream call.
    expect(warningNowCalls()).toEqual({ [HANGZHOU]: 1 });
    expect(
      (await h.deliveries()).map((d) => [d.subscriber, d.warning_id, d.event_type, d.status]),
    ).toEqual([['duty@example.com', yellow.id, 'new', 'sent']]);
    expect(h.smtp.messages).toHaveLength(1);
  });

  it('announces nothing when nothing changed', async () => {
    const { summary } = await h.pollOnce();
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(summary.deliveries).toEqual({ sent: 0, failed: 0, pending: 0, held: 0 });
    expect(summary.messages).toEqual({ sent: 0, failed: 0, pending: 0, held: 0, released: 0 });
    expect(await h.deliveries()).toHaveLength(1);
  });

  it('follows an update to the warning it replaces', async () => {
    h.sim.setWarnings(HANGZHOU, [orange]);
    const { summary } = await h.pollOnce();
    expect(summary.events).toEqual({ new: 0, update: 1, cancel: 0, expired: 0, resumed: 0 });
    expect(summary.deliveries).toEqual({ sent: 2, failed: 0, pending: 0, held: 0 });
    expect(summary.messages).toEqual({ sent: 2, failed: 0, pending: 0, held: 0, released: 0 });
    const rows = await h.deliveries();
    // Rows from checks of different points (v1) or one transaction carry no reliable order.
    // /dispatch (orange and above) was never told the yellow warning: the orange one is its
    // first news of it, a new with nothing it replaces (README, promises).
    expect(
      rows
        .filter((d) => d.warning_id === orange.id)
        .map((d) => [d.subscriber, d.warning_id, d.event_type])
        .sort((a, b) => a.join().localeCompare(b.join())),
    ).toEqual([
      ['/dispatch', orange.id, 'new'],
      ['duty@example.com', orange.id, 'update'],
    ]);
    const hook = h.hooks.requestsTo('/dispatch');
    expect(hook).toHaveLength(1);
    expect(hook[0]!.verified).toBe(true);
    expect(hook[0]!.json).toMatchObject({
      type: 'warning.new',
      data: { warning: { id: orange.id, level: '橙色' }, supersedes: [] },
    });
  });

  it('reads an upstream failure as nothing, never as an end', async () => {
    h.sim.setWarnings(HANGZHOU, []);
    h.sim.setListed([HANGZHOU]);
    h.sim.addFault({ kind: 'http', status: 500, operation: 'warningNow' });
    const { code, summary } = await h.pollOnce();
    h.sim.clearFaults();
    expect(code).toBe(0);
    expect(summary.upstreamErrors).toBe(1);
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(await h.deliveries()).toHaveLength(3);
  });

  it('ends a warning that left the list only after it is missing twice', async () => {
    h.sim.setListed(null);
    h.sim.resetRequests();
    const first = await h.pollOnce();
    // Off the list (only Beijing is listed), but it still holds an open warning: checked to
    // confirm the end.
    expect(first.summary).toMatchObject({ listed: 1, checked: 1 });
    expect(first.summary.events.expired).toBe(0);
    expect(warningNowCalls()).toEqual({ [HANGZHOU]: 1 });

    const second = await h.pollOnce();
    expect(second.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 1, resumed: 0 });
    expect(second.summary.deliveries).toEqual({ sent: 2, failed: 0, pending: 0, held: 0 });

    // Nothing open any more: the next quiet cycle checks nothing at all.
    h.sim.resetRequests();
    const third = await h.pollOnce();
    expect(third.summary).toMatchObject({ listed: 1, checked: 0, upstreamCalls: 1 });
    expect(warningNowCalls()).toEqual({});
  });

  it('announces a cancel, never the cancel record as new', async () => {
    h.sim.setWarnings(HANGZHOU, [red]);
    const raised = await h.pollOnce();
    expect(raised.summary.events).toEqual({ new: 1, update: 0, cancel: 0, expired: 0, resumed: 0 });
    h.sim.setWarnings(HANGZHOU, [cancelRed]);
    const cancelled = await h.pollOnce();
    expect(cancelled.summary.events).toEqual({
      new: 0,
      update: 0,
      cancel: 1,
      expired: 0,
      resumed: 0,
    });
    // The cancel record stays visible for a while: still nothing more.
    const again = await h.pollOnce();
    expect(again.summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
  });

  it('leaves exactly the owed notifications in the ledger, each delivered once', async () => {
    const rows = await h.deliveries();
    const owed = [
      ['duty@example.com', yellow.id, 'new'],
      ['/dispatch', orange.id, 'new'],
      ['duty@example.com', orange.id, 'update'],
      ['/dispatch', orange.id, 'expired'],
      ['duty@example.com', orange.id, 'expired'],
      ['/dispatch', red.id, 'new'],
      ['duty@example.com', red.id, 'new'],
      ['/dispatch', cancelRed.id, 'cancel'],
      ['duty@example.com', cancelRed.id, 'cancel'],
    ];
    const key = (r: string[]) => r.join(' ');
    expect(rows.map((d) => key([d.subscriber, d.warning_id, d.event_type])).sort()).toEqual(
      owed.map(key).sort(),
    );
    expect(rows.every((d) => d.status === 'sent')).toBe(true);
    // Each email carried the one notification its cycle made for the subscriber, under the
    // cycle message's id; each webhook one notification, under the notification's own id.
    const emailRows = rows.filter((d) => d.channel === 'email');
    expect(h.smtp.messages).toHaveLength(5);
    expect(h.smtp.messages.map((m) => m.messageId).sort()).toEqual(
      emailRows.map((d) => `${d.message_id}@qwn`).sort(),
    );
    const hooks = h.hooks.requestsTo('/dispatch');
    expect(hooks).toHaveLength(4);
    expect(hooks.every((r) => r.verified)).toBe(true);
    expect(hooks.map((r) => r.headers['webhook-id']).sort()).toEqual(
      rows
        .filter((d) => d.channel === 'webhook')
        .map((d) => d.id)
        .sort(),
    );
  });

  it("wrote each notification with its event's cycle, by which a cycle's are found", async () => {
    expect(await notificationsOutsideTheirEventsCycle(h.database.db)).toEqual([]);
  });
});
