import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeHtml,
  formatTime,
  renderEmail,
  webhookPayload,
  type EventType,
  type Notification,
} from '../../src/domain/render.js';
import { sampleNotification, sampleWarning } from '../channels/fixtures.js';

const EVENT_TYPES: EventType[] = ['new', 'update', 'cancel', 'expired'];

const english = (overrides: Partial<Notification> = {}): Notification =>
  sampleNotification({
    lang: 'en',
    location: { id: '101210101', name: 'Hangzhou', tz: 'Asia/Shanghai' },
    warning: sampleWarning({
      title: 'Hangzhou Meteorological Observatory issued an orange rainstorm warning',
      sender: 'Hangzhou Meteorological Observatory',
      typeName: 'Rainstorm',
      text: 'Rainfall over 50 mm is expected within 3 hours.',
    }),
    ...overrides,
  });

describe('webhookPayload', () => {
  it('matches docs/messages.md field by field', () => {
    expect(webhookPayload(sampleNotification())).toEqual({
      type: 'warning.new',
      timestamp: '2026-07-01T08:00:00Z',
      data: {
        location: { id: '101210101', name: '杭州' },
        warning: {
          id: '10121010120260701080000001',
          title: '杭州市气象台发布暴雨橙色预警[II级/严重]',
          sender: '杭州市气象台',
          pubTime: '2026-07-01T16:00+08:00',
          startTime: '2026-07-01T16:00+08:00',
          endTime: '2026-07-02T16:00+08:00',
          status: 'active',
          level: '橙色',
          severity: 'Severe',
          type: '1003',
          typeName: '暴雨',
          text: sampleWarning().text,
          related: null,
        },
        supersedes: [],
      },
    });
  });

  it('names the event type for every kind', () => {
    for (const eventType of EVENT_TYPES) {
      expect(webhookPayload(sampleNotification({ eventType })).type).toBe(`warning.${eventType}`);
    }
  });

  it('names the earlier warning for updates and cancels', () => {
    const body = webhookPayload(
      sampleNotification({
        eventType: 'cancel',
        warning: sampleWarning({ status: 'cancel', related: ['A1', 'A2'] }),
        supersedes: ['A1', 'A2'],
      }),
    );
    expect(body.data.warning.related).toBe('A1');
    expect(body.data.warning.status).toBe('cancel');
    expect(body.data.supersedes).toEqual(['A1', 'A2']);
  });

  it('keeps missing upstream fields as null and falls back to the colour for the level', () => {
    const body = webhookPayload(
      sampleNotification({
        warning: sampleWarning({
          sender: null,
          startTime: null,
          severity: null,
          typeCode: null,
          level: 'unknown',
          color: 'yellow',
        }),
      }),
    );
    expect(body.data.warning).toMatchObject({
      sender: null,
      startTime: null,
      severity: null,
      type: null,
      level: '黄色',
    });
  });

  it('is JSON-serializable without loss', () => {
    const body = webhookPayload(sampleNotification());
    expect(JSON.parse(JSON.stringify(body))).toEqual(body);
  });
});

describe('renderEmail subject', () => {
  const zhTitle = '杭州市气象台发布暴雨橙色预警[II级/严重]';
  const enTitle = 'Hangzhou Meteorological Observatory issued an orange rainstorm warning';
  const expected: Record<'zh' | 'en', Record<EventType, string>> = {
    zh: {
      new: `【橙色预警】${zhTitle}（杭州）`,
      update: `【更新·橙色预警】${zhTitle}（杭州）`,
      cancel: `【解除】${zhTitle}（杭州）`,
      expired: `【已结束】${zhTitle}（杭州）`,
      resumed: `【预警恢复·橙色预警】${zhTitle}（杭州）`,
    },
    en: {
      new: `[Orange warning] ${enTitle} (Hangzhou)`,
      update: `Updated: [Orange warning] ${enTitle} (Hangzhou)`,
      cancel: `Cancelled: ${enTitle} (Hangzhou)`,
      expired: `Ended: ${enTitle} (Hangzhou)`,
      resumed: `Back in force: [Orange warning] ${enTitle} (Hangzhou)`,
    },
  };

  for (const eventType of EVENT_TYPES) {
    it(`marks the ${eventType} event in Chinese and English`, () => {
      expect(renderEmail(sampleNotification({ eventType })).subject).toBe(expected.zh[eventType]);
      expect(renderEmail(english({ eventType })).subject).toBe(expected.en[eventType]);
    });
  }

  it('stays on one line whatever the upstream title holds', () => {
    const n = sampleNotification({
      warning: sampleWarning({ title: 'line one\r\nBcc: victim@example.com' }),
    });
    expect(renderEmail(n).subject).toBe('【橙色预警】line one Bcc: victim@example.com（杭州）');
  });

  it('says "warning" when the level is unknown', () => {
    const n = english({ warning: sampleWarning({ level: 'unknown', color: null, title: 'T' }) });
    expect(renderEmail(n).subject).toBe('[Warning] T (Hangzhou)');
  });
});

describe('renderEmail body', () => {
  it('names place, type, level, sender, times in the place zone, text and attribution (zh)', () => {
    const { text, html } = renderEmail(sampleNotification());
    for (const part of [text, html]) {
      expect(part).toContain('杭州 (101210101)');
      expect(part).toContain('暴雨');
      expect(part).toContain('橙色 (严重)');
      expect(part).toContain('杭州市气象台');
      expect(part).toContain('2026-07-01 16:00 (GMT+8)');
      expect(part).toContain('2026-07-02 16:00 (GMT+8)');
      expect(part).toContain('预计未来3小时内累计降水量将达50毫米以上');
      expect(part).toContain('Weather data: QWeather');
      expect(part).toContain('0b9f2c1e-4d5a-4c7b-9e1f-2a3b4c5d6e7f');
    }
    expect(text).toContain('开始时间：2026-07-01 16:00 (GMT+8)');
    expect(html).toContain('<html lang="zh-CN">');
  });

  it('uses English labels for English subscribers', () => {
    const { text, html } = renderEmail(english());
    expect(text).toContain('Place: Hangzhou (101210101)');
    expect(text).toContain('Level: Orange (Severe)');
    expect(text).toContain('Starts: 2026-07-01 16:00 (GMT+8)');
    expect(text).toContain('Issued by: Hangzhou Meteorological Observatory');
    expect(html).toContain('<html lang="en">');
  });

  it('converts UTC instants into the place time zone', () => {
    const n = sampleNotification({
      location: { id: '101010100', name: '北京', tz: 'Asia/Shanghai' },
      warning: sampleWarning({ startTime: '2026-07-01T23:30:00Z' }),
    });
    expect(renderEmail(n).text).toContain('开始时间：2026-07-02 07:30 (GMT+8)');
  });

  it('explains cancellations and shows what they replace', () => {
    const n = sampleNotification({ eventType: 'cancel', supersedes: ['OLD-1'] });
    const { text } = renderEmail(n);
    expect(text).toContain('预警解除：');
    expect(text).toContain('此预警已由发布单位解除。');
    expect(text).toContain('取代的预警：OLD-1');
    expect(renderEmail(english({ eventType: 'expired' })).text).toContain(
      'This warning has reached its end time or is no longer published.',
    );
  });

  it('includes the instruction only when there is one', () => {
    const withInstruction = english({
      warning: sampleWarning({ source: 'v1', instruction: 'Stay indoors.' }),
    });
    expect(renderEmail(withInstruction).text).toContain('Instruction: \nStay indoors.');
    expect(renderEmail(withInstruction).html).toContain('Stay indoors.');
    expect(renderEmail(english()).text).not.toContain('Instruction');
  });

  it('escapes markup from upstream text in the HTML part', () => {
    const n = sampleNotification({
      location: { id: '1', name: '<b>杭州</b>', tz: 'Asia/Shanghai' },
      warning: sampleWarning({
        title: '<img src=x onerror=alert(1)>',
        text: '<script>alert("x")</script> & more',
        sender: '"quoted" \'sender\'',
      }),
    });
    const { html, text } = renderEmail(n);
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(html).toContain('&quot;quoted&quot; &#39;sender&#39;');
    // The plain-text part is not HTML: it carries the text as sent.
    expect(text).toContain('<script>alert("x")</script> & more');
  });

  it('falls back to UTC for an unknown time zone and shows unparseable times as given', () => {
    expect(formatTime('2026-07-01T08:00:00Z', 'Mars/Olympus', 'en')).toBe('2026-07-01 08:00 (UTC)');
    expect(formatTime('tomorrow', 'Asia/Shanghai', 'en')).toBe('tomorrow');
    expect(formatTime(null, 'Asia/Shanghai', 'zh')).toBe('未提供');
  });

  it('formats each time in its own zone however many it has seen', () => {
    const start = Date.UTC(2026, 6, 1, 0, 0);
    // More distinct times than the remembered ones, twice over, in two zones.
    for (let round = 0; round < 2; round += 1) {
      for (let i = 0; i < 6000; i += 1) {
        const iso = new Date(start + i * 60_000).toISOString();
        const minute = String(i % 60).padStart(2, '0');
        const hour = Math.floor(i / 60) % 24;
        const day = 1 + Math.floor(i / 1440);
        const expected = (h: number, zone: string) =>
          `2026-07-0${day + (h >= 24 ? 1 : 0)} ${String(h % 24).padStart(2, '0')}:${minute} (${zone})`;
        expect(formatTime(iso, 'UTC', 'en')).toBe(expected(hour, 'UTC'));
        expect(formatTime(iso, 'Asia/Shanghai', 'zh')).toBe(expected(hour + 8, 'GMT+8'));
      }
    }
  });
});

describe('escapeHtml', () => {
  it('escapes the five characters that matter', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe(
      '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;',
    );
  });
});

describe('rendering properties', () => {
  // Markup and line-break characters are rare among all code points: draw them on purpose.
  const char = fc.oneof(
    fc.constantFrom('<', '>', '&', '"', "'", '\r', '\n', '\u2028', '杭', 'a'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  );
  const text = fc.string({ unit: char, maxLength: 40 });
  const nullableText = fc.option(text, { nil: null });
  const arbitraryNotification = fc.record({
    eventType: fc.constantFrom<EventType>('new', 'update', 'cancel', 'expired'),
    lang: fc.constantFrom<'zh' | 'en'>('zh', 'en'),
    name: text,
    tz: fc.constantFrom('Asia/Shanghai', 'UTC', 'America/New_York', 'Not/AZone', ''),
    title: text,
    sender: nullableText,
    body: text,
    instruction: nullableText,
    typeName: nullableText,
    startTime: fc.oneof(
      nullableText,
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    ),
    severity: nullableText,
    color: nullableText,
    level: fc.constantFrom('白色', '蓝色', '黄色', '橙色', '红色', 'unknown' as const),
    supersedes: fc.array(text, { maxLength: 3 }),
    attribution: text,
  });

  type Generated = typeof arbitraryNotification extends fc.Arbitrary<infer T> ? T : never;

  function build(v: Generated, map: (s: string) => string = (s) => s): Notification {
    const m = (s: string | null) => (s === null ? null : map(s));
    return sampleNotification({
      eventType: v.eventType,
      lang: v.lang,
      location: { id: '101210101', name: map(v.name), tz: v.tz },
      warning: sampleWarning({
        title: map(v.title),
        sender: m(v.sender),
        text: map(v.body),
        instruction: m(v.instruction),
        typeName: m(v.typeName),
        startTime: m(v.startTime),
        severity: m(v.severity),
        color: m(v.color),
        level: v.level,
      }),
      supersedes: v.supersedes.map(map),
      attribution: map(v.attribution),
    });
  }

  it('never throws and keeps the subject on one line', () => {
    fc.assert(
      fc.property(arbitraryNotification, (v) => {
        const n = build(v);
        const email = renderEmail(n);
        expect(email.subject).not.toMatch(/[\r\n]/);
        expect(() => JSON.stringify(webhookPayload(n))).not.toThrow();
      }),
    );
  });

  it('never lets a "<" from warning text into the HTML', () => {
    fc.assert(
      fc.property(arbitraryNotification, (v) => {
        // Same structure, every "<" in the inputs replaced: the markup must be identical in count.
        const withInput = renderEmail(build(v)).html;
        const without = renderEmail(build(v, (s) => s.replace(/</g, 'x'))).html;
        const count = (s: string) => s.split('<').length - 1;
        expect(count(withInput)).toBe(count(without));
      }),
    );
  });
});

describe('README, promises: ends say when, late joiners are told why, a warning back says so', () => {
  const seenAt = new Date('2026-07-02T03:30:00Z');

  it('gives a cancel and an end the time qwn saw them, keeping the planned end as the upstream gave it', () => {
    for (const eventType of ['cancel', 'expired'] as const) {
      const n = sampleNotification({ eventType, occurredAt: seenAt });
      const body = webhookPayload(n);
      expect(body.data.endedAt).toBe('2026-07-02T03:30:00Z');
      expect(body.data.warning.endTime).toBe('2026-07-02T16:00+08:00');
    }
    for (const eventType of ['new', 'update', 'resumed'] as const) {
      expect(webhookPayload(sampleNotification({ eventType })).data.endedAt).toBeUndefined();
    }
  });

  it('says in an email when a warning was cancelled or ended, and labels the old end as planned', () => {
    const zh = renderEmail(sampleNotification({ eventType: 'cancel', occurredAt: seenAt })).text;
    expect(zh).toContain('解除时间：2026-07-02 11:30 (GMT+8)');
    expect(zh).toContain('原定结束时间：2026-07-02 16:00 (GMT+8)');
    expect(zh).not.toMatch(/^结束时间/m);
    const en = renderEmail(english({ eventType: 'expired', occurredAt: seenAt })).text;
    expect(en).toContain('Ended at: 2026-07-02 11:30 (GMT+8)');
    expect(en).toContain('Planned end: 2026-07-02 16:00 (GMT+8)');
    expect(en).not.toMatch(/^Ends: /m);
  });

  it('tells a late joiner the warning was in force when they subscribed', () => {
    const n = sampleNotification({ inForceWhenSubscribed: true });
    expect(webhookPayload(n).data.inForceWhenSubscribed).toBe(true);
    expect(webhookPayload(sampleNotification()).data).not.toHaveProperty('inForceWhenSubscribed');
    expect(renderEmail(n).text).toContain('您订阅时此预警已在生效中。');
    expect(renderEmail(english({ inForceWhenSubscribed: true })).html).toContain(
      'This warning was already in force when you subscribed.',
    );
  });

  it('marks a warning back in force in the subject and the body', () => {
    const zh = renderEmail(sampleNotification({ eventType: 'resumed' }));
    expect(zh.subject).toMatch(/^【预警恢复·橙色预警】/);
    expect(zh.text).toContain('此前告知已结束的预警重新发布，仍然有效。');
    const en = renderEmail(english({ eventType: 'resumed' }));
    expect(en.subject).toMatch(/^Back in force: \[Orange warning\] /);
    expect(webhookPayload(sampleNotification({ eventType: 'resumed' })).type).toBe(
      'warning.resumed',
    );
  });
});

describe('README, promises: English from the upstream, else marked as Chinese', () => {
  it('marks a text the issuer gave only in Chinese, in the email and the webhook', () => {
    const n = english({ textInChinese: true });
    expect(renderEmail(n).text).toContain(
      'Original text, in Chinese (the issuer published no English):\n',
    );
    expect(webhookPayload(n).data.warning.textLanguage).toBe('zh');
    expect(webhookPayload(english()).data.warning).not.toHaveProperty('textLanguage');
    expect(renderEmail(english()).text).not.toContain('Original text');
  });
});
