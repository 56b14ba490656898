import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { DELIVER_QUEUES } from '../../src/runtime/queues.js';
import { startWorkers } from '../../src/pipeline/workers.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * `qwn deliveries` and `qwn redeliver` as child processes against a ledger the real pipeline
 * wrote: a webhook delivered, an email delivered, and a webhook whose endpoint answered 410.
 * The webhooks do not group, so each notification is a message under its own id; the email
 * subscriber groups by cycle (the default), so its notification travels in a message of
 * another id, the email's Message-ID (docs/messages.md).
 */

const BEIJING = '101010100';
const SHANGHAI = '101020100';

interface Ledger {
  id: string;
  status: string;
  attempts: number;
}

describe('qwn deliveries and qwn redeliver', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  let hookId: string;
  let mailId: string;
  let goneId: string;
  /** The message that carries the email notification `mailId`. */
  let mailMessageId: string;

  function qwn(...args: string[]) {
    return h.qwn(args);
  }

  /** The state of the message that carries notification `id`. */
  async function ledger(id: string): Promise<Ledger> {
    const [row] = await queryRows<Ledger>(
      h.database.db,
      sql`SELECT d.id, m.status, m.attempts
          FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.id = ${id}`,
    );
    return row!;
  }

  async function idOf(subscriberId: string): Promise<string> {
    const [row] = await queryRows<{ id: string }>(
      h.database.db,
      sql`SELECT id FROM deliveries WHERE subscriber_id = ${subscriberId}`,
    );
    return row!.id;
  }

  async function messageOf(notificationId: string): Promise<string> {
    const [row] = await queryRows<{ message_id: string }>(
      h.database.db,
      sql`SELECT message_id FROM deliveries WHERE id = ${notificationId}`,
    );
    return row!.message_id;
  }

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(BEIJING, '北京');
    await h.addPlace(SHANGHAI, '上海');
    const hook = await h.addWebhookSubscriber('/dispatch', [BEIJING]);
    const mail = await h.addEmailSubscriber('ops@example.com', [BEIJING]);
    const gone = await h.addWebhookSubscriber('/gone', [SHANGHAI]);
    h.hooks.script('/gone', [{ status: 410 }]);
    h.sim.setWarnings(BEIJING, [
      v7Warning({ locationId: BEIJING, seq: 1, typeCode: '1006', level: '蓝色' }),
    ]);
    h.sim.setWarnings(SHANGHAI, [
      v7Warning({ locationId: SHANGHAI, seq: 1, typeCode: '1003', level: '黄色' }),
    ]);
    await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
    [hookId, mailId, goneId] = await Promise.all([idOf(hook), idOf(mail), idOf(gone)]);
    mailMessageId = await messageOf(mailId);
    // Spread the rows over time so that --since has something to choose between: the listing
    // goes by the notifications' time, redeliver --since by the messages'.
    await h.database.db.execute(sql`
      UPDATE deliveries SET created_at = now() - CASE id
        WHEN ${hookId}::uuid THEN interval '3 hours'
        WHEN ${mailId}::uuid THEN interval '1 hour'
        ELSE interval '0' END`);
    await h.database.db.execute(sql`
      UPDATE messages SET created_at = now() - CASE id
        WHEN ${hookId}::uuid THEN interval '3 hours'
        WHEN ${mailMessageId}::uuid THEN interval '1 hour'
        ELSE interval '0' END`);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('lists the ledger newest first, each notification with its message', async () => {
    // A webhook's notification is a message of its own, under the same id; an email's is
    // carried by its cycle's message.
    expect(await messageOf(hookId)).toBe(hookId);
    expect(await messageOf(goneId)).toBe(goneId);
    expect(mailMessageId).not.toBe(mailId);

    const { code, stdout } = await qwn('deliveries');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^id +message +created +status +attempts +channel +subscriber +place +event +warning +next attempt +last error$/,
    );
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      [goneId, goneId],
      [mailId, mailMessageId],
      [hookId, hookId],
    ]);
    expect(lines[1]).toContain('dead');
    expect(lines[1]).toContain(`${h.hooks.url('/gone')} (off)`);
    expect(lines[1]).toContain('webhook endpoint answered 410 Gone');
    expect(lines[2]).toMatch(/sent +1 +email +ops@example\.com +北京 +new/);
  });

  it('filters by status, subscriber, time and count', async () => {
    const dead = await qwn('deliveries', '--status', 'dead');
    expect(dead.stdout.trimEnd().split('\n').slice(1)).toHaveLength(1);
    expect(dead.stdout).toContain(goneId);

    const bySubscriber = await qwn('deliveries', '--subscriber', 'OPS@example.com', '--json');
    expect(bySubscriber.code).toBe(0);
    const rows = JSON.parse(bySubscriber.stdout) as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: mailId,
      messageId: mailMessageId,
      hold: 'cycle',
      status: 'sent',
      attempts: 1,
      channel: 'email',
      subscriber: 'ops@example.com',
      placeId: BEIJING,
      placeName: '北京',
      eventType: 'new',
      nextAttemptAt: null,
      lastError: null,
    });

    const byUrl = await qwn('deliveries', '--subscriber', h.hooks.url('/dispatch'), '--json');
    expect((JSON.parse(byUrl.stdout) as { id: string }[]).map((r) => r.id)).toEqual([hookId]);

    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    const recent = await qwn('deliveries', '--since', twoHoursAgo, '--json');
    expect((JSON.parse(recent.stdout) as { id: string }[]).map((r) => r.id)).toEqual([
      goneId,
      mailId,
    ]);

    const future = await qwn('deliveries', '--since', '2999-01-01');
    expect(future.stdout.trim()).toBe('No deliveries match.');

    const limited = await qwn('deliveries', '--limit', '1', '--json');
    expect((JSON.parse(limited.stdout) as { id: string }[]).map((r) => r.id)).toEqual([goneId]);
  });

  it('answers "was this desk told, last week?": --subscriber by name, --since and --until', async () => {
    await h.database.db.execute(
      sql`UPDATE subscribers SET name = 'Pudong Desk' WHERE email = 'ops@example.com'`,
    );
    const hour = (n: number) => new Date(Date.now() - n * 3600_000).toISOString();
    const ids = async (...args: string[]) => {
      const { code, stdout, stderr } = await qwn('deliveries', ...args, '--json');
      expect(code, stderr).toBe(0);
      return (JSON.parse(stdout) as { id: string }[]).map((r) => r.id);
    };
    expect(await ids('--since', hour(4), '--until', hour(2))).toEqual([hookId]);
    expect(await ids('--until', hour(0.5))).toEqual([mailId, hookId]);
    expect(await ids('--subscriber', 'pudong desk', '--since', hour(2))).toEqual([mailId]);
    expect(await ids('--subscriber', 'Pudong Desk', '--until', hour(2))).toEqual([]);
    const [row] = await queryRows<{ subscriber_id: string }>(
      h.database.db,
      sql`SELECT subscriber_id FROM deliveries WHERE id = ${hookId}`,
    );
    expect(await ids('--subscriber', row!.subscriber_id)).toEqual([hookId]);

    const stranger = await qwn('deliveries', '--subscriber', 'Nanjing Desk');
    expect(stranger.code).toBe(1);
    expect(stranger.stderr.trim()).toBe(
      'qwn deliveries: no subscriber has the email, webhook URL, name or id "Nanjing Desk"',
    );
    const backwards = await qwn('deliveries', '--since', hour(1), '--until', hour(2));
    expect(backwards.code).toBe(2);
    expect(backwards.stderr.trim()).toBe('qwn deliveries: --since must be earlier than --until');
    const garbled = await qwn('deliveries', '--until', 'last week');
    expect(garbled.code).toBe(2);
    expect(garbled.stderr.trim()).toBe(
      'qwn deliveries: --until must be an ISO 8601 time such as 2026-07-01T08:00:00+08:00 ' +
        '(no offset: UTC)',
    );
  });

  it("reads and prints times in the terminal's zone (TZ), with their offsets", async () => {
    // Wall-clock time in Shanghai two hours ago, as a desk there would type it: no offset.
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000 + 8 * 3600_000)
      .toISOString()
      .slice(0, 19)
      .replace('T', ' ');
    const shanghai = await h.qwn(['deliveries', '--since', twoHoursAgo], { TZ: 'Asia/Shanghai' });
    expect(shanghai.code, shanghai.stderr).toBe(0);
    const rows = shanghai.stdout.trim().split('\n').slice(1);
    expect(rows.map((r) => r.split(/ +/)[0])).toEqual([goneId, mailId].map((id) => id));
    for (const row of rows) expect(row).toMatch(/ \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+08:00 /);
  });

  it('refuses an unknown status with one line and exit code 2', async () => {
    const { code, stdout, stderr } = await qwn('deliveries', '--status', 'lost');
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      'qwn deliveries: unknown status "lost"; expected one of held, pending, sent, retrying, dead',
    ]);
  });

  it('redelivers a row by id under the same webhook-id', async () => {
    expect(h.hooks.requestsTo('/dispatch')).toHaveLength(1);
    const { code, stdout } = await qwn('redeliver', hookId);
    expect(code).toBe(0);
    expect(stdout).toContain('redelivered 1: 1 sent, 0 retrying, 0 dead');
    const requests = h.hooks.requestsTo('/dispatch');
    expect(requests).toHaveLength(2);
    expect(requests.every((r) => r.verified)).toBe(true);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([hookId, hookId]);
    expect(requests[1]!.body).toBe(requests[0]!.body);
    // A fresh series of attempts: the first one of it succeeded.
    expect(await ledger(hookId)).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it('names an unknown id and exits 1', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const { code, stderr } = await qwn('redeliver', missing);
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`qwn redeliver: no delivery ${missing}`);

    const malformed = await qwn('redeliver', 'not-an-id');
    expect(malformed.code).toBe(1);
    expect(malformed.stderr.trim()).toBe('qwn redeliver: no delivery not-an-id');
  });

  it('skips a disabled subscriber and says why', async () => {
    const { code, stdout } = await qwn('redeliver', goneId);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      new RegExp(`^skipped ${goneId}: subscriber is disabled: webhook answered 410 Gone at `),
    );
    expect(h.hooks.requestsTo('/gone')).toHaveLength(1);
    expect(await ledger(goneId)).toMatchObject({ status: 'dead', attempts: 1 });
  });

  it('redelivers --since only what failed unless --include-sent; --dry-run changes nothing', async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    const mailsBefore = h.smtp.messages.length;
    const hooksBefore = h.hooks.requests.length;

    // The recent messages are the dead one of a disabled subscriber and a sent email: by
    // default only the dead one is a candidate, and it is skipped.
    const failedOnly = await qwn('redeliver', '--since', twoHoursAgo, '--enqueue-only');
    expect(failedOnly.code).toBe(0);
    expect(failedOnly.stdout.trim()).toMatch(
      new RegExp(`^skipped ${goneId}: subscriber is disabled: [^\n]*$`),
    );
    expect(await ledger(mailId)).toMatchObject({ status: 'sent', attempts: 1 });

    const sentAsked = await qwn('redeliver', '--since', twoHoursAgo, '--status', 'sent');
    expect(sentAsked.code).toBe(2);
    expect(sentAsked.stderr.trim()).toBe(
      'qwn redeliver: --status sent resends what already arrived: add --include-sent',
    );

    const dryRun = await qwn('redeliver', '--since', twoHoursAgo, '--include-sent', '--dry-run');
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toContain(mailId);
    expect(dryRun.stdout.trim().split('\n').at(-1)).toBe(
      'dry run (nothing sent or changed): would redeliver 1 message',
    );
    expect(await ledger(mailId)).toMatchObject({ status: 'sent', attempts: 1 });

    for (let run = 0; run < 2; run += 1) {
      const { code, stdout } = await qwn(
        'redeliver',
        ...['--since', twoHoursAgo, '--include-sent', '--enqueue-only'],
      );
      expect(code).toBe(0);
      expect(stdout).toContain(`skipped ${goneId}: subscriber is disabled`);
      expect(stdout).toContain('1 delivery set back to pending and enqueued');
      // Only the email's message is recent enough; the webhook's (3 hours old) stays as it was.
      expect(await ledger(mailId)).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await ledger(hookId)).toMatchObject({ status: 'sent', attempts: 1 });
    }

    const workers = startWorkers(rt.ctx, rt.redis, [...DELIVER_QUEUES]);
    try {
      await h.smtp.waitForMessages(mailsBefore + 1);
      await expect
        .poll(async () => (await ledger(mailId)).status, { timeout: 10_000 })
        .toBe('sent');
      await expect
        .poll(() => rt.ctx.queues.deliverEmail.getJobCounts('waiting', 'active', 'delayed'), {
          timeout: 10_000,
        })
        .toEqual({ waiting: 0, active: 0, delayed: 0 });
    } finally {
      await workers.close();
    }
    expect(await ledger(mailId)).toMatchObject({ status: 'sent', attempts: 1 });
    const resent = h.smtp.messages.slice(mailsBefore);
    expect(resent).toHaveLength(1);
    expect(resent[0]!.parsed.messageId).toBe(`<${mailMessageId}@qwn>`);
    expect(h.hooks.requests.length).toBe(hooksBefore);
  });

  it('redelivers the message a notification id names, under the message id', async () => {
    const mailsBefore = h.smtp.messages.length;
    const { code, stdout } = await qwn('redeliver', mailId);
    expect(code).toBe(0);
    expect(stdout).toContain('redelivered 1: 1 sent, 0 retrying, 0 dead');
    expect(stdout).toContain(mailId);
    const resent = h.smtp.messages.slice(mailsBefore);
    expect(resent).toHaveLength(1);
    expect(resent[0]!.parsed.messageId).toBe(`<${mailMessageId}@qwn>`);
    expect(await ledger(mailId)).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it('needs either ids or --since', async () => {
    const { code, stderr } = await qwn('redeliver');
    expect(code).toBe(2);
    expect(stderr.trim()).toBe('qwn redeliver: a delivery id or --since is required');
  });
});
