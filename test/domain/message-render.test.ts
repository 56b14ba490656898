import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EmptyMessageError,
  renderEmailMessage,
  renderWebhookMessage,
  type Message,
} from '../../src/domain/message-render.js';
import {
  renderEmail,
  renderSubject,
  webhookPayload,
  type EventType,
  type Notification,
} from '../../src/domain/render.js';
import { LEVELS, type Level } from '../../src/domain/warning.js';
import { sampleNotification, sampleWarning } from '../channels/fixtures.js';

const RUNS = 200;
const UNSUBSCRIBE = 'https://alerts.example.com/unsubscribe/a.b?x=1&y="2"';

function note(
  id: string,
  eventType: EventType,
  minute: number,
  options: { level?: Level; supersedes?: string[]; lang?: 'zh' | 'en'; title?: string } = {},
): Notification {
  const level = options.level ?? '橙色';
  return sampleNotification({
    deliveryId: `delivery-${id}-${eventType}`,
    eventType,
    occurredAt: new Date(Date.UTC(2026, 6, 1, 8, minute)),
    lang: options.lang ?? 'zh',
    location:
      options.lang === 'en'
        ? { id: '101210101', name: 'Hangzhou', tz: 'Asia/Shanghai' }
        : { id: '101210101', name: '杭州', tz: 'Asia/Shanghai' },
    warning: sampleWarning({
      id,
      title: options.title ?? `${level}预警 ${id}`,
      level,
      color: null,
      related: options.supersedes ?? [],
      status: eventType === 'cancel' ? 'cancel' : eventType === 'update' ? 'update' : 'active',
    }),
    supersedes: options.supersedes ?? [],
  });
}

const message = (notifications: Notification[], overrides: Partial<Message> = {}): Message => ({
  id: '5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f',
  hold: 'cycle',
  notifications,
  ...overrides,
});

describe('renderWebhookMessage', () => {
  it('sends one notification exactly as today (docs/messages.md)', () => {
    const n = sampleNotification();
    expect(renderWebhookMessage(message([n]))).toEqual(webhookPayload(n));
    expect(JSON.stringify(renderWebhookMessage(message([n])))).toBe(
      JSON.stringify(webhookPayload(n)),
    );
  });

  it('batches several, oldest first, each as §4 data with its type', () => {
    const red = note('R', 'new', 7, { level: '红色' });
    const update = note('B', 'update', 3, { supersedes: ['A'] });
    const body = renderWebhookMessage(message([red, update]));
    expect(body).toEqual({
      type: 'warning.batch',
      timestamp: '2026-07-01T08:07:00Z',
      data: {
        notifications: [
          { type: 'warning.update', ...webhookPayload(update).data },
          { type: 'warning.new', ...webhookPayload(red).data },
        ],
      },
    });
    expect(
      Object.keys((body as { data: { notifications: object[] } }).data.notifications[0]!),
    ).toEqual(['type', 'location', 'warning', 'supersedes']);
  });

  it('keeps v1 fields and attributions in each element', () => {
    const v1 = sampleNotification({
      warning: sampleWarning({ source: 'v1', instruction: 'Stay indoors.' }),
      attributions: ['Data: CMA'],
    });
    const body = renderWebhookMessage(message([v1, note('X', 'new', 9)]));
    expect(body.type).toBe('warning.batch');
    expect(JSON.stringify(body)).toContain('"attributions":["Data: CMA"]');
    expect(JSON.stringify(body)).toContain('"instruction":"Stay indoors."');
  });

  it('refuses a message with no notification', () => {
    expect(() => renderWebhookMessage(message([]))).toThrow(EmptyMessageError);
    expect(() => renderEmailMessage(message([]))).toThrow(EmptyMessageError);
  });
});

describe('renderEmailMessage: one notification', () => {
  it('is exactly today’s email without an unsubscribe URL', () => {
    for (const lang of ['zh', 'en'] as const) {
      const n = sampleNotification({ lang });
      expect(renderEmailMessage(message([n], { hold: 'quiet' }))).toEqual(renderEmail(n));
    }
  });

  it('adds a visible, escaped unsubscribe link to both parts', () => {
    const n = sampleNotification();
    const plain = renderEmail(n);
    const email = renderEmailMessage(message([n]), { unsubscribeUrl: UNSUBSCRIBE });
    expect(email.subject).toBe(plain.subject);
    expect(email.text).toBe(`${plain.text}退订：${UNSUBSCRIBE}\n`);
    expect(email.html).toContain(
      '<a href="https://alerts.example.com/unsubscribe/a.b?x=1&amp;y=&quot;2&quot;">退订</a>',
    );
    expect(email.html.endsWith('</body></html>\n')).toBe(true);
    const en = renderEmailMessage(message([sampleNotification({ lang: 'en' })]), {
      unsubscribeUrl: UNSUBSCRIBE,
    });
    expect(en.text).toContain(`Unsubscribe: ${UNSUBSCRIBE}\n`);
    expect(en.html).toContain('>Unsubscribe</a>');
  });
});

describe('renderEmailMessage: several notifications', () => {
  const three = (lang: 'zh' | 'en') => [
    note('O', 'new', 1, { lang }),
    note('R', 'new', 2, { level: '红色', lang, title: 'Red rainstorm' }),
    note('Y', 'new', 3, { level: '黄色', lang }),
  ];

  it('names the count and the highest level in the subject (zh)', () => {
    const email = renderEmailMessage(message(three('zh')));
    expect(email.subject).toBe('【红色预警】3 条预警：Red rainstorm（杭州）等');
  });

  it('names the count and the highest level in the subject (en)', () => {
    const email = renderEmailMessage(message(three('en')));
    expect(email.subject).toBe('[Red warning] 3 warnings: Red rainstorm (Hangzhou) and 2 more');
  });

  it('lays out one section per chain, highest level first, in text and HTML', () => {
    const email = renderEmailMessage(message(three('zh')));
    const order = (s: string) => ['R', 'O', 'Y'].map((id) => s.indexOf(`预警编号：${id}`));
    const positions = order(email.text);
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(email.text).toContain('== 1. 新预警：Red rainstorm ==');
    const html = ['Red rainstorm', '橙色预警 O', '黄色预警 Y'].map((t) => email.html.indexOf(t));
    expect(html.every((p) => p > 0)).toBe(true);
    expect([...html].sort((a, b) => a - b)).toEqual(html);
    expect(email.text).toContain(`消息编号：${message([]).id}`);
  });

  it('shows a chain once in its latest state and says what changed', () => {
    const email = renderEmailMessage(
      message([
        note('A', 'new', 0, { level: '黄色' }),
        note('B', 'update', 5, { supersedes: ['A'] }),
        note('W', 'new', 1, { level: '蓝色' }),
        note('W', 'expired', 6, { level: '蓝色' }),
      ]),
    );
    expect(email.subject).toBe('【橙色预警】2 条预警：橙色预警 B（杭州）等');
    expect(email.text.match(/^== /gm)).toHaveLength(2);
    expect(email.text).toContain(
      '== 1. 预警更新：橙色预警 B ==\n此预警已由发布单位更新，内容如下。',
    );
    expect(email.text).toContain(
      '== 2. 预警已结束：蓝色预警 W ==\n此预警发布后已到结束时间或不再发布。',
    );
    expect(email.text).toContain('经过：\n- 2026-07-01 16:00 (GMT+8) 新预警，黄色（A）\n');
    expect(email.text).toContain('- 2026-07-01 16:05 (GMT+8) 预警更新，橙色（B）\n');
  });

  it('subjects one collapsed chain like a single email of its latest state', () => {
    const newAndCancel = [note('A', 'new', 0), note('C', 'cancel', 5, { supersedes: ['A'] })];
    const email = renderEmailMessage(message(newAndCancel));
    expect(email.subject).toBe(renderSubject({ ...newAndCancel[1]!, eventType: 'expired' }));
    expect(email.subject).toBe('【已结束】橙色预警 C（杭州）');
    expect(email.text).toContain('此预警发布后已由发布单位解除。');
  });

  it('does not tag a batch of finished warnings with an alarming level', () => {
    const over = [
      note('R', 'expired', 1, { level: '红色', lang: 'en' }),
      note('C', 'cancel', 2, { supersedes: ['X'], lang: 'en' }),
    ];
    expect(renderEmailMessage(message(over)).subject).toBe(
      'Cancelled or ended: 2 warnings: 红色预警 R (Hangzhou) and 1 more',
    );
    const zh = [note('R', 'expired', 1, { level: '红色' }), note('O', 'expired', 2)];
    expect(renderEmailMessage(message(zh)).subject).toBe(
      '【已结束】2 条预警：红色预警 R（杭州）等',
    );
  });

  it('says "cancelled" in the subject when every section is headed so', () => {
    const cancelled = [
      note('R', 'cancel', 1, { level: '红色', supersedes: ['X'], lang: 'en' }),
      note('C', 'cancel', 2, { supersedes: ['Y'], lang: 'en' }),
    ];
    const email = renderEmailMessage(message(cancelled));
    expect(email.subject).toBe('Cancelled: 2 warnings: 红色预警 R (Hangzhou) and 1 more');
    expect(email.text.match(/^== \d\. Warning cancelled: /gm)).toHaveLength(2);
    const zh = [
      note('R', 'cancel', 1, { level: '红色', supersedes: ['X'] }),
      note('C', 'cancel', 2, { supersedes: ['Y'] }),
    ];
    expect(renderEmailMessage(message(zh)).subject).toBe(
      '【已解除】2 条预警：红色预警 R（杭州）等',
    );
  });

  it('opens a quiet-hours message with "while you were away", naming the window', () => {
    const zh = renderEmailMessage(
      message(three('zh'), { hold: 'quiet', quietHours: { from: '22:00', to: '07:00' } }),
    );
    expect(zh.text.startsWith('免打扰时段（22:00–07:00）内的预警\n')).toBe(true);
    expect(zh.html).toContain('<h1>免打扰时段（22:00–07:00）内的预警</h1>');
    const en = renderEmailMessage(
      message(three('en'), { hold: 'quiet', quietHours: { from: '23:30', to: '06:00' } }),
    );
    expect(en.text.startsWith('While you were away (quiet hours 23:30–06:00)\n')).toBe(true);
    expect(en.html).toContain('<h1>While you were away (quiet hours 23:30–06:00)</h1>');
    const batch = renderEmailMessage(message(three('en')));
    expect(batch.text.startsWith('3 warnings\n')).toBe(true);
    expect(batch.text).not.toContain('While you were away');
  });

  it('adds the unsubscribe link to both parts and escapes upstream markup', () => {
    const evil = note('E', 'new', 4, { title: '<script>alert(1)</script>' });
    const email = renderEmailMessage(message([...three('zh'), evil]), {
      unsubscribeUrl: UNSUBSCRIBE,
    });
    expect(email.text).toContain(`退订：${UNSUBSCRIBE}\n`);
    expect(email.html).toContain('&amp;y=&quot;2&quot;">退订</a>');
    expect(email.html).not.toContain('<script>');
    expect(email.html).toContain('&lt;script&gt;');
    expect(email.subject).not.toMatch(/[\r\n]/);
  });
});

describe('message rendering properties', () => {
  const IDS = ['A', 'B', 'C', 'D', 'E', 'F'];
  const notificationArb = fc
    .record({
      id: fc.constantFrom(...IDS),
      eventType: fc.constantFrom<EventType>('new', 'update', 'cancel', 'expired'),
      minute: fc.integer({ min: 0, max: 59 }),
      level: fc.constantFrom<Level>(...LEVELS, 'unknown'),
      supersedes: fc.uniqueArray(fc.constantFrom(...IDS), { maxLength: 2 }),
    })
    .map((r) => ({ ...r, supersedes: r.supersedes.filter((s) => s !== r.id) }));
  const messageArb = fc
    .record({
      lang: fc.constantFrom<'zh' | 'en'>('zh', 'en'),
      hold: fc.constantFrom<Message['hold']>(null, 'cycle', 'window', 'quiet', 'throttle'),
      notes: fc.uniqueArray(notificationArb, {
        minLength: 1,
        maxLength: 8,
        selector: (n) => `${n.id}:${n.eventType}`,
      }),
      unsubscribe: fc.boolean(),
    })
    .map(({ lang, hold, notes, unsubscribe }) => ({
      unsubscribe,
      message: message(
        notes.map((n) =>
          note(n.id, n.eventType, n.minute, { level: n.level, supersedes: n.supersedes, lang }),
        ),
        { hold, quietHours: { from: '22:00', to: '07:00' } },
      ),
    }));

  it('shows every notification’s warning id and delivery id in the email and the webhook', () => {
    fc.assert(
      fc.property(messageArb, ({ message: m, unsubscribe }) => {
        const email = renderEmailMessage(m, unsubscribe ? { unsubscribeUrl: UNSUBSCRIBE } : {});
        const body = JSON.stringify(renderWebhookMessage(m));
        for (const n of m.notifications) {
          expect(email.text).toContain(n.warning.id);
          expect(email.html).toContain(n.warning.id);
          expect(email.text).toContain(n.deliveryId);
          expect(body).toContain(`"id":"${n.warning.id}"`);
        }
        if (m.notifications.length > 1) {
          const items = (renderWebhookMessage(m) as { data: { notifications: unknown[] } }).data
            .notifications;
          expect(items).toHaveLength(m.notifications.length);
        }
        expect(email.subject).not.toMatch(/[\r\n]/);
        if (unsubscribe) {
          expect(email.text).toContain(UNSUBSCRIBE);
          expect(email.html).toContain('unsubscribe/a.b?x=1&amp;y=&quot;2&quot;');
        }
      }),
      { numRuns: RUNS },
    );
  });
});
