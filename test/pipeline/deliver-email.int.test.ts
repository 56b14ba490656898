import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { evaluateHealth, httpStatusFor } from '../../src/ops/health.js';
import { UpstreamMonitor } from '../../src/ops/upstream.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { deliverOne, startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import type { ReceivedMail } from '../support/smtp-sink.js';

/**
 * Email deliveries through the whole pipeline to a real SMTP server (smtp-server), read back
 * with mailparser. Retries are driven by making the message due in SQL and running the deliver
 * job in-process, never by waiting for the schedule. The subscribers group by cycle (the email
 * default, docs/messages.md): each notification travels in its cycle's message, whose id is the
 * Message-ID, sent when the cycle's checks are done.
 */

/** A notification and the state of the message that carries it. */
interface LedgerRow {
  id: string;
  message_id: string;
  email: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

const HANGZHOU = '101210101';
const NANJING = '101190101';
const XIAN = '101110101';
const GUANGZHOU = '101280101';

describe('email deliveries', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
  });
  beforeEach(() => {
    h.smtp.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  async function rowsAt(place: string): Promise<LedgerRow[]> {
    return queryRows<LedgerRow>(
      h.database.db,
      sql`SELECT d.id, d.message_id, s.email, m.status, m.attempts, m.last_error
          FROM deliveries d JOIN subscribers s ON s.id = d.subscriber_id
          JOIN messages m ON m.id = d.message_id
          WHERE d.place_id = ${place} ORDER BY s.email`,
    );
  }

  async function cycle() {
    const summary = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
    expect(summary.ok).toBe(true);
    return summary;
  }

  const header = (mail: ReceivedMail, name: string) =>
    mail.parsed.headerLines.find((l) => l.key === name)?.line;

  it('sends one message per subscriber in its language, with stable headers', async () => {
    await h.addPlace(HANGZHOU, '杭州');
    await h.addEmailSubscriber('zh@example.com', [HANGZHOU]);
    const enId = await h.addEmailSubscriber('en@example.com', [HANGZHOU]);
    await h.database.db.execute(sql`UPDATE subscribers SET lang = 'en' WHERE id = ${enId}`);
    const warning = v7Warning({
      locationId: HANGZHOU,
      seq: 1,
      typeCode: '1003',
      level: '黄色',
      text: '预计未来6小时内将出现强降雨 <大暴雨> & 雷电。',
    });
    // What the upstream answers with lang=en: the English subscriber reads this text.
    const englishText = 'Heavy rain <torrential> & lightning are expected within 6 hours.';
    h.sim.setWarnings(HANGZHOU, [{ ...warning, en: { text: englishText } }]);

    await cycle();
    const rows = await rowsAt(HANGZHOU);
    expect(rows.map((r) => [r.email, r.status, r.attempts])).toEqual([
      ['en@example.com', 'sent', 1],
      ['zh@example.com', 'sent', 1],
    ]);
    expect(h.smtp.messages).toHaveLength(2);
    const to = (address: string) => h.smtp.messages.find((m) => m.envelope.to[0] === address)!;

    for (const row of rows) {
      const mail = to(row.email);
      // The message's id, not the notification's: the notification is named in the text.
      expect(row.message_id).not.toBe(row.id);
      expect(mail.parsed.messageId).toBe(`<${row.message_id}@qwn>`);
      expect(mail.envelope.from).toBe('alerts@qwn.test');
      // No PUBLIC_URL in this harness: no unsubscribe header rather than a mailto: nobody reads.
      expect(header(mail, 'list-unsubscribe')).toBeUndefined();
      const text = mail.parsed.text ?? '';
      const html = mail.parsed.html || '';
      const english = row.email === 'en@example.com';
      expect(text).toContain(english ? englishText : warning.text);
      expect(text).toContain(row.id);
      // The HTML part escapes the upstream text instead of interpreting it.
      expect(html).toContain(
        english ? '&lt;torrential&gt; &amp; lightning' : '&lt;大暴雨&gt; &amp; 雷电',
      );
      expect(html).not.toContain(english ? '<torrential>' : '<大暴雨>');
    }

    const zh = to('zh@example.com');
    expect(zh.parsed.subject).toBe(`【黄色预警】${String(warning.title)}（杭州）`);
    expect(zh.parsed.text).toContain('地点：杭州 (101210101)');
    expect(zh.parsed.text).toContain('天气数据来源：和风天气 QWeather');
    expect(zh.parsed.html).toContain('<html lang="zh-CN">');

    const en = to('en@example.com');
    expect(en.parsed.subject).toBe(
      '[Yellow warning] Hangzhou Meteorological Observatory issued Yellow Rainstorm Warning (杭州)',
    );
    expect(en.parsed.text).toContain('Place: 杭州 (101210101)');
    expect(en.parsed.text).toContain('Weather data: QWeather');
    expect(en.parsed.html).toContain('<html lang="en">');
  });

  it('retries a 451 and then delivers exactly one message under the same Message-ID', async () => {
    await h.addPlace(NANJING, '南京');
    await h.addEmailSubscriber('later@example.com', [NANJING]);
    h.sim.setWarnings(NANJING, [
      v7Warning({ locationId: NANJING, seq: 1, typeCode: '1004', level: '橙色' }),
    ]);
    h.smtp.failNext(1, { code: 451, message: '4.3.0 Mailbox busy, try again later' });

    await cycle();
    const [deferred] = await rowsAt(NANJING);
    expect(deferred).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(deferred!.last_error).toContain('451 4.3.0 Mailbox busy');
    expect(h.smtp.rejected).toHaveLength(1);
    expect(h.smtp.messages).toHaveLength(0);

    await h.database.db.execute(
      sql`UPDATE messages SET next_attempt_at = now() WHERE id = ${deferred!.message_id}`,
    );
    expect(await deliverOne(rt.ctx, deferred!.message_id)).toBe('sent');
    const [sent] = await rowsAt(NANJING);
    expect(sent).toMatchObject({ status: 'sent', attempts: 2, last_error: null });
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.smtp.messages[0]!.parsed.messageId).toBe(`<${deferred!.message_id}@qwn>`);

    // A late duplicate job finds the message sent and sends nothing.
    expect(await deliverOne(rt.ctx, deferred!.message_id)).toBe('skipped');
    expect(h.smtp.messages).toHaveLength(1);
  });

  it('records a 550 as dead at once with the reply, and never retries it', async () => {
    await h.addPlace(XIAN, '西安');
    await h.addEmailSubscriber('nobody@example.com', [XIAN]);
    h.smtp.rejectRecipient('nobody@example.com');
    h.sim.setWarnings(XIAN, [
      v7Warning({ locationId: XIAN, seq: 1, typeCode: '1009', level: '红色' }),
    ]);

    await cycle();
    const [dead] = await rowsAt(XIAN);
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(dead!.last_error).toContain('550 5.1.1 No such user here');
    // The reply appears once, not once from the channel and again from the ledger.
    expect(dead!.last_error!.split('5.1.1').length).toBe(2);

    await h.database.db.execute(
      sql`UPDATE messages SET next_attempt_at = now() WHERE id = ${dead!.message_id}`,
    );
    expect(await deliverOne(rt.ctx, dead!.message_id)).toBe('skipped');
    expect((await rowsAt(XIAN))[0]).toMatchObject({ status: 'dead', attempts: 1 });
    expect(h.smtp.messages).toHaveLength(0);
  });

  it('pauses the channel while the server refuses the login (535): nothing dies, one login per pause', async () => {
    await h.addPlace(GUANGZHOU, '广州');
    await h.addEmailSubscriber('desk1@example.com', [GUANGZHOU], {}, 'none');
    await h.addEmailSubscriber('desk2@example.com', [GUANGZHOU], {}, 'none');
    h.sim.setWarnings(GUANGZHOU, [
      v7Warning({ locationId: GUANGZHOU, seq: 1, typeCode: '1001', level: '红色' }),
    ]);
    // The clock of this runtime moves only when the test says so.
    let now = Date.now();
    const paused = h.runtime(
      { SMTP_URL: h.smtp.url.replace('smtp://', 'smtp://qwn:wrong-password@') },
      { now: () => new Date(now) },
    );
    try {
      h.smtp.refuseLogins(true);
      const summary = await runCycleOnce(paused.ctx, paused.redis, { timeoutMs: 30_000 });
      expect(summary.ok).toBe(true);
      const refused = await rowsAt(GUANGZHOU);
      expect(refused).toHaveLength(2);
      for (const row of refused) {
        // Waiting, no attempt counted: a refused login says nothing about the message.
        expect(row).toMatchObject({ status: 'retrying', attempts: 0 });
        expect(row.last_error).toMatch(
          /^channel paused, not counted as an attempt: SMTP server refused the login \(535\)/,
        );
      }
      expect(h.smtp.messages).toHaveLength(0);
      const loginsWhileRefused = h.smtp.logins;
      expect(loginsWhileRefused).toBeGreaterThanOrEqual(1);
      expect(paused.ctx.emailPause.snapshot()).toMatchObject({ paused: true });
      const report = evaluateHealth({
        now: new Date(now),
        startedAt: new Date(now),
        pollIntervalSeconds: 300,
        postgres: { ok: true, latencyMs: 1 },
        redis: { ok: true, latencyMs: 1 },
        cycles: { lastSuccessAt: new Date(now), latest: null },
        upstream: new UpstreamMonitor().snapshot(),
        email: paused.ctx.emailPause.snapshot(),
      });
      expect(report.status).toBe('degraded');
      expect(report.checks.email.reason).toContain('refused the login');
      expect(httpStatusFor(report)).toBe(200);

      // Due again in the ledger, but the pause is not over: no login is tried.
      const makeDue = () =>
        h.database.db.execute(
          sql`UPDATE messages SET next_attempt_at = now()
              WHERE id = ANY(${sql.param(refused.map((r) => r.message_id))}::uuid[])`,
        );
      await makeDue();
      expect(await deliverOne(paused.ctx, refused[0]!.message_id)).toBe('waiting');
      expect(h.smtp.logins).toBe(loginsWhileRefused);

      // The operator fixes the password; the pause ends; each message goes out once.
      h.smtp.refuseLogins(false);
      now += 31_000;
      await makeDue();
      for (const row of refused) expect(await deliverOne(paused.ctx, row.message_id)).toBe('sent');
      expect((await rowsAt(GUANGZHOU)).map((r) => [r.status, r.attempts])).toEqual([
        ['sent', 1],
        ['sent', 1],
      ]);
      expect(h.smtp.messages.map((m) => m.envelope.to[0]).sort()).toEqual([
        'desk1@example.com',
        'desk2@example.com',
      ]);
      expect(paused.ctx.emailPause.snapshot()).toMatchObject({ paused: false, reason: null });
    } finally {
      await paused.close();
    }
  });
});
