import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { MAX_DELIVERY_ATTEMPTS } from '../../src/domain/retry.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { deliverOne, startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * Webhook deliveries through the whole pipeline (simulator → check → ledger → deliver) to a
 * real HTTP receiver that verifies every signature with the standardwebhooks library. Retries
 * are driven by making the message due in SQL and running the deliver job in-process: the
 * production schedule stays as it is and no test waits for it. Webhook subscribers do not group
 * (docs/messages.md): each notification is a message of its own under the notification's id.
 */

/** A message's state. */
interface LedgerRow {
  id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  sent_at: Date | null;
}

describe('webhook deliveries', () => {
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

  /** A new warning at `place` for one webhook subscriber at `path`; returns its message. */
  async function announce(place: string, name: string, path: string, runtime = rt) {
    await h.addPlace(place, name);
    const subscriberId = await h.addWebhookSubscriber(path, [place]);
    seq += 1;
    const warning = v7Warning({ locationId: place, seq, typeCode: '1003', level: '橙色' });
    h.sim.setWarnings(place, [warning]);
    const summary = await runCycleOnce(runtime.ctx, runtime.redis, { timeoutMs: 30_000 });
    expect(summary.ok).toBe(true);
    const rows = await queryRows<LedgerRow & { notification_id: string }>(
      h.database.db,
      sql`SELECT d.id AS notification_id, m.id, m.status, m.attempts, m.last_error,
            m.next_attempt_at, m.sent_at
          FROM deliveries d JOIN messages m ON m.id = d.message_id
          WHERE d.subscriber_id = ${subscriberId}`,
    );
    expect(rows).toHaveLength(1);
    const { notification_id: notificationId, ...message } = rows[0]!;
    expect(message.id).toBe(notificationId);
    return { row: message, subscriberId, warning };
  }

  async function row(id: string): Promise<LedgerRow> {
    const [r] = await queryRows<LedgerRow>(
      h.database.db,
      sql`SELECT id, status, attempts, last_error, next_attempt_at, sent_at FROM messages
          WHERE id = ${id}`,
    );
    return r!;
  }

  /** The next attempt, now: the message is made due instead of waiting out the backoff. */
  async function retryNow(id: string) {
    await h.database.db.execute(sql`UPDATE messages SET next_attempt_at = now() WHERE id = ${id}`);
    return deliverOne(rt.ctx, id);
  }

  it('retries 500s with backoff and delivers once, under one webhook-id', async () => {
    h.hooks.script('/flaky', [{ status: 500 }, { status: 500 }]);
    const { row: first, warning } = await announce('101020100', '上海', '/flaky');
    expect(first).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(first.last_error).toMatch(/answered 500/);
    // The first wait of the schedule is a minute, give or take the jitter.
    const waitMs = new Date(first.next_attempt_at).getTime() - Date.now();
    expect(waitMs).toBeGreaterThan(30_000);
    expect(waitMs).toBeLessThan(90_000);

    // Not due yet: a job firing early changes nothing and sends nothing.
    expect(await deliverOne(rt.ctx, first.id)).toBe('skipped');
    expect(h.hooks.requestsTo('/flaky')).toHaveLength(1);

    expect(await retryNow(first.id)).toBe('retrying');
    expect(await row(first.id)).toMatchObject({ status: 'retrying', attempts: 2 });
    expect(await retryNow(first.id)).toBe('sent');
    const sent = await row(first.id);
    expect(sent).toMatchObject({ status: 'sent', attempts: 3, last_error: null });
    expect(sent.sent_at).not.toBeNull();

    // Sent is final: another job for the message sends nothing.
    expect(await retryNow(first.id)).toBe('skipped');

    const requests = h.hooks.requestsTo('/flaky');
    expect(requests).toHaveLength(3);
    expect(requests.every((r) => r.verified)).toBe(true);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([first.id, first.id, first.id]);
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    expect(requests[2]!.json).toMatchObject({
      type: 'warning.new',
      data: { location: { id: '101020100', name: '上海' }, warning: { id: warning.id } },
    });
  });

  it("honours the receiver's Retry-After", async () => {
    h.hooks.script('/busy', [{ status: 503, retryAfter: 7200 }]);
    const { row: r } = await announce('101280101', '广州', '/busy');
    expect(r).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(r.last_error).toMatch(/answered 503/);
    // Two hours asked, far more than the one-minute backoff of the first retry.
    const waitMs = new Date(r.next_attempt_at).getTime() - Date.now();
    expect(waitMs).toBeGreaterThan(7200_000 - 120_000);
    expect(waitMs).toBeLessThanOrEqual(7200_000 + 5_000);
  });

  it('gives up after the last attempt and says so', async () => {
    h.hooks.script(
      '/down',
      Array.from({ length: 3 }, () => ({ status: 502 })),
    );
    const { row: r } = await announce('101280601', '深圳', '/down');
    expect(r).toMatchObject({ status: 'retrying', attempts: 1 });
    // Skip to the last attempt of the schedule.
    await h.database.db.execute(
      sql`UPDATE messages SET attempts = ${MAX_DELIVERY_ATTEMPTS - 1} WHERE id = ${r.id}`,
    );
    expect(await retryNow(r.id)).toBe('dead');
    const dead = await row(r.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: MAX_DELIVERY_ATTEMPTS });
    expect(dead.last_error).toBe(
      `gave up after ${MAX_DELIVERY_ATTEMPTS} attempts: webhook endpoint answered 502`,
    );
    expect(await retryNow(r.id)).toBe('skipped');
    expect(h.hooks.requestsTo('/down')).toHaveLength(2);
  });

  it('disables the subscriber on 410 Gone and records why', async () => {
    h.hooks.script('/gone', [{ status: 410 }]);
    const { row: r, subscriberId } = await announce('101270101', '成都', '/gone');
    expect(r).toMatchObject({ status: 'dead', attempts: 1 });
    expect(r.last_error).toMatch(/410 Gone/);
    const [subscriber] = await queryRows<{ active: boolean; disabled_reason: string | null }>(
      h.database.db,
      sql`SELECT active, disabled_reason FROM subscribers WHERE id = ${subscriberId}`,
    );
    expect(subscriber!.active).toBe(false);
    expect(subscriber!.disabled_reason).toMatch(/^webhook answered 410 Gone at \d{4}-/);
    expect(subscriber!.disabled_reason).toContain(r.id);
    expect(h.hooks.requestsTo('/gone')).toHaveLength(1);
  });

  it('treats a redirect as a failure and never follows it', async () => {
    h.hooks.script('/moved', [{ status: 302, redirectTo: h.hooks.url('/elsewhere') }]);
    const { row: r } = await announce('101200101', '武汉', '/moved');
    expect(r).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(r.last_error).toBe('webhook endpoint answered 302; redirects are not followed');
    expect(h.hooks.requestsTo('/moved')).toHaveLength(1);
    expect(h.hooks.requestsTo('/elsewhere')).toHaveLength(0);

    // The endpoint is back (fallback 200): the retry goes to the registered URL, same id.
    expect(await retryNow(r.id)).toBe('sent');
    const requests = h.hooks.requestsTo('/moved');
    expect(requests.map((q) => q.headers['webhook-id'])).toEqual([r.id, r.id]);
    expect(h.hooks.requestsTo('/elsewhere')).toHaveLength(0);
  });

  it('refuses a loopback target unless WEBHOOK_ALLOW_PRIVATE is set', async () => {
    const strict = h.runtime({ WEBHOOK_ALLOW_PRIVATE: 'false' });
    const { row: r } = await announce('101030100', '天津', '/private', strict);
    expect(r).toMatchObject({ status: 'dead', attempts: 1 });
    expect(r.last_error).toBe(
      'webhook target 127.0.0.1 is a loopback address; refused (WEBHOOK_ALLOW_PRIVATE is not set)',
    );
    expect(h.hooks.requestsTo('/private')).toHaveLength(0);
  });
});
