import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Notification } from '../../src/domain/render.js';
import {
  ROBOT_LIMITS,
  ROBOT_VENDORS,
  renderDingtalk,
  renderFeishu,
  planRobotPost,
  renderRobotBody,
  splitRobotMessage,
  renderWecom,
  robotChains,
  type FeishuBody,
  type RobotBody,
  type RobotVendor,
} from '../../src/domain/robot-render.js';
import { LEVELS, type Level } from '../../src/domain/warning.js';
import { sampleNotification, sampleWarning } from '../channels/fixtures.js';

const MESSAGE_ID = '5d1c7a62-0a4e-4f0b-9a55-3f1e0c2b7d10';

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

/** The markdown a reader sees, whatever the vendor wraps it in. */
function markdownOf(body: RobotBody): string {
  if ('msg_type' in body) {
    return body.card.elements
      .map((e) =>
        e.tag === 'markdown'
          ? e.content
          : e.tag === 'note'
            ? e.elements.map((x) => x.content).join('\n')
            : '---',
      )
      .join('\n');
  }
  return 'title' in body.markdown ? body.markdown.text : body.markdown.content;
}

/** Every string in a body: JSON.stringify would hide a lone surrogate behind a \\u escape. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object') return [];
  return Object.values(value).flatMap(stringsOf);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function wellFormed(body: RobotBody): boolean {
  return stringsOf(body).every((s) => !LONE_SURROGATE.test(s));
}

/** What the vendor counts against its limit (notes/chat-robots.md). */
function measured(vendor: RobotVendor, body: RobotBody): number {
  if (vendor === 'feishu') return Buffer.byteLength(JSON.stringify(body));
  return Buffer.byteLength(markdownOf(body));
}

const LIMIT: Record<RobotVendor, number> = {
  wecom: 4096,
  dingtalk: ROBOT_LIMITS.dingtalkTextBytes,
  // 20 KB for the whole request, the signing fields included.
  feishu: 20 * 1024 - 100,
};

function warningNumber(i: number, level: Level, overrides: Partial<Notification> = {}) {
  return sampleNotification({
    deliveryId: `d-${i}`,
    warning: sampleWarning({
      id: `W${String(i).padStart(3, '0')}`,
      level,
      title: `测试预警${i}号`,
      text: `第${i}条预警正文：${'预计未来有强降水，请注意防范。'.repeat(8)}`,
    }),
    ...overrides,
  });
}

describe('robot bodies: one warning', () => {
  it('WeCom: markdown with the facts of an email, level in a WeCom colour (zh)', () => {
    const body = renderWecom([sampleNotification()], MESSAGE_ID);
    expect(body.msgtype).toBe('markdown');
    const content = body.markdown.content;
    expect(content).toContain('<font color="warning">【橙色预警】</font>');
    for (const fact of [
      '地点：杭州',
      '类型：暴雨',
      '级别：橙色（严重）',
      '发布：杭州市气象台，2026-07-01 16:00 (GMT+8)',
      '起止：2026-07-01 16:00 (GMT+8) 至 2026-07-02 16:00 (GMT+8)',
      sampleWarning().text,
      'Weather data: QWeather',
      `消息编号：${MESSAGE_ID}`,
    ]) {
      expect(content).toContain(fact);
    }
    expect(content).not.toContain('已截断');
  });

  it('WeCom: English labels for English subscribers', () => {
    const content = renderWecom([english()], MESSAGE_ID).markdown.content;
    expect(content).toContain('<font color="warning">[Orange warning]</font>');
    expect(content).toContain('Place: Hangzhou · Type: Rainstorm · Level: Orange (Severe)');
    expect(content).toContain(
      'Issued: Hangzhou Meteorological Observatory, 2026-07-01 16:00 (GMT+8)',
    );
    expect(content).toContain('In force: 2026-07-01 16:00 (GMT+8) to 2026-07-02 16:00 (GMT+8)');
    expect(content).toContain('Rainfall over 50 mm is expected within 3 hours.');
    expect(content).toContain(`Message id: ${MESSAGE_ID}`);
  });

  it('WeCom: only its three colours — warning for yellow and up, comment below, info when ended', () => {
    const colourOf = (n: Notification) =>
      /<font color="(\w+)">/.exec(renderWecom([n], MESSAGE_ID).markdown.content)?.[1];
    expect(colourOf(sampleNotification({ warning: sampleWarning({ level: '红色' }) }))).toBe(
      'warning',
    );
    expect(colourOf(sampleNotification({ warning: sampleWarning({ level: '黄色' }) }))).toBe(
      'warning',
    );
    expect(colourOf(sampleNotification({ warning: sampleWarning({ level: '蓝色' }) }))).toBe(
      'comment',
    );
    expect(colourOf(sampleNotification({ eventType: 'cancel' }))).toBe('info');
    expect(colourOf(sampleNotification({ eventType: 'expired' }))).toBe('info');
  });

  it('DingTalk: markdown with a title for the phone, msgUuid = message id (zh and en)', () => {
    const zh = renderDingtalk([sampleNotification()], MESSAGE_ID);
    expect(zh.msgtype).toBe('markdown');
    expect(zh.msgUuid).toBe(MESSAGE_ID);
    expect(zh.at).toEqual({ atMobiles: [], atUserIds: [], isAtAll: false });
    expect(zh.markdown.title).toBe('【橙色预警】杭州市气象台发布暴雨橙色预警[II级/严重]（杭州）');
    expect(zh.markdown.text).toContain('- 地点：杭州　类型：暴雨　级别：橙色（严重）');
    expect(zh.markdown.text).toContain(sampleWarning().text);
    expect(zh.markdown.text).toContain('Weather data: QWeather');

    const en = renderDingtalk([english({ eventType: 'cancel' })], MESSAGE_ID);
    expect(en.markdown.title).toMatch(/^\[Cancelled\] Hangzhou Meteorological Observatory/);
    expect(en.markdown.text).toContain('- Place: Hangzhou · Type: Rainstorm · Level: Orange');
    expect(en.markdown.text).toContain(`Message id: ${MESSAGE_ID}`);
  });

  it('DingTalk: keeps the upstream paragraphs apart (its markdown joins single line breaks)', () => {
    const n = sampleNotification({ warning: sampleWarning({ text: '第一段。\n第二段。' }) });
    expect(renderDingtalk([n], MESSAGE_ID).markdown.text).toContain('第一段。\n\n第二段。');
  });

  it('Feishu: an interactive card whose header colour follows the level', () => {
    const template = (n: Notification) => renderFeishu([n], MESSAGE_ID).card.header.template;
    const expected: Record<Level, string> = {
      红色: 'red',
      橙色: 'orange',
      黄色: 'yellow',
      蓝色: 'blue',
      白色: 'grey',
      unknown: 'grey',
    };
    for (const level of [...LEVELS, 'unknown'] as const) {
      expect(template(sampleNotification({ warning: sampleWarning({ level, color: null }) }))).toBe(
        expected[level],
      );
    }
    expect(template(sampleNotification({ eventType: 'expired' }))).toBe('green');

    const body = renderFeishu([english()], MESSAGE_ID);
    expect(body.msg_type).toBe('interactive');
    expect(body.card.header.title).toEqual({
      tag: 'plain_text',
      content:
        '[Orange warning] Hangzhou Meteorological Observatory issued an orange rainstorm warning (Hangzhou)',
    });
    const text = markdownOf(body);
    expect(text).toContain("<font color='orange'>[Orange warning]</font>");
    expect(text).toContain('Rainfall over 50 mm is expected within 3 hours.');
    expect(text).toContain('Weather data: QWeather');
  });

  it('shows the v1 attributions and instruction, like the email', () => {
    const n = sampleNotification({
      warning: sampleWarning({ source: 'v1', instruction: '减少外出。' }),
      attributions: ['中国气象局'],
    });
    for (const vendor of ROBOT_VENDORS) {
      const text = markdownOf(renderRobotBody(vendor, [n], MESSAGE_ID));
      expect(text).toContain('防御指南：减少外出。');
      expect(text).toContain('中国气象局');
    }
  });

  it('cannot be steered by markup in upstream text', () => {
    const n = sampleNotification({
      warning: sampleWarning({
        title: '**假标题** <font color="info">绿色</font>',
        text: '# 标题\n[点我](https://evil.example/x) <font color="info">假</font> *斜* ~删~ `代码`',
      }),
    });
    for (const vendor of ROBOT_VENDORS) {
      const text = markdownOf(renderRobotBody(vendor, [n], MESSAGE_ID));
      expect(text, vendor).not.toContain('<font color="info">');
      expect(text, vendor).not.toContain('](https://evil');
      expect(text, vendor).not.toContain('**假标题**');
      expect(text, vendor).not.toMatch(/^# /m);
      expect(text, vendor).toContain('https://evil.example/x');
    }
  });

  it('refuses an empty message', () => {
    expect(() => renderWecom([], MESSAGE_ID)).toThrow(RangeError);
  });
});

describe('robot bodies: shortening', () => {
  // CJK and astral characters (emoji, a flag of two code points, a family joined by ZWJ): a cut
  // that splits any of them leaves a lone surrogate or a broken grapheme.
  const longText = '暴雨👨‍👩‍👧🇨🇳𠮷'.repeat(1100).slice(0, 10_000);

  for (const lang of ['zh', 'en'] as const) {
    for (const vendor of ROBOT_VENDORS) {
      it(`${vendor} (${lang}): a 10,000-character warning fits, is cut cleanly and says so`, () => {
        const n =
          lang === 'zh'
            ? sampleNotification({ warning: sampleWarning({ text: longText }) })
            : english({ warning: sampleWarning({ text: longText, typeName: 'Rainstorm' }) });
        const body = renderRobotBody(vendor, [n], MESSAGE_ID);
        expect(measured(vendor, body)).toBeLessThanOrEqual(LIMIT[vendor]);
        const text = markdownOf(body);
        expect(text).toContain(lang === 'zh' ? '正文过长，已截断' : 'text too long, shortened');
        expect(wellFormed(body)).toBe(true);
        // The text kept is a prefix of the original made of whole graphemes, and not a stingy one.
        const kept = /(暴雨[^\n…]*)…/.exec(text)?.[1] ?? '';
        expect(longText.startsWith(kept)).toBe(true);
        expect(kept.length).toBeGreaterThan(200);
        expect(
          kept.endsWith('暴雨') || kept.endsWith('🇨🇳') || kept.endsWith('𠮷') || /👧$/.test(kept),
        ).toBe(true);
        // The facts survive the cut.
        expect(text).toContain(lang === 'zh' ? '地点：杭州' : 'Place: Hangzhou');
        expect(text).toContain(MESSAGE_ID);
      });
    }
  }

  it('never cuts a link in half: the cut moves before it', () => {
    const url = 'https://www.example.org/warnings/2026/07/01/very-long-path-to-the-full-text';
    const render = (vendor: RobotVendor, text: string) =>
      markdownOf(
        renderRobotBody(
          vendor,
          [sampleNotification({ warning: sampleWarning({ text }) })],
          MESSAGE_ID,
        ),
      );
    for (const vendor of ROBOT_VENDORS) {
      // Where the cut lands in a text without links (the URL is ASCII: one byte a character, so
      // it moves the cut a little; placing it over a span around the cut covers that).
      const kept = [...render(vendor, '雨'.repeat(20_000)).matchAll(/雨/g)].length;
      let cutInside = 0;
      for (let before = kept - url.length - 20; before <= kept + 20; before += 3) {
        const rendered = render(vendor, `${'雨'.repeat(before)} ${url} ${'风'.repeat(20_000)}`);
        const partial = /https:\/\/www\.example\.org[^\s…]*/.exec(rendered)?.[0];
        if (partial !== undefined) expect(partial, `${vendor} at ${before}`).toBe(url);
        else cutInside += 1;
      }
      // The sweep did put the cut inside the link (the link was left out whole), more than once.
      expect(cutInside, vendor).toBeGreaterThan(3);
    }
  });

  for (const vendor of ROBOT_VENDORS) {
    for (const lang of ['zh', 'en'] as const) {
      it(`${vendor} (${lang}): 50 warnings in one message fit, highest level first, and say what is left out`, () => {
        const levels: Level[] = ['蓝色', '黄色', '橙色', '红色', '白色'];
        const ns = Array.from({ length: 50 }, (_, i) =>
          warningNumber(i, levels[i % levels.length]!, { lang }),
        );
        const body = renderRobotBody(vendor, ns, MESSAGE_ID);
        expect(measured(vendor, body)).toBeLessThanOrEqual(LIMIT[vendor]);
        const text = markdownOf(body);
        const shown = [...text.matchAll(/测试预警(\d+)号/g)].map((m) => Number(m[1]));
        expect(shown.length).toBeGreaterThan(0);
        expect(new Set(shown).size).toBe(shown.length);
        // Red (i % 5 === 3) first, then orange, yellow, blue, white.
        const rank = (i: number) => [1, 2, 3, 4, 0][i % 5]!;
        for (let k = 1; k < shown.length; k += 1) {
          expect(rank(shown[k - 1]!)).toBeGreaterThanOrEqual(rank(shown[k]!));
        }
        // The deliver job sends those left out in a message of their own.
        const { now, later } = splitRobotMessage(vendor, ns, MESSAGE_ID);
        expect(now).toHaveLength(shown.length);
        expect(later).toHaveLength(50 - shown.length);
        if (shown.length < 50) {
          const left = 50 - shown.length;
          expect(text).toContain(
            lang === 'zh'
              ? `另有 ${left} 条预警未列出`
              : `${left} more warning${left === 1 ? '' : 's'} not listed`,
          );
        }
        if (vendor === 'dingtalk') {
          expect((body as { markdown: { title: string } }).markdown.title).toBe(
            lang === 'zh'
              ? '【红色预警】50 条预警：暴雨（杭州）等'
              : '[Red warning] 50 warnings: 暴雨 (杭州) and more',
          );
        }
      });
    }
  }

  it('grouped warnings keep at least 80 characters of text each rather than lose it all', () => {
    const ns = Array.from({ length: 50 }, (_, i) => warningNumber(i, '橙色'));
    const content = renderWecom(ns, MESSAGE_ID).markdown.content;
    const texts = [...content.matchAll(/第\d+条预警正文：[^\n]*/g)].map((m) => m[0]);
    for (const t of texts) expect([...t].length).toBeGreaterThanOrEqual(80);
  });
});

describe('robot bodies: chains', () => {
  const issued = sampleNotification({ deliveryId: 'd-new' });
  const updated = sampleNotification({
    deliveryId: 'd-update',
    eventType: 'update',
    occurredAt: new Date('2026-07-01T09:00:00Z'),
    warning: sampleWarning({
      id: 'W-UPDATE',
      level: '红色',
      status: 'update',
      title: '杭州市气象台升级暴雨红色预警',
      related: [issued.warning.id],
    }),
    supersedes: [issued.warning.id],
  });
  const cancelled = sampleNotification({
    deliveryId: 'd-cancel',
    eventType: 'cancel',
    occurredAt: new Date('2026-07-01T10:00:00Z'),
    warning: sampleWarning({
      id: 'W-CANCEL',
      level: '红色',
      status: 'cancel',
      title: '杭州市气象台解除暴雨红色预警',
      text: '暴雨红色预警解除。',
      related: ['W-UPDATE'],
    }),
    supersedes: ['W-UPDATE'],
  });
  const other = sampleNotification({
    deliveryId: 'd-other',
    warning: sampleWarning({
      id: 'W-WIND',
      level: '蓝色',
      typeName: '大风',
      title: '大风蓝色预警',
    }),
  });

  it('links a warning with its update and cancel, in any input order, latest last', () => {
    const chains = robotChains([cancelled, other, issued, updated]);
    expect(chains.map((c) => c.steps.map((s) => s.deliveryId))).toEqual([
      ['d-new', 'd-update', 'd-cancel'],
      ['d-other'],
    ]);
  });

  it('shows the chain once, in its latest state, saying what changed', () => {
    for (const vendor of ROBOT_VENDORS) {
      const text = markdownOf(
        renderRobotBody(vendor, [updated, other, cancelled, issued], MESSAGE_ID),
      );
      expect(text).toContain('杭州市气象台解除暴雨红色预警');
      expect(text).not.toContain('杭州市气象台升级暴雨红色预警');
      expect(text).not.toContain('杭州市气象台发布暴雨橙色预警');
      expect(text).toContain(
        '变化：新预警 → 预警更新 → 预警解除；级别 橙色（严重） → 红色（严重）',
      );
      expect(text).toContain('暴雨红色预警解除。');
      expect(text).toContain('大风蓝色预警');
    }
  });

  it('a warning and its expiry (same id) are one chain, shown as ended', () => {
    const expired = sampleNotification({
      deliveryId: 'd-expired',
      eventType: 'expired',
      occurredAt: new Date('2026-07-02T09:00:00Z'),
    });
    const body = renderDingtalk([expired, issued], MESSAGE_ID);
    expect(body.markdown.title).toMatch(/^【已结束】/);
    expect(body.markdown.text).toContain('变化：新预警 → 预警已结束');
  });

  it('a message whose chains all ended says so in its headline', () => {
    const ended = sampleNotification({ ...other, eventType: 'expired', deliveryId: 'd-other-end' });
    const body: FeishuBody = renderFeishu([cancelled, ended], MESSAGE_ID);
    expect(body.card.header.template).toBe('green');
    expect(body.card.header.title.content).toMatch(/^【解除】2 条预警已解除或结束/);
  });
});

describe('robot bodies: properties', () => {
  const levelArb = fc.constantFrom<Level>(...LEVELS, 'unknown');
  const textArb = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc
      .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }), fc.nat({ max: 1500 }))
      .map(([s, n]) => s.repeat(n)),
  );
  const notificationArb = fc.record({
    level: levelArb,
    eventType: fc.constantFrom('new', 'update', 'cancel', 'expired'),
    text: textArb,
    title: fc.string({ unit: 'grapheme', maxLength: 400 }),
    place: fc.string({ unit: 'grapheme', maxLength: 200 }),
    sender: fc.option(fc.string({ unit: 'grapheme', maxLength: 300 }), { nil: null }),
    typeName: fc.option(fc.string({ unit: 'grapheme', maxLength: 300 }), { nil: null }),
    attributions: fc.array(fc.string({ unit: 'grapheme', maxLength: 300 }), { maxLength: 6 }),
    lang: fc.constantFrom<'zh' | 'en'>('zh', 'en'),
  });
  const messageArb = fc.array(notificationArb, { minLength: 1, maxLength: 40 }).map((rs) => {
    const lang = rs[0]!.lang;
    return rs.map((r, i) =>
      sampleNotification({
        deliveryId: `d${i}`,
        eventType: r.eventType,
        lang,
        location: {
          id: `1012101${String(i).padStart(2, '0')}`,
          name: r.place,
          tz: 'Asia/Shanghai',
        },
        warning: sampleWarning({
          id: `P${i}`,
          level: r.level,
          title: r.title,
          text: r.text,
          sender: r.sender,
          typeName: r.typeName,
        }),
        attributions: r.attributions,
      }),
    );
  });

  const fitsItsLimit = () =>
    fc.property(messageArb, fc.constantFrom(...ROBOT_VENDORS), (ns, vendor) => {
      const body = renderRobotBody(vendor, ns, MESSAGE_ID);
      expect(measured(vendor, body)).toBeLessThanOrEqual(LIMIT[vendor]);
      expect(wellFormed(body)).toBe(true);
      const text = markdownOf(body);
      const omitted = /(?:另有 (\d+) 条预警未列出|(\d+) more warnings? not listed)/.exec(text);
      const left = omitted ? Number(omitted[1] ?? omitted[2]) : 0;
      expect(left).toBeLessThan(ns.length);
      expect(text).toContain(MESSAGE_ID);
    });

  it('every body fits its vendor limit, is well-formed UTF-16, and accounts for every warning', () => {
    fc.assert(fitsItsLimit(), { numRuns: 100 });
  }, 120_000);

  it('fits a WeCom post whose short texts, cut to nothing, would each gain a "truncated" note', () => {
    // The run that found it: twelve chains fitted with short texts, then every text was cut to
    // 0 characters, each with its note, and the post came to 4,271 bytes of 4,096.
    fc.assert(fitsItsLimit(), { seed: 345215220, numRuns: 40 });
  }, 120_000);

  it('splits a message into what one post carries whole and the rest, whole chains each', () => {
    fc.assert(
      fc.property(messageArb, fc.constantFrom(...ROBOT_VENDORS), (ns, vendor) => {
        const { now, later } = splitRobotMessage(vendor, ns, MESSAGE_ID);
        // Nothing lost, nothing twice, something sent now.
        expect(now.length).toBeGreaterThan(0);
        expect([...now, ...later].sort(byDelivery)).toEqual([...ns].sort(byDelivery));
        // What goes now fits whole: every chain shown, no "not listed" line.
        const post = planRobotPost(vendor, now, MESSAGE_ID);
        expect(post.shown).toBe(post.chains.length);
        expect(measured(vendor, post.body)).toBeLessThanOrEqual(LIMIT[vendor]);
        expect(markdownOf(post.body)).not.toMatch(/未列出|not listed/);
        // No chain is cut between the two.
        const chainOf = (n: Notification) =>
          planRobotPost(vendor, ns, MESSAGE_ID).chains.findIndex((c) => c.steps.includes(n));
        const nowChains = new Set(now.map(chainOf));
        for (const n of later) expect(nowChains.has(chainOf(n))).toBe(false);
        if (later.length === 0) {
          const whole = planRobotPost(vendor, ns, MESSAGE_ID);
          expect(whole.shown).toBe(whole.chains.length);
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});

describe('robot chains: bad links', () => {
  it('a supersedes cycle in upstream data still gives one chain, the same whatever the input order', () => {
    const a = sampleNotification({
      deliveryId: 'a',
      warning: sampleWarning({ id: 'A', related: ['B'] }),
      supersedes: ['B'],
    });
    const b = sampleNotification({
      deliveryId: 'b',
      eventType: 'update',
      warning: sampleWarning({ id: 'B', related: ['A'] }),
      supersedes: ['A'],
    });
    const order = (ns: Notification[]) =>
      robotChains(ns).map((c) => c.steps.map((s) => s.deliveryId));
    expect(order([a, b])).toEqual(order([b, a]));
    expect(order([a, b])).toHaveLength(1);
  });
});

function byDelivery(a: Notification, b: Notification): number {
  return a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0;
}

describe('robot bodies: README, promises', () => {
  it('says when a warning was cancelled or ended, the old times labelled as planned', () => {
    const seenAt = new Date('2026-07-02T03:30:00Z');
    const zh = markdownOf(
      renderWecom([sampleNotification({ eventType: 'cancel', occurredAt: seenAt })], MESSAGE_ID),
    );
    expect(zh).toContain('解除时间：2026-07-02 11:30 (GMT+8)');
    expect(zh).toContain('原定起止：2026-07-01 16:00 (GMT+8) 至 2026-07-02 16:00 (GMT+8)');
    expect(zh).not.toMatch(/(^|[^定])起止：/m);
    const en = markdownOf(
      renderWecom([english({ eventType: 'expired', occurredAt: seenAt })], MESSAGE_ID),
    );
    expect(en).toContain('Ended at: 2026-07-02 11:30 (GMT+8)');
    expect(en).toContain('Planned: 2026-07-01 16:00 (GMT+8) to 2026-07-02 16:00 (GMT+8)');
  });

  it('tells a late joiner the warning was in force, and marks one back in force', () => {
    const late = markdownOf(
      renderWecom([sampleNotification({ inForceWhenSubscribed: true })], MESSAGE_ID),
    );
    expect(late).toContain('您订阅时此预警已在生效中。');
    const back = markdownOf(
      renderWecom([sampleNotification({ eventType: 'resumed' })], MESSAGE_ID),
    );
    expect(back).toContain('【预警恢复·橙色预警】');
  });
});
