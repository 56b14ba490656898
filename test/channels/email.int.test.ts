import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EmailError, createMailer, messageIdFor, type Mailer } from '../../src/channels/email.js';
import { createLogger, scrub } from '../../src/logger.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';
import { messageOf, sampleMessage, sampleNotification, sampleWarning } from './fixtures.js';

const logger = createLogger('silent');
const FROM = 'QWN Alerts <alerts@example.com>';
let sink: SmtpSink;
const mailers: Mailer[] = [];

function mailer(o: { smtpUrl?: string; from?: string } = {}): Mailer {
  const m = createMailer({
    smtpUrl: 'smtpUrl' in o ? o.smtpUrl : sink.url,
    from: 'from' in o ? o.from : FROM,
    logger,
  });
  mailers.push(m);
  return m;
}

async function failure(promise: Promise<unknown>): Promise<EmailError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(EmailError);
    return err as EmailError;
  }
  throw new Error('expected the send to fail');
}

function header(mail: ReceivedMail, name: string): string | undefined {
  const line = mail.parsed.headerLines.find((h) => h.key === name.toLowerCase())?.line;
  return line?.slice(line.indexOf(':') + 1).trim();
}

beforeAll(async () => {
  sink = await startSmtpSink();
});

afterEach(async () => {
  // Pooled connections first, or the sink would wait for them when it closes.
  await Promise.all(mailers.splice(0).map((m) => m.close()));
  sink.reset();
});

afterAll(async () => {
  await sink.close();
});

describe('email channel', () => {
  it('sends one message with text and HTML parts and a stable Message-ID', async () => {
    const n = sampleNotification();
    const result = await mailer().send('duty@example.com', messageOf(n));
    expect(result.messageId).toBe(`<${n.deliveryId}@qwn>`);
    expect(result.response).toMatch(/^250 /);

    const [mail] = await sink.waitForMessages(1);
    expect(sink.messages).toHaveLength(1);
    expect(mail!.envelope).toEqual({ from: 'alerts@example.com', to: ['duty@example.com'] });
    expect(mail!.parsed.messageId).toBe(messageIdFor(n.deliveryId));
    expect(mail!.raw.toString('latin1').match(/^Message-ID:/gim)).toHaveLength(1);
    expect(mail!.parsed.subject).toBe(
      '【橙色预警】杭州市气象台发布暴雨橙色预警[II级/严重]（杭州）',
    );
    expect(mail!.parsed.from?.text).toBe('"QWN Alerts" <alerts@example.com>');
    // Without an unsubscribe URL no List-Unsubscribe at all: a mailto: to MAIL_FROM would
    // promise an unsubscribe that nobody carries out.
    expect(header(mail!, 'List-Unsubscribe')).toBeUndefined();
    expect(header(mail!, 'List-Unsubscribe-Post')).toBeUndefined();
    expect(header(mail!, 'Auto-Submitted')).toBe('auto-generated');

    expect(mail!.parsed.text).toContain('地点：杭州 (101210101)');
    expect(mail!.parsed.text).toContain('级别：橙色 (严重)');
    expect(mail!.parsed.text).toContain('发布单位：杭州市气象台');
    expect(mail!.parsed.text).toContain('开始时间：2026-07-01 16:00 (GMT+8)');
    expect(mail!.parsed.text).toContain('Weather data: QWeather');
    expect(mail!.parsed.html).toContain('<html lang="zh-CN">');
    expect(mail!.parsed.html).toContain('预计未来3小时内累计降水量将达50毫米以上');
  });

  it('keeps the Message-ID when the same notification is sent again', async () => {
    const n = sampleNotification();
    const m = mailer();
    await m.send('duty@example.com', messageOf(n));
    await m.send('duty@example.com', messageOf(n));
    const mails = await sink.waitForMessages(2);
    expect(mails.map((x) => x.parsed.messageId)).toEqual([
      messageIdFor(n.deliveryId),
      messageIdFor(n.deliveryId),
    ]);
  });

  it('renders English for English subscribers, with times in the place time zone', async () => {
    const n = sampleNotification({
      lang: 'en',
      eventType: 'cancel',
      location: { id: '101010100', name: 'Beijing', tz: 'Asia/Shanghai' },
      warning: sampleWarning({ title: 'Rainstorm warning', endTime: '2026-07-01T23:30:00Z' }),
    });
    await mailer().send('ops@example.com', messageOf(n));
    const [mail] = await sink.waitForMessages(1);
    expect(mail!.parsed.subject).toBe('Cancelled: Rainstorm warning (Beijing)');
    expect(mail!.parsed.text).toContain('Planned end: 2026-07-02 07:30 (GMT+8)');
    expect(mail!.parsed.text).toContain('Cancelled at: 2026-07-01 16:00 (GMT+8)');
    expect(mail!.parsed.text).toContain('The issuer has cancelled this warning.');
  });

  it('marks updates and ended warnings in the subject', async () => {
    const m = mailer();
    await m.send('duty@example.com', sampleMessage({ eventType: 'update', deliveryId: 'u-1' }));
    await m.send('duty@example.com', sampleMessage({ eventType: 'expired', deliveryId: 'e-1' }));
    const mails = await sink.waitForMessages(2);
    const subjects = mails.map((x) => x.parsed.subject).sort();
    expect(subjects[0]).toMatch(/^【已结束】/);
    expect(subjects[1]).toMatch(/^【更新·橙色预警】/);
  });

  it('escapes markup from warning text in the HTML part', async () => {
    const n = sampleNotification({
      warning: sampleWarning({ text: '<script>alert("x")</script>' }),
    });
    await mailer().send('duty@example.com', messageOf(n));
    const [mail] = await sink.waitForMessages(1);
    expect(mail!.parsed.html).not.toContain('<script>');
    expect(mail!.parsed.html).toContain('&lt;script&gt;');
    expect(mail!.parsed.text).toContain('<script>alert("x")</script>');
  });

  it('carries the one-click unsubscribe headers of RFC 8058 when given a URL', async () => {
    const url = 'https://alerts.example.com/unsubscribe/AAAAAAAAAAAAAAAAAAAAAA.token';
    await mailer().send('duty@example.com', sampleMessage(), { unsubscribeUrl: url });
    const [mail] = await sink.waitForMessages(1);
    expect(header(mail!, 'List-Unsubscribe')).toBe(`<${url}>`);
    expect(header(mail!, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
  });

  it('refuses an unsubscribe URL that would break the header, without sending', async () => {
    const err = await failure(
      mailer().send('duty@example.com', sampleMessage(), {
        unsubscribeUrl: 'https://a.example/x>, <mailto:x@evil.example>',
      }),
    );
    expect(err.retryable).toBe(false);
    expect(sink.messages).toHaveLength(0);
  });

  it('turns a 451 into a retryable error; the next attempt delivers exactly one email', async () => {
    sink.failNext(1, { code: 451, message: '4.3.0 Mailbox busy, try later' });
    const n = sampleNotification();
    const m = mailer();
    const err = await failure(m.send('duty@example.com', messageOf(n)));
    expect(err).toMatchObject({ retryable: true, responseCode: 451 });
    expect(err.response).toContain('Mailbox busy');
    expect(sink.messages).toHaveLength(0);

    await m.send('duty@example.com', messageOf(n));
    await sink.waitForMessages(1);
    expect(sink.messages).toHaveLength(1);
    expect(sink.rejected).toHaveLength(1);
  });

  it('turns a 550 into a permanent error that keeps the server reply', async () => {
    sink.rejectRecipient('nobody@example.com', { code: 550, message: '5.1.1 No such user here' });
    const err = await failure(mailer().send('nobody@example.com', sampleMessage()));
    expect(err).toMatchObject({ retryable: false, responseCode: 550 });
    expect(err.response).toContain('5.1.1 No such user here');
    expect(err.message).toContain('5.1.1 No such user here');
    expect(sink.messages).toHaveLength(0);
  });

  it('fails clearly and permanently without SMTP_URL or MAIL_FROM', async () => {
    const noUrl = await failure(
      mailer({ smtpUrl: undefined }).send('a@example.com', sampleMessage()),
    );
    expect(noUrl.retryable).toBe(false);
    expect(noUrl.message).toContain('SMTP_URL is not set');
    const noFrom = await failure(
      mailer({ from: undefined }).send('a@example.com', sampleMessage()),
    );
    expect(noFrom.retryable).toBe(false);
    expect(noFrom.message).toContain('MAIL_FROM is not set');
    const noAddress = await failure(
      mailer({ from: 'QWN Alerts' }).send('a@example.com', sampleMessage()),
    );
    expect(noAddress.retryable).toBe(false);
    expect(noAddress.message).toContain('MAIL_FROM has no email address');
    expect(sink.messages).toHaveLength(0);
  });

  it('writes a non-ASCII sender name so that readers decode it', async () => {
    await mailer({ from: '和风预警 <alerts@example.com>' }).send('a@example.com', sampleMessage());
    expect(sink.messages[0]!.parsed.from?.value[0]).toMatchObject({
      name: '和风预警',
      address: 'alerts@example.com',
    });
    expect(sink.messages[0]!.envelope.from).toBe('alerts@example.com');
  });

  it('treats an unreachable SMTP server as retryable', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (address === null || typeof address === 'string') throw new Error('no port');
    const err = await failure(
      mailer({ smtpUrl: `smtp://127.0.0.1:${address.port}` }).send(
        'a@example.com',
        sampleMessage(),
      ),
    );
    expect(err.retryable).toBe(true);
    expect(err.responseCode).toBeUndefined();
  });

  it('keeps the SMTP password out of logs and errors', async () => {
    const password = 'pa55-w0rd-for-smtp';
    await mailer({ smtpUrl: `smtp://user:${password}@127.0.0.1:${sink.port}` }).send(
      'duty@example.com',
      sampleMessage(),
    );
    await sink.waitForMessages(1);
    expect(scrub(`login failed with ${password}`)).not.toContain(password);
  });
});

describe('smtp sink', () => {
  it('saves every accepted message as an .eml file when asked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qwn-sink-'));
    const saving = await startSmtpSink({ saveDir: dir });
    const m = createMailer({ smtpUrl: saving.url, from: FROM, logger });
    try {
      await m.send('duty@example.com', sampleMessage());
      const [mail] = await saving.waitForMessages(1);
      expect(mail!.file).toBeDefined();
      const eml = await readFile(mail!.file!);
      expect(eml.equals(mail!.raw)).toBe(true);
      expect(eml.toString()).toContain('Message-ID: <0b9f2c1e-4d5a-4c7b-9e1f-2a3b4c5d6e7f@qwn>');
    } finally {
      await m.close();
      await saving.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
