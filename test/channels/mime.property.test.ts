import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  composeMime,
  encodedWords,
  formatDate,
  MimeHeaderError,
  type MimeEmail,
} from '../../src/channels/mime.js';
import { parseMail, type ParsedAddresses } from '../support/smtp-sink.js';

const base: MimeEmail = {
  from: { name: 'QWN Alerts', address: 'alerts@example.com' },
  to: 'duty@example.com',
  subject: '【橙色预警】杭州市气象台发布暴雨橙色预警',
  messageId: '<5f0c3c1e-9d7b-4d43-9a3c-0d1f6b0b8a11@qwn>',
  date: new Date('2026-07-01T08:00:00Z'),
  headers: { 'Auto-Submitted': 'auto-generated' },
  text: '地点：杭州\n级别：橙色\n',
  html: '<html lang="zh-CN"><body><p>暴雨</p></body></html>\n',
  boundary: 'qwn-alt-5f0c3c1e-9d7b-4d43-9a3c-0d1f6b0b8a11',
};

/** Text as a mail reader gets it back: canonical line breaks. */
const lf = (s: string) => s.replace(/\r\n/g, '\n');
// Lone surrogates have no UTF-8 form; everything else may turn up in a warning's text.
const anyText = fc.string({ unit: 'grapheme', maxLength: 400 });
const lines = fc
  .array(fc.string({ unit: 'grapheme', maxLength: 120 }), { maxLength: 12 })
  .map((l) => l.join('\n'));

function headerLines(raw: Buffer): string[] {
  const text = raw.toString('utf8');
  return text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n');
}

describe('composeMime', () => {
  it('round-trips subject, sender, both parts and Message-ID through a MIME parser', async () => {
    await fc.assert(
      fc.asyncProperty(
        anyText.filter((s) => s.trim() === s && !/[\r\n]/.test(s)),
        fc
          .string({ unit: 'grapheme', maxLength: 60 })
          .filter((s) => s.trim() === s && !/[\r\n]/.test(s)),
        lines,
        lines,
        async (subject, name, text, html) => {
          const raw = composeMime({ ...base, subject, from: { ...base.from, name }, text, html });
          const parsed = await parseMail(raw);
          expect(parsed.subject ?? '').toBe(subject);
          const from = (parsed.from as ParsedAddresses).value[0]!;
          expect(from.address).toBe('alerts@example.com');
          expect(from.name).toBe(name);
          expect(parsed.messageId).toBe(base.messageId);
          expect(lf(parsed.text ?? '')).toBe(lf(text));
          expect(lf(typeof parsed.html === 'string' ? parsed.html : '')).toBe(lf(html));
          // Every header line within RFC 5322's 78, every body line within 998, CRLF only.
          for (const line of headerLines(raw)) expect(line.length).toBeLessThanOrEqual(78);
          const body = raw.toString('utf8');
          expect(body.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
          for (const line of body.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('never splits a character between encoded-words', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const words = encodedWords(text).split('\r\n ');
        const decoded = words.map((w) => {
          const m = /^=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=$/.exec(w);
          expect(m).not.toBeNull();
          expect(w.length).toBeLessThanOrEqual(75);
          const bytes = Buffer.from(m![1]!, 'base64');
          // Each word on its own is valid UTF-8.
          expect(Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes)).toBe(true);
          return bytes.toString('utf8');
        });
        expect(decoded.join('')).toBe(text);
      }),
    );
  });

  it('writes the headers a reader and a list manager expect', async () => {
    const raw = composeMime({
      ...base,
      headers: { 'List-Unsubscribe': '<mailto:alerts@example.com?subject=unsubscribe>' },
    });
    const parsed = await parseMail(raw);
    expect(parsed.date?.toISOString()).toBe('2026-07-01T08:00:00.000Z');
    expect(headerLines(raw)).toContain(
      'List-Unsubscribe: <mailto:alerts@example.com?subject=unsubscribe>',
    );
    expect(headerLines(raw)).toContain('MIME-Version: 1.0');
    expect((parsed.to as ParsedAddresses).value[0]?.address).toBe('duty@example.com');
    expect(formatDate(base.date)).toBe('Wed, 01 Jul 2026 08:00:00 +0000');
  });

  it('encodes a non-ASCII sender name and keeps a quoted ASCII one', async () => {
    const chinese = await parseMail(
      composeMime({ ...base, from: { name: '和风预警 "值班"', address: 'alerts@example.com' } }),
    );
    expect((chinese.from as ParsedAddresses).value[0]?.name).toBe('和风预警 "值班"');
    const quoted = composeMime({ ...base, from: { name: 'Duty "A" \\ B', address: 'a@b.cn' } });
    expect(headerLines(quoted)[0]).toBe('From: "Duty \\"A\\" \\\\ B" <a@b.cn>');
    expect(((await parseMail(quoted)).from as ParsedAddresses).value[0]?.name).toBe(
      'Duty "A" \\ B',
    );
  });

  it.each([
    ['a recipient with a line break', { to: 'a@b.cn\r\nBcc: c@d.cn' }],
    ['a header value with a line break', { headers: { 'X-A': 'x\r\nBcc: c@d.cn' } }],
    ['a non-ASCII Message-ID', { messageId: '<编号@qwn>' }],
  ])('refuses %s', (_what, change) => {
    expect(() => composeMime({ ...base, ...change })).toThrow(MimeHeaderError);
  });
});
