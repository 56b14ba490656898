import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVER_QUEUES } from '../../src/runtime/queues.js';
import { startWorkers } from '../../src/pipeline/workers.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { parseMail } from '../support/smtp-sink.js';
import { waitUntil } from '../support/wait.js';

/**
 * Quiet hours over real SMTP (docs/messages.md, docs/design.md invariant 9), with a window computed from
 * the current time: what falls inside is held, never dropped, and goes out as one "while you
 * were away" email when the window ends, sent by a running worker within 60 s (the wall-clock
 * test: the delayed job fires on time), or by the next `poll --once` (on a clock moved past the
 * window's end). A red warning bypasses the window, and so does the rest of its chain.
 */

const GUANGZHOU = '101280101';
const SHENZHEN = '101280601';
const HOUR = 3600_000;

/** Local "HH:MM:SS" in Asia/Shanghai (UTC+8 all year). */
const shanghaiClock = (ms: number) => new Date(ms + 8 * HOUR).toISOString().slice(11, 19);

/** A quiet window that began two minutes ago and ends `endsInMs` from now. */
async function quietUntil(h: PipelineHarness, subscriberId: string, endsInMs: number) {
  const now = Date.now();
  await h.database.db.execute(sql`
    UPDATE subscribers SET timezone = 'Asia/Shanghai',
      quiet_from = ${shanghaiClock(now - 2 * 60_000)}, quiet_to = ${shanghaiClock(now + endsInMs)},
      quiet_bypass_level = '红色'
    WHERE id = ${subscriberId}`);
  return now + endsInMs;
}

const warnings = () => {
  const yellowRain = v7Warning({
    locationId: GUANGZHOU,
    seq: 1,
    typeCode: '1003',
    level: '黄色',
    pubTime: new Date(Date.now() - 2 * HOUR),
  });
  const blueWind = v7Warning({
    locationId: SHENZHEN,
    seq: 1,
    typeCode: '1006',
    level: '蓝色',
    pubTime: new Date(Date.now() - 2 * HOUR),
  });
  const blueTyphoon = v7Warning({
    locationId: SHENZHEN,
    seq: 4,
    typeCode: '1001',
    level: '蓝色',
    pubTime: new Date(Date.now() - 2 * HOUR),
  });
  const redTyphoon = v7Warning({
    locationId: SHENZHEN,
    seq: 2,
    typeCode: '1001',
    level: '红色',
    status: 'update',
    related: blueTyphoon.id,
    pubTime: new Date(Date.now() - HOUR),
  });
  const typhoonDown = v7Warning({
    locationId: SHENZHEN,
    seq: 3,
    typeCode: '1001',
    level: '橙色',
    status: 'update',
    related: redTyphoon.id,
    pubTime: new Date(Date.now() - HOUR / 2),
  });
  return { yellowRain, blueWind, blueTyphoon, redTyphoon, typhoonDown };
};

describe('quiet hours hold and then release', () => {
  let h: PipelineHarness;
  let subscriberId: string;
  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(GUANGZHOU, '广州');
    await h.addPlace(SHENZHEN, '深圳');
    subscriberId = await h.addEmailSubscriber('night@example.com', [GUANGZHOU, SHENZHEN]);
    await h.database.db.execute(sql`UPDATE subscribers SET lang = 'en' WHERE id = ${subscriberId}`);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('holds what falls inside, sends the red chain at once, and releases at the end', async () => {
    // The window must outlast the three polls below, which take seconds each on a starved host:
    // the delayed job that ends it is what this test watches.
    const end = await quietUntil(h, subscriberId, 30_000);
    const { yellowRain, blueWind, blueTyphoon, redTyphoon, typhoonDown } = warnings();
    h.sim.setWarnings(GUANGZHOU, [yellowRain]);
    h.sim.setWarnings(SHENZHEN, [blueWind, blueTyphoon]);

    const held = await h.pollOnce();
    expect(held.code).toBe(0);
    expect(held.summary.deliveries).toEqual({ sent: 0, failed: 0, pending: 0, held: 3 });
    expect(h.smtp.messages).toHaveLength(0);

    // The typhoon turns red: it goes at once, taking its held blue state along, so that the
    // morning does not bring back a state the subscriber already knows is superseded.
    h.sim.setWarnings(SHENZHEN, [blueWind, redTyphoon]);
    const first = await h.pollOnce();
    expect(first.summary.deliveries).toEqual({ sent: 1, failed: 0, pending: 0, held: 0 });
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.smtp.messages[0]!.subject).toContain('Red');
    const urgentText = (await parseMail(h.smtp.messages[0]!.raw)).text ?? '';
    expect(urgentText).toContain(blueTyphoon.id);

    // Its update is orange, below the bypass level, and still goes at once: urgency is sticky.
    h.sim.setWarnings(SHENZHEN, [blueWind, typhoonDown]);
    const second = await h.pollOnce();
    expect(second.summary.deliveries).toEqual({ sent: 1, failed: 0, pending: 0, held: 0 });
    expect(h.smtp.messages).toHaveLength(2);
    expect(Date.now()).toBeLessThan(end);

    // A running worker sends the held message within 60 s of the window's end, and not before.
    const { ctx, redis } = h.runtime();
    const workers = startWorkers(ctx, redis, DELIVER_QUEUES);
    try {
      await waitUntil(
        () => h.smtp.messages.length >= 3,
        'the held message',
        end - Date.now() + 60_000,
      );
    } finally {
      await workers.close();
    }
    const away = h.smtp.messages[2]!;
    expect(away.receivedAt.getTime()).toBeGreaterThanOrEqual(end - 1000);
    expect(away.receivedAt.getTime()).toBeLessThanOrEqual(end + 60_000);
    const { text } = await parseMail(away.raw);
    expect(text).toContain('While you were away');
    expect(text).toContain(yellowRain.id);
    expect(text).toContain(blueWind.id);
    expect(text).not.toContain(blueTyphoon.id);
    const rows = await h.deliveries();
    expect(rows.every((r) => r.status === 'sent')).toBe(true);
    expect(rows).toHaveLength(5);
    // Five notifications in three messages: the red chain, its update, and the morning's.
    expect(new Set(rows.map((r) => r.message_id)).size).toBe(3);
  }, 180_000);
});

describe('a poll --once after the window sends what was held', () => {
  let h: PipelineHarness;
  let subscriberId: string;
  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(GUANGZHOU, '广州');
    subscriberId = await h.addEmailSubscriber('morning@example.com', [GUANGZHOU]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('releases the held message with no worker running', async () => {
    const end = await quietUntil(h, subscriberId, 20_000);
    h.sim.setWarnings(GUANGZHOU, [warnings().yellowRain]);
    const first = await h.pollOnce();
    expect(first.summary.deliveries).toEqual({ sent: 0, failed: 0, pending: 0, held: 1 });
    expect(h.smtp.messages).toHaveLength(0);

    // Shortly before the window ends (its end is kept to the second), nothing goes; a second
    // after, the next run sends it.
    const started = Date.now();
    const at = (ms: number) => ({ now: () => new Date(ms + (Date.now() - started)) });
    const before = await h.pollOnce({}, at(end - 3000));
    expect(before.summary).toMatchObject({ messages: { released: 0 } });
    expect(h.smtp.messages).toHaveLength(0);
    const after = await h.pollOnce({}, at(end + 1000));
    expect(after.code).toBe(0);
    expect(after.summary).toMatchObject({ messages: { released: 1 } });
    expect(h.smtp.messages).toHaveLength(1);
    expect((await h.deliveries()).map((r) => r.status)).toEqual(['sent']);
  });
});
