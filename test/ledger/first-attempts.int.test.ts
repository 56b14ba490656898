import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLAIM_SECONDS } from '../../src/ledger/take.js';
import { requeueDueMessages } from '../../src/ledger/recover.js';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { runDeliver } from '../../src/pipeline/deliver.js';
import { InProcessFirstAttempts } from '../../src/pipeline/first-attempts.js';
import { runPoll } from '../../src/pipeline/poll.js';
import type { FirstAttemptBatch, PipelineContext } from '../../src/runtime/context.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

const PLACE = '101280101';

/**
 * A process that checks and delivers sends the first attempts of its checks itself
 * (src/pipeline/first-attempts.ts): the check's statement writes those messages claimed by it
 * for CLAIM_SECONDS (the lease), and no deliver job carries them. These tests hold each
 * transition: sent by the checking process with no job; untouched by the sweeper and by any
 * other job while the lease holds; given a job by the sweeper when a process died with the
 * lease, and then sent once.
 */
describe('first attempts sent by the checking process', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  let seq = 0;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(PLACE, '广州');
    for (let i = 0; i < 3; i += 1) await h.addWebhookSubscriber(`/f/${i}`, [PLACE]);
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(async () => {
    h.hooks.reset();
    await rt.ctx.queues.deliverWebhook.obliterate({ force: true });
  });

  /** A new warning at the place, checked with `ctx`; the ids of the messages it created. */
  async function checkedWith(ctx: PipelineContext): Promise<string[]> {
    seq += 1;
    h.sim.setWarnings(PLACE, [
      v7Warning({ locationId: PLACE, seq, typeCode: '1003', level: '橙色' }),
    ]);
    const poll = await runPoll(rt.ctx, {});
    if (!poll.ok) throw new Error('poll failed');
    await runCheck(ctx, { cycleId: poll.cycleId, placeId: PLACE });
    const rows = await queryRows<{ id: string }>(
      h.database.db,
      sql`SELECT id FROM deliveries WHERE cycle_id = ${poll.cycleId} ORDER BY id`,
    );
    return rows.map((r) => r.id);
  }

  const messages = (ids: readonly string[]) =>
    queryRows<{ status: string; attempts: number; leased: boolean; job: string | null }>(
      h.database.db,
      sql`SELECT status, attempts, claimed_until IS NOT NULL AS leased, first_job_id AS job
          FROM messages WHERE id = ANY(${sql.param([...ids])}::uuid[]) ORDER BY id`,
    );

  const deliverJobs = async () =>
    Object.values(await rt.ctx.queues.deliverWebhook.getJobCounts()).reduce((a, b) => a + b, 0);

  /** A process that committed its check and died before it sent anything. */
  function diedAfterCommit(): { ctx: PipelineContext; handed: FirstAttemptBatch[] } {
    const handed: FirstAttemptBatch[] = [];
    const ctx: PipelineContext = {
      ...rt.ctx,
      firstAttempts: { channels: ['webhook'], send: (batches) => handed.push(...batches) },
    };
    return { ctx, handed };
  }

  it('sends them from the checking process, once each, with no deliver job', async () => {
    const sender = new InProcessFirstAttempts(rt.ctx, ['webhook', 'email', 'robot']);
    expect(sender.channels).toEqual(['webhook', 'email']);
    const ids = await checkedWith(sender.context);
    expect(ids).toHaveLength(3);
    await sender.drain();
    expect(h.hooks.requests).toHaveLength(3);
    expect(new Set(h.hooks.requests.map((r) => r.path))).toEqual(new Set(['/f/0', '/f/1', '/f/2']));
    await expect
      .poll(async () => (await messages(ids)).map((m) => m.status))
      .toEqual(['sent', 'sent', 'sent']);
    expect((await messages(ids)).every((m) => m.attempts === 1 && !m.leased)).toBe(true);
    expect(await deliverJobs()).toBe(0);
  });

  it('leaves leased messages to their process: no sweep and no other job takes them', async () => {
    const { ctx, handed } = diedAfterCommit();
    const ids = await checkedWith(ctx);
    expect(handed.flatMap((b) => b.messageIds).sort()).toEqual(ids);
    expect(await deliverJobs()).toBe(0);
    const written = await messages(ids);
    expect(written.every((m) => m.status === 'pending' && m.attempts === 0 && m.leased)).toBe(true);

    // Minutes inside the lease: the sweeper finds nothing to requeue.
    const inside = new Date(Date.now() + (CLAIM_SECONDS - 10) * 1000);
    const sweptInside = await requeueDueMessages({ ...rt.ctx, now: () => inside }, 0);
    expect(sweptInside.requeued).toBe(0);
    // A job that names them but does not own them takes nothing.
    const other = await runDeliver(rt.ctx, { messageIds: ids }, 'someone-else');
    expect(other.skipped).toBe(3);
    expect(h.hooks.requests).toHaveLength(0);
  });

  it('sends once what a process that died left, after its lease', async () => {
    const { ctx } = diedAfterCommit();
    const ids = await checkedWith(ctx);
    const after = new Date(Date.now() + (CLAIM_SECONDS + 1) * 1000);
    const later = { ...rt.ctx, now: () => after };
    const swept = await requeueDueMessages(later, 0);
    expect(swept.due.map((m) => m.id)).toEqual(expect.arrayContaining(ids));
    // Each has a job of its own now (the test before left three more); the jobs send them.
    const jobs = (await rt.ctx.queues.deliverWebhook.getJobs(['waiting', 'prioritized'])).filter(
      (j) => (j.data as { messageIds: string[] }).messageIds.every((id) => ids.includes(id)),
    );
    expect(jobs.flatMap((j) => (j.data as { messageIds: string[] }).messageIds).sort()).toEqual(
      ids,
    );
    for (const job of jobs) {
      await runDeliver(later, job.data as { messageIds: string[] }, job.id);
    }
    // Once each, under its own id (a check that ended the last warning too wrote more).
    expect(h.hooks.requests.map((r) => r.headers['webhook-id']).sort()).toEqual(ids);
    await expect
      .poll(async () => (await messages(ids)).every((m) => m.status === 'sent'))
      .toBe(true);
    // Sent: a sweep later finds none of them due.
    const again = await requeueDueMessages(later, 0);
    expect(again.due.filter((m) => ids.includes(m.id))).toEqual([]);
  });
});
