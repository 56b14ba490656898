import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kindOf } from '../../src/channels/kinds.js';
import { runPoll } from '../../src/pipeline/poll.js';
import { DELIVER_QUEUES } from '../../src/runtime/queues.js';
import { startWorkers, type WorkerSet } from '../../src/pipeline/workers.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { waitUntil } from '../support/wait.js';

/**
 * Each channel has its own deliver queue and workers, and email takes only its share of the
 * process's send slots. With one queue, jobs of a stalled mail server took every job slot of the
 * process, and webhooks waited behind them until the SMTP timeouts ran out.
 */
describe('deliver queues per channel', () => {
  const held = new Set<Socket>();
  let stalledSmtp: Server;
  let h: PipelineHarness;
  let workers: WorkerSet | undefined;

  beforeAll(async () => {
    // Accepts connections and never greets: every send waits for nodemailer's timeouts (10 s).
    stalledSmtp = createServer((socket) => {
      held.add(socket);
      socket.on('close', () => held.delete(socket));
    });
    await new Promise<void>((resolve) => stalledSmtp.listen(0, '127.0.0.1', resolve));
    const port = (stalledSmtp.address() as AddressInfo).port;
    h = await startPipelineHarness({
      env: { SMTP_URL: `smtp://127.0.0.1:${port}`, DELIVERY_CONCURRENCY: '4' },
    });
  });
  afterAll(async () => {
    // The mail server goes away first: the stuck sends fail at once and the workers can stop.
    stalledSmtp.close();
    for (const socket of held) socket.destroy();
    await workers?.close(5000);
    await h?.close();
  });

  it('sends webhooks while every email send waits on a mail server that does not answer', async () => {
    const rt = h.runtime();
    // More email jobs than the process takes webhook jobs at once: with one shared queue they
    // would fill every slot. The subscribers do not group (`'none'`), so their messages go at
    // once in first-attempt batches of the email channel's firstAttemptBatch, as many jobs as counted here.
    const emailJobs = rt.ctx.config.deliveryConcurrency * 2;
    await h.addPlace('101010100', '北京');
    for (let i = 0; i < emailJobs * kindOf('email').firstAttemptBatch; i += 1) {
      await h.addEmailSubscriber(`duty${i}@example.com`, ['101010100'], {}, 'none');
    }
    h.sim.setWarnings('101010100', [
      v7Warning({ locationId: '101010100', seq: 1, typeCode: '1003', level: '橙色' }),
    ]);
    workers = startWorkers(rt.ctx, rt.redis, ['check', ...DELIVER_QUEUES]);
    expect((await runPoll(rt.ctx, {})).ok).toBe(true);
    // Email sends under way, whether a deliver job or the checking process makes them (the
    // first attempts, src/pipeline/first-attempts.ts): the mail server holds their connections.
    await waitUntil(() => held.size > 0, 'email sends under way', 20_000, 50);

    // Now a webhook is owed somewhere else.
    await h.addPlace('101020100', '上海');
    await h.addWebhookSubscriber('/ops', ['101020100']);
    h.sim.setWarnings('101020100', [
      v7Warning({ locationId: '101020100', seq: 2, typeCode: '1003', level: '橙色' }),
    ]);
    expect((await runPoll(rt.ctx, {})).ok).toBe(true);
    await waitUntil(() => h.hooks.requests.length === 1, 'the webhook received', 9_000, 50);

    // No email attempt has ended yet: the webhook did not wait for the mail server.
    const emails = (await h.deliveries()).filter((r) => r.channel === 'email');
    expect(emails).toHaveLength(emailJobs * kindOf('email').firstAttemptBatch);
    expect(emails.every((r) => r.status === 'pending')).toBe(true);
    // The receiver counts a request as it arrives; the sender marks it sent after the answer,
    // in the next group commit of its marks.
    await expect
      .poll(async () => (await h.deliveries()).find((r) => r.channel === 'webhook'), {
        timeout: 5_000,
      })
      .toMatchObject({ status: 'sent', attempts: 1 });
  });
});

/**
 * Both channels share one process's send slots (DELIVERY_CONCURRENCY), and a storm queues far
 * more webhook sends for them than there are slots. An email takes the next free slot ahead of
 * that queue: in first come, first served order it waited for the whole webhook backlog.
 */
describe('send slots shared by both channels', () => {
  const SLOTS = 4;
  const WEBHOOKS = 2 * kindOf('webhook').firstAttemptBatch;
  const WEBHOOK_DELAY_MS = 300;
  let h: PipelineHarness;
  let workers: WorkerSet | undefined;

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { DELIVERY_CONCURRENCY: String(SLOTS) } });
  });
  afterAll(async () => {
    await workers?.close(5000);
    await h?.close();
  });

  it('sends an email before a backlog of webhooks queued for the send slots', async () => {
    const rt = h.runtime();
    await h.addPlace('101010100', '北京');
    for (let i = 0; i < WEBHOOKS; i += 1) {
      await h.addWebhookSubscriber(`/slow/${i}`, ['101010100']);
      h.hooks.script(`/slow/${i}`, [{ delayMs: WEBHOOK_DELAY_MS }]);
    }
    h.sim.setWarnings('101010100', [
      v7Warning({ locationId: '101010100', seq: 1, typeCode: '1003', level: '橙色' }),
    ]);
    workers = startWorkers(rt.ctx, rt.redis, ['check', ...DELIVER_QUEUES]);
    expect((await runPoll(rt.ctx, {})).ok).toBe(true);
    // The backlog: every webhook row is claimed and waits for one of the few slots.
    await h.hooks.waitForRequests(1, { timeoutMs: 20_000 });

    await h.addPlace('101020100', '上海');
    await h.addEmailSubscriber('duty@example.com', ['101020100']);
    h.sim.setWarnings('101020100', [
      v7Warning({ locationId: '101020100', seq: 2, typeCode: '1003', level: '橙色' }),
    ]);
    expect((await runPoll(rt.ctx, {})).ok).toBe(true);
    await h.smtp.waitForMessages(1, 20_000);

    // Draining the backlog takes WEBHOOKS / SLOTS × 300 ms (7.5 s); the email went long before.
    const webhooksBeforeEmail = h.hooks.requests.length;
    expect(webhooksBeforeEmail).toBeLessThan(WEBHOOKS / 2);
    await waitUntil(
      async () => (await h.deliveries()).every((r) => r.status === 'sent'),
      'every webhook sent as well',
      30_000,
      100,
    );
    expect(h.hooks.requests).toHaveLength(WEBHOOKS);
  });
});
