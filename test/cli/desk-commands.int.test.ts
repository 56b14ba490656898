import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * The three commands an operator reaches for when a desk says "we got nothing" (docs/operations.md):
 * who is subscribed to what, what they would receive, and a marked test through their channel.
 * Run as the operator runs them, against real Postgres, SMTP and webhook servers.
 */

const HANGZHOU = '101210101';
const BEIJING = '101010100';

describe('qwn subscribers, qwn preview, qwn test-send', () => {
  let h: PipelineHarness;
  let deskId: string;
  let hookId: string;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(BEIJING, '北京');
    deskId = await h.addEmailSubscriber('desk@example.com', [HANGZHOU], {
      minLevel: '橙色',
      types: ['1003'],
    });
    hookId = await h.addWebhookSubscriber('/dispatch', [BEIJING]);
    await h.addEmailSubscriber('gone@example.com', [BEIJING]);
    await h.database.db.execute(
      sql`UPDATE subscribers SET unsubscribed_at = now() WHERE email = 'gone@example.com'`,
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it('lists every subscriber with its places, filters, channel and state', async () => {
    const table = await h.qwn(['subscribers']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/desk@example\.com .* active .*杭州 \(≥橙色; types 暴雨\)/);
    expect(table.stdout).toMatch(/gone@example\.com .* unsubscribed: since /);
    expect(table.stdout.trim().split('\n').at(-1)).toBe(
      '3 subscribers: 2 active, 1 unsubscribed, 0 disabled, 0 paused',
    );
    const json = await h.qwn(['subscribers', '--json']);
    const listed = JSON.parse(json.stdout) as { id: string; channel: string; places: unknown[] }[];
    expect(listed.find((s) => s.id === deskId)).toMatchObject({
      channel: 'email',
      places: [{ id: HANGZHOU, name: '杭州', minLevel: '橙色', types: ['1003'], events: null }],
    });
    expect(listed.find((s) => s.id === hookId)).toMatchObject({ channel: 'webhook' });
  });

  it('previews the message a subscriber would receive, and sends nothing', async () => {
    const mail = await h.qwn(['preview', 'DESK@example.com', '--event', 'expired']);
    expect(mail.code, mail.stderr).toBe(0);
    expect(mail.stdout).toMatch(/^To: desk@example\.com\nSubject: .*（杭州）\n/);
    const hook = await h.qwn(['preview', hookId]);
    expect(hook.code, hook.stderr).toBe(0);
    expect(hook.stdout).toContain(`POST ${h.hooks.url('/dispatch')}`);
    expect(JSON.parse(hook.stdout.slice(hook.stdout.indexOf('{')))).toMatchObject({
      type: 'warning.new',
      data: { location: { id: BEIJING, name: '北京' } },
    });
    expect(h.smtp.messages).toHaveLength(0);
    expect(h.hooks.requests).toHaveLength(0);

    const stranger = await h.qwn(['preview', 'nobody@example.com']);
    expect(stranger.code).toBe(2);
    expect(stranger.stderr.trim()).toBe(
      'qwn preview: no subscriber has the email, webhook URL, name or id "nobody@example.com"',
    );
  });

  it("previews times in the subscriber's own time zone", async () => {
    const before = await h.qwn(['preview', 'desk@example.com']);
    expect(before.stdout).toMatch(/\(GMT\+8\)/);
    await h.database.db.execute(
      sql`UPDATE subscribers SET timezone = 'Asia/Kolkata' WHERE id = ${deskId}`,
    );
    try {
      const after = await h.qwn(['preview', 'desk@example.com']);
      expect(after.code, after.stderr).toBe(0);
      expect(after.stdout).toMatch(/\(GMT\+5:30\)/);
      expect(after.stdout).not.toMatch(/\(GMT\+8\)/);
    } finally {
      await h.database.db.execute(sql`UPDATE subscribers SET timezone = NULL WHERE id = ${deskId}`);
    }
  });

  it('sends one marked test message through the real channel, recorded apart from the ledger', async () => {
    const mail = await h.qwn(['test-send', 'desk@example.com']);
    expect(mail.code, mail.stderr).toBe(0);
    expect(mail.stdout).toMatch(
      /^sent: test message [0-9a-f-]{36} by email: accepted by the SMTP server: 250/,
    );
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.smtp.messages[0]!.parsed.subject).toMatch(/^【.*】【测试】杭州气象台发布暴雨黄色预警/);
    expect(h.smtp.messages[0]!.parsed.text).toContain('这是 qwn 发送的测试消息');

    const hook = await h.qwn(['test-send', h.hooks.url('/dispatch')]);
    expect(hook.code, hook.stderr).toBe(0);
    expect(hook.stdout).toMatch(/by webhook: the webhook answered 2\d\d$/m);
    const [request] = h.hooks.requestsTo('/dispatch');
    expect(request!.verified).toBe(true);
    expect(request!.body).toContain('【测试】');

    // A refusal is said and recorded, never retried.
    h.hooks.script('/dispatch', [{ status: 500 }]);
    const refused = await h.qwn(['test-send', hookId]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^not sent: test message .* by webhook: .*500/);

    const unsubscribed = await h.qwn(['test-send', 'gone@example.com']);
    expect(unsubscribed.code).toBe(2);
    expect(unsubscribed.stderr.trim()).toBe(
      'qwn test-send: the subscriber is unsubscribed: nothing is sent to it',
    );

    const recorded = await queryRows<{ channel: string; ok: boolean }>(
      h.database.db,
      sql`SELECT channel, ok FROM test_sends ORDER BY sent_at`,
    );
    expect(recorded).toEqual([
      { channel: 'email', ok: true },
      { channel: 'webhook', ok: true },
      { channel: 'webhook', ok: false },
    ]);
    const ledger = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM messages) AS n`,
    );
    expect(Number(ledger[0]!.n)).toBe(0);
  });
});
