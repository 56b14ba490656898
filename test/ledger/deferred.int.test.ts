import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redeliver } from '../../src/ledger/redeliver.js';
import { getDeliveries } from '../../src/ledger/list.js';
import { queryPrepared, queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check-location.js';
import { runDeliver } from '../../src/pipeline/deliver.js';
import { runPoll } from '../../src/pipeline/poll.js';
import type { Runtime } from '../../src/pipeline/runtime.js';
import { SentRecorder } from '../../src/ledger/sent-mark.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

const PLACE = '101280101';

/**
 * A direct message (one notification, nothing holding it back) has no row in `messages` until
 * something must be remembered of it (src/ledger/deferred.ts): its batch row and its
 * notification say it is pending and whose job owns it. These tests hold the deferred path to
 * what the row path guaranteed: sent once by its own job, with two row versions; handed back
 * when its job is lost; a failure remembered; shown and refused by the admin commands as a
 * pending message with its attempt under way.
 */
describe('direct messages without a row until they are sent', () => {
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
    const batches = await queryRows<Batch>(
      h.database.db,
      sql`SELECT job_id, channel, message_ids::text[] AS message_ids FROM first_attempt_batches
          WHERE message_ids && ${sql.param(rows.map((r) => r.id))}::uuid[]`,
    );
    return { ids: rows.map((r) => r.id), batches };
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

  /**
   * A SentRecorder writing as a deliver job's does (named prepared statements), keeping the text
   * of every statement it sends.
   */
  function recordingStatements(): { statements: string[]; recorder: SentRecorder } {
    const statements: string[] = [];
    const dialect = new PgDialect();
    const recorder = new SentRecorder(
      {
        execute: (query: SQL) => {
          statements.push(dialect.sqlToQuery(query).sql);
          return queryPrepared(h.database.db, query);
        },
      },
      [],
      10,
    );
    return { statements, recorder };
  }

  it('writes no message row at the check, and one row version per message when it is sent', async () => {
    const { ids, batches } = await checkedWarning();
    expect(ids).toHaveLength(4);
    expect(await messageRows(ids)).toEqual([]);
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
    expect(await messageRows(ids)).toEqual([]);

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
      rows.map(() => ['sent', 1, null]),
    );
    // Inserted once as sent, never updated or locked since (xmax 0).
    const [versions] = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM messages
          WHERE id = ANY(${sql.param(webhookBatch.message_ids)}::uuid[]) AND xmax = '0'::xid`,
    );
    expect(versions?.n).toBe(3);

    // The job run again (a stalled job's second run) finds nothing to send.
    const again = await runDeliver(
      rt.ctx,
      { messageIds: webhookBatch.message_ids },
      webhookBatch.job_id,
    );
    expect(again.skipped).toBe(3);
    expect(h.hooks.requests.length - before).toBe(3);

    // The sweeper removes the batch once its messages are all written, and only then.
    const emailBatch = batches.find((b) => b.channel === 'email')!;
    await runSweep(rt.ctx, { graceSeconds: 0 });
    const left = await queryRows<{ job_id: string }>(
      h.database.db,
      sql`SELECT job_id FROM first_attempt_batches
          WHERE job_id = ANY(${sql.param(batches.map((b) => b.job_id))}::text[])`,
    );
    expect(left.map((b) => b.job_id)).toEqual([emailBatch.job_id]);
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
    expect(await messageRows(ids)).toEqual([]);

    // Redis loses the jobs.
    await rt.ctx.queues.deliverWebhook.obliterate({ force: true });
    await rt.ctx.queues.deliverEmail.obliterate({ force: true });
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(4);
    const handedBack = await messageRows(ids);
    expect(handedBack.map((r) => [r.status, r.attempts, r.first_job_id])).toEqual(
      ids.map(() => ['pending', 0, null]),
    );
    const left = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM first_attempt_batches
          WHERE job_id = ANY(${sql.param(batches.map((b) => b.job_id))}::text[])`,
    );
    expect(left[0]?.n).toBe(0);

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

  it('lists a deferred message as pending, and redelivers nothing its job still owns', async () => {
    const { ids } = await checkedWarning();
    const rows = await getDeliveries(h.database.db, ids);
    expect(rows.map((r) => [r.id, r.status, r.attempts]).sort()).toEqual(
      [...ids].sort().map((id) => [id, 'pending', 0]),
    );
    const result = await redeliver({ db: h.database.db, queues: rt.ctx.queues }, { ids });
    expect(result.requeued).toEqual([]);
    expect(result.unknown).toEqual([]);
    expect(result.skipped.map((s) => s.reason)).toEqual(ids.map(() => 'in-flight'));
    expect(await messageRows(ids)).toEqual([]);
  });

  it('marks sent a message the sweeper wrote while its send was under way', async () => {
    const { batches } = await checkedWarning();
    const [written, unwritten] = batches.find((b) => b.channel === 'webhook')!.message_ids;
    await h.database.db.execute(sql`
      INSERT INTO messages (id, subscriber_id, channel, status, attempts, first_job_id)
      SELECT id, subscriber_id, channel, 'pending', 0, NULL FROM deliveries
      WHERE id = ${written!}`);
    // Both marks in one flush: the plain insert meets the written row and is refused on its
    // key; the marks are written again in the form that meets it, the other row with them.
    const { statements, recorder } = recordingStatements();
    const at = new Date('2026-11-26T08:00:00Z');
    await Promise.all([
      recorder.markSent(written!, at, { deferred: 'direct' }),
      recorder.markSent(unwritten!, at, { deferred: 'direct' }),
    ]);
    const rows = await queryRows<{ id: string; status: string; attempts: number; sent_at: Date }>(
      h.database.db,
      sql`SELECT id, status, attempts, sent_at FROM messages
          WHERE id IN (${written!}, ${unwritten!})`,
    );
    expect(
      rows
        .map((r) => ({ ...r, sent_at: new Date(r.sent_at) }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    ).toEqual(
      [written!, unwritten!].sort().map((id) => ({ id, status: 'sent', attempts: 1, sent_at: at })),
    );
    expect(statements.map((text) => text.includes('ON CONFLICT'))).toEqual([false, true]);
  });

  it('writes the sent rows of deferred messages with a plain insert when none has a row', async () => {
    const { batches } = await checkedWarning();
    const ids = batches.find((b) => b.channel === 'webhook')!.message_ids;
    const { statements, recorder } = recordingStatements();
    await Promise.all(ids.map((id) => recorder.markSent(id, new Date(), { deferred: 'direct' })));
    expect((await messageRows(ids)).map((r) => r.status)).toEqual(ids.map(() => 'sent'));
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toContain('ON CONFLICT');
  });
});
