import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { webhookPayload } from '../../src/domain/render.js';
import { claimMessages, knownOf, type Outgoing } from '../../src/ledger/index.js';
import { runCheck, type CheckPayload } from '../../src/pipeline/check.js';
import { contentOf } from '../../src/pipeline/message-content.js';
import { runPoll } from '../../src/pipeline/poll.js';
import type { FirstAttemptBatch, PipelineContext } from '../../src/runtime/context.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v1Alert, v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startV1Harness, type V1Harness } from '../pipeline/v1-harness.js';

/**
 * A first attempt sent from the check's own process goes out as its check knows it
 * (src/ledger/known-first-attempt.ts), without the take that reads it back. What it carries must
 * be what the take reads: same message, same notification, same rendering, for every kind of
 * subscriber a check writes leased messages to (webhook and unbatched email, Chinese and
 * English, own time zone or the place's) and every kind of event (new, update with what it
 * supersedes, an update told as first news, cancel; v7 and v1 with its attributions).
 */

/** The checks a poll enqueued, run with `ctx` (whose process sends the first attempts). */
async function checkAll(rt: Runtime, ctx: PipelineContext): Promise<void> {
  const poll = await runPoll(rt.ctx, {});
  if (!poll.ok) throw new Error('poll failed');
  const jobs = await rt.ctx.queues.check.getJobs(['waiting', 'prioritized', 'delayed']);
  for (const job of jobs) {
    await runCheck(ctx, job.data as CheckPayload);
    await job.remove();
  }
}

/** A process that sends first attempts: here it only keeps the batches it is handed. */
function keeping(rt: Runtime): { ctx: PipelineContext; handed: FirstAttemptBatch[] } {
  const handed: FirstAttemptBatch[] = [];
  const ctx: PipelineContext = {
    ...rt.ctx,
    firstAttempts: { channels: ['webhook', 'email'], send: (batches) => handed.push(...batches) },
  };
  return { ctx, handed };
}

/** An `Outgoing` with its times as instants: the take reads timestamps as text. */
const comparable = (m: Outgoing) => ({
  ...m,
  // When each read the subscriber: compared on its own below.
  readAt: undefined,
  notifications: m.notifications.map((n) => ({
    ...n,
    detected_at: new Date(n.detected_at).getTime(),
    // A stored record went through JSON: a key left undefined in memory is absent there.
    record: JSON.parse(JSON.stringify(n.record)) as unknown,
  })),
});

/**
 * Every batch handed over carries its messages, and each is what the take reads back (the
 * take only reads here: the batch's job owns these first attempts).
 */
async function expectKnownAsTaken(ctx: PipelineContext, handed: FirstAttemptBatch[]) {
  expect(handed.length).toBeGreaterThan(0);
  for (const batch of handed) {
    expect(knownOf(batch)?.map((m) => m.id)).toEqual(batch.messageIds);
    const taken = await claimMessages(ctx, batch.messageIds, batch.jobId);
    const byId = new Map(taken.map((m) => [m.id, m]));
    for (const known of knownOf(batch) ?? []) {
      const read = byId.get(known.id);
      expect(read, `message ${known.id} read back`).toBeDefined();
      expect(comparable(known)).toEqual(comparable(read!));
      // The check read the subscriber before the take did.
      expect(known.readAt).toBeLessThanOrEqual(read!.readAt);
      expect(contentOf(known)).toEqual(contentOf(read!));
      for (const [i, n] of contentOf(known).notifications.entries()) {
        expect(JSON.stringify(webhookPayload(n))).toBe(
          JSON.stringify(webhookPayload(contentOf(read!).notifications[i]!)),
        );
      }
    }
  }
}

describe('first attempts as their check knows them (v7)', () => {
  const PLACE = '101280101';
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(PLACE, '广州');
    await h.database.db.execute(sql`UPDATE places SET name_en = 'Guangzhou' WHERE id = ${PLACE}`);
    await h.addWebhookSubscriber('/zh', [PLACE]);
    const en = await h.addWebhookSubscriber('/en', [PLACE]);
    await h.database.db.execute(
      sql`UPDATE subscribers SET lang = 'en', timezone = 'Europe/Berlin' WHERE id = ${en}`,
    );
    await h.addEmailSubscriber('direct@example.com', [PLACE], {}, 'none');
    // Grouped by cycle: scheduled, never leased, never in a batch handed over.
    await h.addEmailSubscriber('grouped@example.com', [PLACE]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('carries what the take reads: new, update, cancel', async () => {
    const first = v7Warning({ locationId: PLACE, seq: 1, typeCode: '1003', level: '黄色' });
    h.sim.setWarnings(PLACE, [first]);
    const news = keeping(rt);
    await checkAll(rt, news.ctx);
    expect(news.handed.flatMap((b) => b.messageIds)).toHaveLength(3);
    expect(new Set(news.handed.map((b) => b.channel))).toEqual(new Set(['webhook', 'email']));
    await expectKnownAsTaken(news.ctx, news.handed);

    // An update: it supersedes the first warning.
    const raised = v7Warning({
      locationId: PLACE,
      seq: 2,
      typeCode: '1003',
      level: '橙色',
      status: 'update',
      related: first.id,
    });
    h.sim.setWarnings(PLACE, [raised]);
    const updates = keeping(rt);
    await checkAll(rt, updates.ctx);
    const events = updates.handed.flatMap((b) => knownOf(b) ?? []).flatMap((m) => m.notifications);
    expect(new Set(events.map((n) => n.event_type))).toEqual(new Set(['update']));
    expect(events.every((n) => n.supersedes.includes(first.id))).toBe(true);
    await expectKnownAsTaken(updates.ctx, updates.handed);

    const cancelled = v7Warning({
      locationId: PLACE,
      seq: 3,
      typeCode: '1003',
      level: '橙色',
      status: 'cancel',
      related: raised.id,
    });
    h.sim.setWarnings(PLACE, [cancelled]);
    const cancels = keeping(rt);
    await checkAll(rt, cancels.ctx);
    expect(cancels.handed.flatMap((b) => b.messageIds)).toHaveLength(3);
    await expectKnownAsTaken(cancels.ctx, cancels.handed);
  });

  it('carries an update told as first news to a newcomer as the take reads it', async () => {
    const PLACE2 = '101280102';
    await h.addPlace(PLACE2, '番禺');
    const start = v7Warning({ locationId: PLACE2, seq: 11, typeCode: '1006', level: '蓝色' });
    h.sim.setWarnings(PLACE2, [start]);
    await checkAll(rt, keeping(rt).ctx);
    // Subscribed after the start: the update is their first news of it.
    await h.addWebhookSubscriber('/late', [PLACE2]);
    h.sim.setWarnings(PLACE2, [
      v7Warning({
        locationId: PLACE2,
        seq: 12,
        typeCode: '1006',
        level: '黄色',
        status: 'update',
        related: start.id,
      }),
    ]);
    const later = keeping(rt);
    await checkAll(rt, later.ctx);
    const late = (
      await queryRows<{ id: string; event_type: string }>(
        h.database.db,
        sql`SELECT d.id, d.event_type FROM deliveries d JOIN subscribers s ON s.id = d.subscriber_id
          WHERE s.name = '/late'`,
      )
    )[0];
    expect(late?.event_type).toBe('new');
    expect(later.handed.flatMap((b) => b.messageIds)).toContain(late!.id);
    await expectKnownAsTaken(later.ctx, later.handed);
  });
});

describe('first attempts as their check knows them (v1)', () => {
  let v: V1Harness;
  let rt: Runtime;

  beforeAll(async () => {
    v = await startV1Harness();
    rt = v.h.runtime();
    await v.addPlace('101210101', '杭州', 30.25, 120.17);
    await v.subscribe({ webhookPath: '/v1/place' }, [{ place: '101210101' }]);
    await v.subscribe({ webhookPath: '/v1/point' }, [
      { place: '101210101', points: ['30.27,120.15'] },
    ]);
  });
  afterAll(async () => {
    await v?.close();
  });

  it('carries a v1 alert and its attributions as the take reads them', async () => {
    v.sim.setAlerts([
      v1Alert({
        area: { lat: 30.26, lon: 120.16, radiusKm: 10 },
        id: 'V1KNOWN0001',
        typeCode: '1003',
        level: '橙色',
      }),
    ]);
    const checks = keeping(rt);
    await checkAll(rt, checks.ctx);
    const known = checks.handed.flatMap((b) => knownOf(b) ?? []);
    expect(known).toHaveLength(2);
    expect(known.every((m) => m.notifications[0]?.record.source === 'v1')).toBe(true);
    expect(known.every((m) => (m.notifications[0]?.attributions ?? []).length > 0)).toBe(true);
    await expectKnownAsTaken(checks.ctx, checks.handed);
  });
});
