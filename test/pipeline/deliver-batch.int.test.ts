import { sql } from 'drizzle-orm';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { SEND_START_DEADLINE_MS, runDeliver } from '../../src/pipeline/deliver.js';
import { DELIVER_JOB, deliverQueue } from '../../src/ledger/dispatch.js';
import { kindOf } from '../../src/channels/kinds.js';
import { deliverJobId, QUEUE_NAMES } from '../../src/runtime/queues.js';
import { JOB_LOCK_MS, JOBS } from '../../src/pipeline/workers.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import { v7Warning } from '../../src/simulator/index.js';
import {
  deliverOne,
  firstJobOf,
  startPipelineHarness,
  type PipelineHarness,
} from '../support/pipeline.js';

/**
 * A check enqueues one deliver job per batch of messages (src/pipeline/deliver.ts), the batches
 * planned in the statement that writes them (src/ledger/record.ts): the messages
 * of a batch are claimed together, sent within the process's send slots and recorded together.
 * These tests hold the batches to what one job per message guaranteed: each message once, under
 * its id, found again by the sweeper when its job is gone, never sent on a stale claim. Their
 * subscribers do not group (email subscribers are set to `group: 'none'`): a message of one
 * notification has that notification's id, and goes out as soon as its check commits.
 */

/** A notification and the state of its message. */
interface Row {
  id: string;
  message_id: string;
  channel: 'email' | 'webhook';
  status: string;
  attempts: number;
  first_job_id: string | null;
  claimed_until: Date | null;
}

describe('deliver jobs carrying many rows', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  let seq = 0;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
  });
  afterAll(async () => {
    await h?.close();
  });

  async function stormAt(place: string, name: string, subscribers: () => Promise<void>) {
    await h.addPlace(place, name);
    await subscribers();
    seq += 1;
    h.sim.setWarnings(place, [
      v7Warning({ locationId: place, seq, typeCode: '1003', level: '橙色' }),
    ]);
  }

  function rowsAt(place: string): Promise<Row[]> {
    return queryRows<Row>(
      h.database.db,
      sql`SELECT d.id, d.message_id, d.channel, m.status, m.attempts,
            ${firstJobOf(sql`d.message_id`)} AS first_job_id, m.claimed_until
          FROM deliveries d JOIN messages m ON m.id = d.message_id
          WHERE d.place_id = ${place} ORDER BY d.id`,
    );
  }

  /**
   * The first-attempt batches of these messages: each of one channel, none over its channel's
   * size, as few as that allows, named after the check (`${cycle}_${place}_…`) with no ':' in
   * the name (BullMQ's key separator).
   */
  function expectBatches(rows: readonly Row[], prefix: string) {
    const batches = new Map<string, Row[]>();
    for (const r of rows) {
      expect(r.first_job_id).not.toBeNull();
      expect(r.first_job_id!.startsWith(prefix)).toBe(true);
      expect(r.first_job_id).not.toContain(':');
      batches.set(r.first_job_id!, [...(batches.get(r.first_job_id!) ?? []), r]);
    }
    for (const batch of batches.values()) {
      const channel = batch[0]!.channel;
      expect(batch.every((r) => r.channel === channel)).toBe(true);
      expect(batch.length).toBeLessThanOrEqual(kindOf(channel).firstAttemptBatch);
    }
    for (const channel of ['email', 'webhook'] as const) {
      const count = rows.filter((r) => r.channel === channel).length;
      const used = [...batches.values()].filter((b) => b[0]!.channel === channel).length;
      expect(used).toBe(Math.ceil(count / kindOf(channel).firstAttemptBatch));
    }
  }

  /**
   * Webhook messages `from`–`to` of the place's storm (already sent), made never tried again and
   * owned by the batch job `jobId`, due `dueAgo` ago (an SQL interval). Their message ids.
   */
  async function ownedFirstAttempts(
    place: string,
    [from, to]: [number, number],
    jobId: string,
    dueAgo = '0 seconds',
  ): Promise<string[]> {
    const rows = (await rowsAt(place)).filter((r) => r.channel === 'webhook').slice(from, to);
    const ids = rows.map((r) => r.message_id);
    await h.database.db.execute(sql`
      UPDATE messages SET status = 'pending', attempts = 0, sent_at = NULL,
        first_job_id = ${jobId}, next_attempt_at = now() - ${dueAgo}::interval
      WHERE id = ANY(${sql.param(ids)}::uuid[])`);
    return ids;
  }

  const webhookIds = (path: string) =>
    h.hooks.requests
      .filter((r) => r.path.startsWith(path))
      .map((r) => r.headers['webhook-id'] as string);

  it("sends a place's notifications in batch jobs, each once under its own id", async () => {
    const place = '101280101';
    await stormAt(place, '广州', async () => {
      for (let i = 0; i < 120; i += 1) await h.addWebhookSubscriber(`/gz/${i}`, [place]);
      for (let i = 0; i < 25; i += 1) {
        await h.addEmailSubscriber(`gz${i}@example.com`, [place], {}, 'none');
      }
    });
    const summary = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 60_000 });
    expect(summary.ok).toBe(true);

    const rows = await rowsAt(place);
    expect(rows).toHaveLength(145);
    expect(rows.every((r) => r.message_id === r.id)).toBe(true);
    expect(rows.every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
    expectBatches(rows, `${summary.cycle}_${place}_`);

    const hooks = webhookIds('/gz/');
    expect(hooks.sort()).toEqual(rows.filter((r) => r.channel === 'webhook').map((r) => r.id));
    expect(h.hooks.requests.filter((r) => r.path.startsWith('/gz/')).every((r) => r.verified)).toBe(
      true,
    );
    const mails = h.smtp.messages
      .filter((m) => m.envelope.to[0]?.startsWith('gz'))
      .map((m) => m.messageId);
    expect(mails.sort()).toEqual(
      rows.filter((r) => r.channel === 'email').map((r) => `${r.id}@qwn`),
    );
  });

  it('plans the batches of subscribers whose messages go through the scheduler the same way', async () => {
    // An hourly limit sends a subscriber's messages through the scheduler (src/ledger/record.ts,
    // insertScheduled); far from the limit, each goes at once, in a batch as the others do.
    const place = '101250101';
    await stormAt(place, '长沙', async () => {
      for (let i = 0; i < 60; i += 1) await h.addWebhookSubscriber(`/cs/${i}`, [place]);
      for (let i = 0; i < 12; i += 1) {
        await h.addEmailSubscriber(`cs${i}@example.com`, [place], {}, 'none');
      }
      await h.database.db.execute(sql`
        UPDATE subscribers SET max_per_hour = 100
        WHERE name LIKE '/cs/%' OR name LIKE 'cs%@example.com'`);
    });
    const summary = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 60_000 });
    expect(summary.ok).toBe(true);

    const rows = await rowsAt(place);
    expect(rows).toHaveLength(72);
    expect(rows.every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
    expectBatches(rows, `${summary.cycle}_${place}_s_`);
    expect(webhookIds('/cs/').sort()).toEqual(
      rows
        .filter((r) => r.channel === 'webhook')
        .map((r) => r.message_id)
        .sort(),
    );
    const mails = h.smtp.messages.filter((m) => m.envelope.to[0]?.startsWith('cs'));
    expect(mails.map((m) => m.messageId).sort()).toEqual(
      rows
        .filter((r) => r.channel === 'email')
        .map((r) => `${r.message_id}@qwn`)
        .sort(),
    );
  });

  it("gives each message of a batch its own event's warning when a place has several", async () => {
    const place = '101210101';
    await h.addPlace(place, '杭州');
    for (let i = 0; i < 7; i += 1) await h.addWebhookSubscriber(`/hz/${i}`, [place]);
    const warnings = ['1003', '1004', '1006'].map((typeCode) => {
      seq += 1;
      return v7Warning({ locationId: place, seq, typeCode, level: '橙色' });
    });
    h.sim.setWarnings(place, warnings);
    const summary = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 60_000 });
    expect(summary.ok).toBe(true);

    const rows = await queryRows<{ id: string; warning_id: string; first_job_id: string }>(
      h.database.db,
      sql`SELECT m.id, d.warning_id, m.first_job_id
          FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.place_id = ${place}`,
    );
    expect(rows).toHaveLength(21);
    // One job carries rows of more than one event: the claim shares each event's record out.
    const eventsPerJob = new Map<string, Set<string>>();
    for (const r of rows) {
      eventsPerJob.set(
        r.first_job_id,
        (eventsPerJob.get(r.first_job_id) ?? new Set()).add(r.warning_id),
      );
    }
    expect(Math.max(...[...eventsPerJob.values()].map((s) => s.size))).toBeGreaterThan(1);

    const warningOf = new Map(rows.map((r) => [r.id, r.warning_id]));
    const requests = h.hooks.requests.filter((r) => r.path.startsWith('/hz/'));
    expect(requests).toHaveLength(21);
    for (const r of requests) {
      const body = r.json as { data: { warning: { id: string } } };
      expect(body.data.warning.id).toBe(warningOf.get(r.headers['webhook-id'] as string));
    }
  });

  it('keeps webhook sends in flight within DELIVERY_CONCURRENCY, however many rows a job has', async () => {
    const place = '101230101';
    const slow = h.runtime({ DELIVERY_CONCURRENCY: '3' });
    await stormAt(place, '福州', async () => {
      for (let i = 0; i < 18; i += 1) {
        h.hooks.script(`/fz/${i}`, [{ delayMs: 400 }]);
        await h.addWebhookSubscriber(`/fz/${i}`, [place]);
      }
    });
    const summary = await runCycleOnce(slow.ctx, slow.redis, { timeoutMs: 60_000 });
    expect(summary.ok).toBe(true);
    expect((await rowsAt(place)).every((r) => r.status === 'sent')).toBe(true);

    // Each answer takes 400 ms: requests arriving within 300 ms of one another overlapped.
    const arrivals = h.hooks.requests
      .filter((r) => r.path.startsWith('/fz/'))
      .map((r) => r.receivedAt.getTime())
      .sort((a, b) => a - b);
    expect(arrivals).toHaveLength(18);
    const overlapping = arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + 300).length);
    expect(Math.max(...overlapping)).toBeLessThanOrEqual(3);
  });

  it('leaves messages to their live batch job, and gives them jobs of their own once it is gone', async () => {
    const place = '101280101';
    const batchJobId = `lost-batch_${place}_webhook0`;
    const ids = await ownedFirstAttempts(place, [0, 5], batchJobId, '1 minute');
    // No worker runs in this test: the job waits, as a storm's backlog would.
    const batch = await rt.ctx.queues.deliverWebhook.add(
      DELIVER_JOB,
      { messageIds: ids },
      { jobId: batchJobId },
    );

    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(0);

    await batch.remove();
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(5);
    // The lost job's first attempts are handed back, so the new jobs may claim them.
    const freed = (await rowsAt(place)).filter((r) => ids.includes(r.message_id));
    expect(freed.every((r) => r.first_job_id === null)).toBe(true);
    for (const id of ids) {
      const job = await rt.ctx.queues.deliverWebhook.getJob(deliverJobId(id, 0));
      expect(job?.data).toEqual({ messageIds: [id] });
      await job!.remove();
    }
    // The same sweep again finds the same rows: still owed, and nothing carries them now.
    expect((await runSweep(rt.ctx, { graceSeconds: 0 })).requeued).toBe(5);
  });

  it('sends a first attempt only from the job that owns it, with one write per message', async () => {
    const place = '101280101';
    const owner = `owner-batch_${place}_webhook0`;
    const ids = await ownedFirstAttempts(place, [5, 9], owner);
    const sentBefore = webhookIds('/gz/').length;

    // Any other job, or a run without a job, leaves them alone: the owner may be sending them.
    for (const jobId of ['intruder', undefined]) {
      const result = await runDeliver(rt.ctx, { messageIds: ids }, jobId);
      expect(result.skipped).toBe(4);
    }
    expect(webhookIds('/gz/')).toHaveLength(sentBefore);

    // Row versions written to messages from here: the owner's sends write only their marks.
    await h.database.db.execute(sql`
      CREATE TABLE message_writes (id uuid, op text);
      CREATE FUNCTION count_message_writes() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO message_writes VALUES (NEW.id, TG_OP); RETURN NULL; END $$;
      CREATE TRIGGER count_message_writes AFTER UPDATE ON messages
        FOR EACH ROW EXECUTE FUNCTION count_message_writes();`);
    try {
      const result = await runDeliver(rt.ctx, { messageIds: ids }, owner);
      expect(result).toMatchObject({ skipped: 0, sent: { webhook: 4 } });
      const writes = await queryRows<{ id: string }>(
        h.database.db,
        sql`SELECT id FROM message_writes`,
      );
      expect(writes.map((w) => w.id).sort()).toEqual([...ids].sort());
    } finally {
      await h.database.db.execute(sql`
        DROP TRIGGER count_message_writes ON messages;
        DROP FUNCTION count_message_writes();
        DROP TABLE message_writes;`);
    }
    const after = (await rowsAt(place)).filter((r) => ids.includes(r.message_id));
    expect(after.every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
    expect(webhookIds('/gz/').filter((id) => ids.includes(id))).toHaveLength(8);

    // Run again (a stalled job's second run), it finds nothing left to send.
    expect((await runDeliver(rt.ctx, { messageIds: ids }, owner)).skipped).toBe(4);
  });

  it('says what a job sent in one line at info, and each message at debug only', async () => {
    const place = '101280101';
    const owner = `logged-batch_${place}_webhook0`;
    let ids: string[] = [];
    // Five first attempts of the owner, made unsent again before each run: a run per level.
    const linesAt = async (level: string) => {
      type Line = { msg: string; sent?: number; messageId?: string };
      const lines: Line[] = [];
      const logger = createLogger(level, {
        write: (line: string) => void lines.push(JSON.parse(line) as Line),
      });
      ids = await ownedFirstAttempts(place, [9, 14], owner);
      const result = await runDeliver({ ...rt.ctx, logger }, { messageIds: ids }, owner);
      expect(result.sent.webhook).toBe(5);
      return lines;
    };

    const info = await linesAt('info');
    expect(info.filter((l) => l.msg === 'message delivered')).toEqual([]);
    expect(info.filter((l) => l.msg === 'deliver job done')).toMatchObject([{ sent: 5 }]);

    const debug = await linesAt('debug');
    const each = debug.filter((l) => l.msg === 'message delivered').map((l) => l.messageId);
    expect(each.sort()).toEqual([...ids].sort());
  });

  it("leaves its first attempts to the job's other run once its own lock has lapsed", async () => {
    const place = '101280101';
    const jobId = `stalled-batch_${place}_webhook0`;
    const ids = await ownedFirstAttempts(place, [9, 13], jobId);
    const sentBefore = webhookIds('/gz/').length;
    // Jobs the sweeps above left waiting go first: this job is the one a worker takes next.
    await rt.ctx.queues.deliverWebhook.drain(true);
    await rt.ctx.queues.deliverWebhook.add(DELIVER_JOB, { messageIds: ids }, { jobId });

    // A worker takes the job, then its process stalls past the lock: BullMQ hands the job to
    // another run, under a lock of its own, before the stalled run gets to its sends.
    const connection = rt.redis.duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(QUEUE_NAMES.deliverWebhook, null, {
      connection,
      prefix: h.prefix,
    });
    try {
      const job = await worker.getNextJob('stalled-run');
      if (!job) throw new Error('the batch job was not waiting');
      expect(job.id).toBe(jobId);
      await connection.set(
        `${h.prefix}:${QUEUE_NAMES.deliverWebhook}:${jobId}:lock`,
        'current-run',
        'PX',
        JOB_LOCK_MS,
      );
      const deliver = JOBS['deliver-webhook'];

      const stalled = await deliver.run(rt.ctx, job.data, job, 'stalled-run');
      expect(stalled).toMatchObject({ skipped: 4, sent: { webhook: 0 } });
      expect(webhookIds('/gz/')).toHaveLength(sentBefore);
      const left = (await rowsAt(place)).filter((r) => ids.includes(r.message_id));
      expect(left.every((r) => r.status === 'pending' && r.attempts === 0)).toBe(true);
      expect(left.every((r) => r.first_job_id === jobId)).toBe(true);

      // The run that holds the lock sends them, each once.
      const current = await deliver.run(rt.ctx, job.data, job, 'current-run');
      expect(current).toMatchObject({ skipped: 0, sent: { webhook: 4 } });
      expect(webhookIds('/gz/')).toHaveLength(sentBefore + 4);
      expect(webhookIds('/gz/').slice(sentBefore).sort()).toEqual([...ids].sort());
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });

  it('hands a claimed message back, unsent, when its send could not start in time', async () => {
    const place = '101230101';
    const [row] = await rowsAt(place);
    await h.database.db.execute(sql`
      UPDATE messages SET status = 'pending', attempts = 0, sent_at = NULL, first_job_id = NULL
      WHERE id = ${row!.message_id}`);
    const before = webhookIds('/fz/').length;

    // The clock reads the claim time (for the take statement, then for the job), then a time
    // past the deadline for starting the send.
    let reads = 0;
    const start = Date.now();
    const lateCtx = {
      ...rt.ctx,
      now: () => new Date(start + (reads++ < 2 ? 0 : SEND_START_DEADLINE_MS + 1000)),
    };
    const result = await runDeliver(lateCtx, { messageIds: [row!.message_id] });
    expect(result).toMatchObject({ released: 1, skipped: 0 });
    expect(result.sent).toEqual({ email: 0, webhook: 0, robot: 0 });
    expect(webhookIds('/fz/')).toHaveLength(before);
    const [handedBack] = (await rowsAt(place)).filter((r) => r.id === row!.id);
    expect(handedBack).toMatchObject({ status: 'pending', attempts: 0, claimed_until: null });
    const job = await deliverQueue(rt.ctx.queues, row!.channel).getJob(
      deliverJobId(row!.message_id, 0),
    );
    expect(job?.data).toEqual({ messageIds: [row!.message_id] });

    // Its own job then sends it, once, under the same id.
    await job!.remove();
    expect(await deliverOne(rt.ctx, row!.message_id)).toBe('sent');
    expect(webhookIds('/fz/').filter((id) => id === row!.message_id)).toHaveLength(2);
  });
});
