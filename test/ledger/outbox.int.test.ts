import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redeliver } from '../../src/ledger/redeliver.js';
import { getDeliveries } from '../../src/ledger/list.js';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { runDeliver } from '../../src/pipeline/deliver.js';
import { runPoll } from '../../src/pipeline/poll.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

const PLACE = '101280101';

/**
 * The outbox (docs/design.md): a direct message (one notification, nothing holding it back) has
 * its row from the check's statement, pending and owned by the first-attempt job the check
 * planned it into. These tests hold each transition of such a message: sent once by its own job
 * and by no other; handed back when its job is lost; a failure remembered; shown and refused by
 * the admin commands as a pending message with its attempt under way.
 */
describe('direct messages in the outbox', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  let seq = 0;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(PLACE, '广州');
    for (let i = 0; i < 3; i += 1) await h.addWebhookSubscriber(`/d/${i}`, [PLACE]);
    await h.addEmailSubscriber('direct@example.com', [PLACE], {}, 'none');
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(async () => {
    await rt.ctx.queues.deliverWebhook.obliterate({ force: true });
    await rt.ctx.queues.deliverEmail.obliterate({ force: true });
  });

  /** A new warning at the place, checked with no worker running: its messages wait. */
  async function checkedWarning(): Promise<{ ids: string[]; batches: Batch[] }> {
    seq += 1;
    h.sim.setWarnings(PLACE, [
      v7Warning({ locationId: PLACE, seq, typeCode: '1003', level: '橙色' }),
    ]);
    const poll = await runPoll(rt.ctx, {});
    if (!poll.ok) throw new Error('poll failed');
    await runCheck(rt.ctx, { cycleId: poll.cycleId, placeId: PLACE });
    const rows = await queryRows<{ id: string }>(
      h.database.db,
      sql`SELECT id FROM deliveries WHERE cycle_id = ${poll.cycleId} ORDER BY id`,
    );
    const owned = await queryRows<{ id: string; channel: Batch['channel']; job: string }>(
      h.database.db,
      sql`SELECT id, channel, first_job_id AS job FROM messages
          WHERE id = ANY(${sql.param(rows.map((r) => r.id))}::uuid[]) ORDER BY id`,
    );
    const batches = new Map<string, Batch>();
    for (const m of owned) {
      const b = batches.get(m.job) ?? { job_id: m.job, channel: m.channel, message_ids: [] };
      b.message_ids.push(m.id);
      batches.set(m.job, b);
    }
    return { ids: rows.map((r) => r.id), batches: [...batches.values()] };
  }

  interface Batch {
    job_id: string;
    channel: 'webhook' | 'email';
    message_ids: string[];
  }

  const messageRows = (ids: readonly string[]) =>
    queryRows<{ id: string; status: string; attempts: number; first_job_id: string | null }>(
      h.database.db,
      sql`SELECT id, status, attempts, first_job_id FROM messages
          WHERE id = ANY(${sql.param([...ids])}::uuid[]) ORDER BY id`,
    );

  it('writes each message with its notification, owned by its job, and sends it once', async () => {
    const { ids, batches } = await checkedWarning();
    expect(ids).toHaveLength(4);
    expect((await messageRows(ids)).map((r) => [r.status, r.attempts])).toEqual(
      ids.map(() => ['pending', 0]),
    );
    // One batch per channel, naming every message, each waiting in its job.
    expect(batches.map((b) => b.channel).sort()).toEqual(['email', 'webhook']);
    expect(batches.flatMap((b) => b.message_ids).sort()).toEqual(ids);
    for (const b of batches) {
      const queue =
        b.channel === 'email' ? rt.ctx.queues.deliverEmail : rt.ctx.queues.deliverWebhook;
      const job = await queue.getJob(b.job_id);
      expect(job?.data).toEqual({ messageIds: [...b.message_ids].sort() });
    }

    // Any other job, or a run without one, leaves them to the owner.
    const webhookBatch = batches.find((b) => b.channel === 'webhook')!;
    for (const jobId of ['intruder', undefined]) {
      const result = await runDeliver(rt.ctx, { messageIds: webhookBatch.message_ids }, jobId);
      expect(result.skipped).toBe(3);
    }
    expect((await messageRows(ids)).map((r) => r.status)).toEqual(ids.map(() => 'pending'));

    // The owner sends; the transaction statistics of one session count what its marks write.
    const before = h.hooks.requests.length;
    const result = await runDeliver(
      rt.ctx,
      { messageIds: webhookBatch.message_ids },
      webhookBatch.job_id,
    );
    expect(result).toMatchObject({ skipped: 0, sent: { webhook: 3 } });
    const sentHooks = h.hooks.requests.slice(before).map((r) => r.headers['webhook-id']);
    expect(sentHooks.sort()).toEqual([...webhookBatch.message_ids].sort());
    const rows = await messageRows(webhookBatch.message_ids);
    expect(rows.map((r) => [r.status, r.attempts, r.first_job_id])).toEqual(
      rows.map(() => ['sent', 1, webhookBatch.job_id]),
    );

    // The job run again (a stalled job's second run) finds nothing to send.
    const again = await runDeliver(
      rt.ctx,
      { messageIds: webhookBatch.message_ids },
      webhookBatch.job_id,
    );
    expect(again.skipped).toBe(3);
    expect(h.hooks.requests.length - before).toBe(3);

    // The sweeper leaves the email to its live job.
    const emailBatch = batches.find((b) => b.channel === 'email')!;
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(0);
    const mail = await runDeliver(
      rt.ctx,
      { messageIds: emailBatch.message_ids },
      emailBatch.job_id,
    );
    expect(mail.sent.email).toBe(1);
  });

  it('hands a lost job’s messages back, once, and they are sent under their own ids', async () => {
    const { ids, batches } = await checkedWarning();
    // A live job keeps them, however long they have waited.
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(0);
    expect((await messageRows(ids)).map((r) => r.first_job_id)).not.toContain(null);

    // Redis loses the jobs.
    await rt.ctx.queues.deliverWebhook.obliterate({ force: true });
    await rt.ctx.queues.deliverEmail.obliterate({ force: true });
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(4);
    const handedBack = await messageRows(ids);
    expect(handedBack.map((r) => [r.status, r.attempts, r.first_job_id])).toEqual(
      ids.map(() => ['pending', 0, null]),
    );

    // The lost job's run, should it come back, finds them claimed by nobody it owns.
    const webhookBatch = batches.find((b) => b.channel === 'webhook')!;
    const stale = await runDeliver(
      rt.ctx,
      { messageIds: webhookBatch.message_ids },
      webhookBatch.job_id,
    );
    expect(stale.skipped + stale.sent.webhook).toBe(3);

    // Each handed-back message has a job of its own; run them all.
    const before = h.hooks.requests.length;
    const beforeMail = h.smtp.messages.length;
    for (const id of ids) {
      const result = await runDeliver(rt.ctx, { messageIds: [id] }, `again-${id}`);
      expect(result.skipped + result.sent.webhook + result.sent.email).toBe(1);
    }
    const hooks = h.hooks.requests.map((r) => r.headers['webhook-id'] as string);
    const sentHooks = hooks.filter((id) => webhookBatch.message_ids.includes(id));
    // Each webhook went once, whichever job sent it.
    expect(sentHooks.sort()).toEqual([...webhookBatch.message_ids].sort());
    expect(h.hooks.requests.length - before + stale.sent.webhook).toBe(3);
    expect(h.smtp.messages.length - beforeMail).toBe(1);
    expect((await messageRows(ids)).every((r) => r.status === 'sent')).toBe(true);
    // Nothing is left to hand back.
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(0);
  });

  it('promotes the job of a due first attempt that Redis still delays, rather than take it', async () => {
    const { batches } = await checkedWarning();
    const batch = batches.find((b) => b.channel === 'webhook')!;
    // Its job delayed by an hour in Redis, though the message is due by the ledger's clock.
    await rt.ctx.queues.deliverWebhook.remove(batch.job_id);
    await rt.ctx.queues.deliverWebhook.add(
      'deliver',
      { messageIds: batch.message_ids },
      { jobId: batch.job_id, delay: 3_600_000 },
    );
    const job = () => rt.ctx.queues.deliverWebhook.getJob(batch.job_id);
    expect(await (await job())?.getState()).toBe('delayed');
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(0);
    expect(await (await job())?.getState()).toBe('waiting');
    // Still its job's: nothing was handed back.
    expect((await messageRows(batch.message_ids)).map((r) => r.first_job_id)).toEqual(
      batch.message_ids.map(() => batch.job_id),
    );
  });

  it('remembers a failed first attempt as a row to retry', async () => {
    seq += 1;
    const path = `/fail/${seq}`;
    await h.addWebhookSubscriber(path, [PLACE]);
    h.hooks.script(path, [{ status: 503 }]);
    const { batches } = await checkedWarning();
    const webhookBatch = batches.find((b) => b.channel === 'webhook')!;
    const result = await runDeliver(
      rt.ctx,
      { messageIds: webhookBatch.message_ids },
      webhookBatch.job_id,
    );
    expect(result.retrying.webhook).toBe(1);
    const failed = (await messageRows(webhookBatch.message_ids)).filter((r) => r.status !== 'sent');
    expect(failed.map((r) => [r.status, r.attempts])).toEqual([['retrying', 1]]);
  });

  it('lists an owned message as pending, and redelivers nothing its job still owns', async () => {
    const { ids } = await checkedWarning();
    const rows = await getDeliveries(h.database.db, ids);
    expect(rows.map((r) => [r.id, r.status, r.attempts]).sort()).toEqual(
      [...ids].sort().map((id) => [id, 'pending', 0]),
    );
    const result = await redeliver(rt.ctx, { ids });
    expect(result.requeued).toEqual([]);
    expect(result.unknown).toEqual([]);
    expect(result.skipped.map((s) => s.reason)).toEqual(ids.map(() => 'in-flight'));
    expect((await messageRows(ids)).map((r) => [r.status, r.first_job_id === null])).toEqual(
      ids.map(() => ['pending', false]),
    );
  });
});
