import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import type { PipelineContext } from '../../src/runtime/context.js';
import { runPoll } from '../../src/pipeline/poll.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import { DELIVER_QUEUES } from '../../src/runtime/queues.js';
import { startWorkers } from '../../src/pipeline/workers.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { waitUntil } from '../support/wait.js';

const PLACES = [
  ['101210101', '杭州'],
  ['101210401', '宁波'],
  ['101280101', '广州'],
  ['101280601', '深圳'],
] as const;

/**
 * One notification per (subscriber, warning id, event type), and each message sent once,
 * however many processes run. The email subscriber groups by cycle (the email default,
 * docs/messages.md): its notifications of a cycle travel in one message; the webhooks' each in a
 * message of its own under the notification's id.
 */
describe('concurrency and lost jobs', () => {
  let h: PipelineHarness;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    h = await startPipelineHarness();
    for (const [id, name] of PLACES) await h.addPlace(id, name);
    const ids = PLACES.map(([id]) => id);
    await h.addEmailSubscriber('desk@example.com', ids);
    await h.addWebhookSubscriber('/a', ids);
    await h.addWebhookSubscriber('/b', ids.slice(0, 2));
    for (const [id] of PLACES) {
      h.sim.setWarnings(id, [
        v7Warning({ locationId: id, seq: 1, typeCode: '1003', level: '橙色' }),
        v7Warning({ locationId: id, seq: 2, typeCode: '1006', level: '蓝色' }),
      ]);
    }
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await h.close();
  });

  // 4 places × 2 warnings × (email + /a) + 2 places × 2 warnings × /b
  const OWED = 4 * 2 * 2 + 2 * 2;
  const WEBHOOKS = 4 * 2 + 2 * 2;

  /**
   * Every notification is in a sent message, and every message went out exactly once: one
   * POST per webhook message under its id, one email per email message under its id.
   */
  async function expectEachMessageSentOnce() {
    const rows = await h.deliveries();
    expect(rows).toHaveLength(OWED);
    expect(rows.every((r) => r.status === 'sent')).toBe(true);
    const messagesOf = (channel: string) =>
      [...new Set(rows.filter((r) => r.channel === channel).map((r) => r.message_id))].sort();
    expect(h.hooks.requests.map((r) => r.headers['webhook-id']).sort()).toEqual(
      messagesOf('webhook'),
    );
    expect(h.smtp.messages.map((m) => m.messageId).sort()).toEqual(
      messagesOf('email').map((id) => `${id}@qwn`),
    );
    return { emails: messagesOf('email').length };
  }

  it('two poll --once at the same moment create each delivery once', async () => {
    const [one, two] = await Promise.all([h.pollOnce(), h.pollOnce()]);
    expect(one.code).toBe(0);
    expect(two.code).toBe(0);
    expect((one.summary.events.new ?? 0) + (two.summary.events.new ?? 0)).toBe(8);
    const rows = await h.deliveries();
    expect(rows).toHaveLength(OWED);
    expect(new Set(rows.map((r) => `${r.subscriber} ${r.warning_id} ${r.event_type}`)).size).toBe(
      OWED,
    );
    expect(rows.every((r) => r.status === 'sent')).toBe(true);
    const hooks = h.hooks.requests;
    expect(new Set(hooks.map((r) => r.headers['webhook-id'])).size).toBe(hooks.length);
    expect(hooks).toHaveLength(WEBHOOKS);
    // The email's notifications went in the messages of the cycle(s) that made them: one each.
    const { emails } = await expectEachMessageSentOnce();
    expect(emails).toBeGreaterThanOrEqual(1);
    expect(emails).toBeLessThanOrEqual(2);
  });

  it('two workers side by side poll once per period and deliver each notification once', async () => {
    const env = { ...process.env, ...h.env, POLL_INTERVAL_SECONDS: '2', HTTP_PORT: '0' };
    for (let i = 0; i < 2; i++) {
      const child = spawn('node', ['bin/qwn.js', 'worker'], { env, stdio: 'ignore' });
      children.push(child);
    }
    await waitUntil(
      async () => (await h.deliveries()).filter((r) => r.status === 'sent').length === OWED,
      'every owed delivery sent',
      // Two worker processes starting beside the other files: 36 s on a starved host.
      120_000,
      100,
    );
    const started = h.sim.requests().byOperation.warningList;
    const from = Date.now();
    const pollsSince = () => h.sim.requests().byOperation.warningList - started;
    await sleep(6_500);
    // The polling goes on; a starved host runs each period's job late, not never.
    await waitUntil(() => pollsSince() >= 2, 'two more polls', 60_000, 100);
    const polls = pollsSince();
    // One poll a period of 2 s, not one per worker: at most one for each period begun.
    expect(polls).toBeLessThanOrEqual(Math.floor((Date.now() - from) / 2000) + 1);
    const rows = await h.deliveries();
    expect(rows).toHaveLength(OWED);
    expect(h.hooks.requests).toHaveLength(WEBHOOKS);
    expect(new Set(h.hooks.requests.map((r) => r.headers['webhook-id'])).size).toBe(WEBHOOKS);
    // Every place was checked in the first cycle: one email carries all eight notifications.
    expect(await expectEachMessageSentOnce()).toEqual({ emails: 1 });
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map(
        (c) =>
          new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once('exit', resolve))),
      ),
    );
    expect(children.map((c) => c.exitCode)).toEqual([0, 0]);
  }, 180_000);

  it('a process that dies between the commit and the enqueue loses nothing: the sweeper delivers', async () => {
    const runtime = h.runtime();
    type Queue = PipelineContext['queues']['deliverWebhook'];
    const killedBeforeEnqueue = (queue: Queue) =>
      Object.assign(Object.create(queue) as object, {
        addBulk: () => Promise.reject(new Error('process killed before enqueue')),
      }) as unknown as Queue;
    const crashing: PipelineContext = {
      ...runtime.ctx,
      queues: {
        ...runtime.ctx.queues,
        deliverWebhook: killedBeforeEnqueue(runtime.ctx.queues.deliverWebhook),
        deliverEmail: killedBeforeEnqueue(runtime.ctx.queues.deliverEmail),
      },
    };
    const poll = await runPoll(runtime.ctx, {});
    expect(poll.ok).toBe(true);
    // The poll enqueued check jobs; run the checks by hand with the crashing context instead.
    for (const [placeId] of PLACES) {
      if (!poll.ok) break;
      await expect(runCheck(crashing, { cycleId: poll.cycleId, placeId })).rejects.toThrow(
        /killed before enqueue/,
      );
    }
    const stranded = await h.deliveries();
    expect(stranded).toHaveLength(OWED);
    const strandedHooks = stranded.filter((r) => r.channel === 'webhook');
    expect(strandedHooks).toHaveLength(WEBHOOKS);
    expect(strandedHooks.every((r) => r.status === 'pending' && r.attempts === 0)).toBe(true);
    // The email's cycle message still collects: the checks never counted, so the cycle is not
    // done, and it waits out its 60 s bound.
    const strandedMail = stranded.filter((r) => r.channel === 'email');
    expect(strandedMail.every((r) => r.status === 'held' && r.attempts === 0)).toBe(true);
    expect(new Set(strandedMail.map((r) => r.message_id)).size).toBe(1);
    for (const queue of [runtime.ctx.queues.deliverWebhook, runtime.ctx.queues.deliverEmail]) {
      expect(await queue.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 0 });
    }

    const swept = await runSweep(runtime.ctx, { graceSeconds: 0 });
    expect(swept).toMatchObject({ requeued: WEBHOOKS, messagesReleased: 0 });
    // The 60 s pass: the cycle still collects, no job was asked to release it, and the sweeper
    // releases it.
    await h.database.db.execute(
      sql`UPDATE poll_cycles SET started_at = now() - interval '61 seconds'`,
    );
    expect(await runSweep(runtime.ctx, { graceSeconds: 0 })).toMatchObject({
      requeued: 0,
      messagesReleased: 1,
    });
    const workers = startWorkers(runtime.ctx, runtime.redis, [...DELIVER_QUEUES]);
    try {
      await waitUntil(
        async () => (await h.deliveries()).every((r) => r.status === 'sent'),
        'every delivery sent',
        30_000,
        100,
      );
    } finally {
      await workers.close();
    }
    expect(h.hooks.requests).toHaveLength(WEBHOOKS);
    expect(await expectEachMessageSentOnce()).toEqual({ emails: 1 });
    // A second sweep finds nothing left to do.
    expect((await runSweep(runtime.ctx, { graceSeconds: 0 })).requeued).toBe(0);
  });

  it('the sweeper re-enqueues messages after Redis lost their jobs', async () => {
    const runtime = h.runtime();
    const poll = await runPoll(runtime.ctx, {});
    if (!poll.ok) throw new Error('list call failed');
    const workers = startWorkers(runtime.ctx, runtime.redis, ['check']);
    try {
      // Every notification written, and the cycle done, which makes its email message due.
      await waitUntil(
        async () => {
          if ((await h.deliveries()).length !== OWED) return false;
          const [open] = await queryRows<{ n: number }>(
            h.database.db,
            sql`SELECT count(*)::int AS n FROM messages
                WHERE status = 'open' AND next_attempt_at > now()`,
          );
          return open!.n === 0;
        },
        'every owed notification created and its message due',
        30_000,
        100,
      );
    } finally {
      await workers.close();
    }
    // Redis forgets every job of this deployment.
    await runtime.ctx.queues.deliverWebhook.obliterate({ force: true });
    await runtime.ctx.queues.deliverEmail.obliterate({ force: true });
    // A webhook message per notification, and the email's one message.
    expect((await runSweep(runtime.ctx, { graceSeconds: 0 })).requeued).toBe(WEBHOOKS + 1);
    const deliverers = startWorkers(runtime.ctx, runtime.redis, [...DELIVER_QUEUES]);
    try {
      await waitUntil(
        async () => (await h.deliveries()).every((r) => r.status === 'sent'),
        'every delivery sent',
        30_000,
        100,
      );
    } finally {
      await deliverers.close();
    }
    expect(h.hooks.requests).toHaveLength(WEBHOOKS);
    expect(await expectEachMessageSentOnce()).toEqual({ emails: 1 });
  });
});
