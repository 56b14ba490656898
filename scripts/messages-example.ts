/**
 * Prints one example of each kind of message a subscriber receives (the README's "What subscribers receive" is made from
 * this output): `npx tsx scripts/messages-example.ts`. Everything is rendered by the real
 * renderers from fixed sample notifications, and the schedule comes from the real scheduler.
 */
import {
  renderEmailMessage,
  renderWebhookMessage,
  type Message,
} from '../src/domain/message-render.js';
import type { Notification } from '../src/domain/render.js';
import { simulate } from '../src/domain/schedule-simulation.js';
import type { Warning } from '../src/domain/warning.js';

const warning = (id: string, fields: Partial<Warning>): Warning => ({
  id,
  source: 'v7',
  title: '杭州市气象台发布暴雨黄色预警[III级/较重]',
  sender: '杭州市气象台',
  pubTime: '2026-07-01T02:10+08:00',
  startTime: '2026-07-01T02:10+08:00',
  endTime: '2026-07-01T14:10+08:00',
  status: 'active',
  level: '黄色',
  severity: 'moderate',
  color: 'yellow',
  typeCode: '1003',
  typeName: '暴雨',
  text: '杭州市气象台2026年07月01日02时10分发布暴雨黄色预警：预计未来6小时内累计降水量将达50毫米以上。',
  related: [],
  instruction: null,
  raw: {},
  ...fields,
});

const notification = (
  deliveryId: string,
  eventType: Notification['eventType'],
  occurredAt: string,
  w: Warning,
  lang: Notification['lang'] = 'zh',
): Notification => ({
  deliveryId,
  eventType,
  occurredAt: new Date(occurredAt),
  location: { id: '101210101', name: lang === 'zh' ? '杭州' : 'Hangzhou', tz: 'Asia/Shanghai' },
  warning: w,
  supersedes: w.related,
  attribution: lang === 'zh' ? '天气数据：和风天气' : 'Weather data: QWeather',
  lang,
});

const rain = warning('10121010120260701021000001', {});
const rainUp = warning('10121010120260701043000002', {
  title: '杭州市气象台升级暴雨橙色预警[II级/严重]',
  pubTime: '2026-07-01T04:30+08:00',
  level: '橙色',
  severity: 'severe',
  color: 'orange',
  status: 'update',
  related: [rain.id],
  text: '杭州市气象台2026年07月01日04时30分将暴雨黄色预警升级为橙色：预计未来3小时内累计降水量将达50毫米以上。',
});
const wind = warning('10121010120260701030000003', {
  title: '杭州市气象台发布大风蓝色预警[IV级/一般]',
  pubTime: '2026-07-01T03:00+08:00',
  startTime: '2026-07-01T03:00+08:00',
  endTime: '2026-07-01T06:00+08:00',
  level: '蓝色',
  severity: 'minor',
  color: 'blue',
  typeCode: '1006',
  typeName: '大风',
  text: '杭州市气象台2026年07月01日03时00分发布大风蓝色预警：预计未来24小时内将出现6级以上大风。',
});
const typhoon = warning('10121010120260701080000004', {
  title: '杭州市气象台发布台风红色预警[I级/特别严重]',
  pubTime: '2026-07-01T16:00+08:00',
  startTime: '2026-07-01T16:00+08:00',
  endTime: '2026-07-02T16:00+08:00',
  level: '红色',
  severity: 'extreme',
  color: 'red',
  typeCode: '1001',
  typeName: '台风',
  text: '杭州市气象台2026年07月01日16时00分发布台风红色预警：预计未来6小时内将受台风严重影响。',
});

// QWeather answers lang=en with English titles and text; the English example shows that.
const english = (w: Warning, title: string, typeName: string, text: string): Warning => ({
  ...w,
  title,
  typeName,
  text,
  sender: 'Hangzhou Meteorological Observatory',
});
const rainEn = english(
  rain,
  'Hangzhou Meteorological Observatory issued a yellow rainstorm warning',
  'Rainstorm',
  'Rainfall over 50 mm is expected within 6 hours.',
);
const rainUpEn = english(
  rainUp,
  'Hangzhou Meteorological Observatory upgraded the rainstorm warning to orange',
  'Rainstorm',
  'Rainfall over 50 mm is expected within 3 hours.',
);
const windEn = english(
  wind,
  'Hangzhou Meteorological Observatory issued a blue gale warning',
  'Gale',
  'Winds of force 6 or more are expected within 24 hours.',
);

const out: string[] = [];
const section = (title: string, body: string) => out.push(`### ${title}\n`, body, '');
const json = (value: unknown) => '```json\n' + JSON.stringify(value, null, 2) + '\n```\n';
const text = (value: string) => '```text\n' + value + (value.endsWith('\n') ? '' : '\n') + '```\n';

// The night, as the scheduler places it: quiet hours 22:00-07:00 Asia/Shanghai, red bypasses.
const night = simulate(
  [
    {
      id: 'rain',
      at: new Date('2026-06-30T18:10:00Z'),
      level: '黄色',
      chainId: 'rain',
      cycleId: 'c1',
    },
    {
      id: 'wind',
      at: new Date('2026-06-30T19:00:00Z'),
      level: '蓝色',
      chainId: 'wind',
      cycleId: 'c2',
    },
    {
      id: 'rain-up',
      at: new Date('2026-06-30T20:30:00Z'),
      level: '橙色',
      chainId: 'rain',
      cycleId: 'c3',
    },
    {
      id: 'wind-end',
      at: new Date('2026-06-30T22:00:00Z'),
      level: '蓝色',
      chainId: 'wind',
      cycleId: 'c4',
    },
    {
      id: 'typhoon',
      at: new Date('2026-06-30T19:30:00Z'),
      level: '红色',
      chainId: 'typhoon',
      cycleId: 'c5',
    },
  ],
  {
    group: { kind: 'cycle' },
    timezone: 'Asia/Shanghai',
    quietHours: { from: '22:00', to: '07:00', bypassLevel: '红色' },
    maxPerHour: null,
  },
);
out.push(
  '### A night, as the scheduler places it\n',
  'Quiet hours 22:00-07:00 Asia/Shanghai, bypass level 红色, grouping "cycle": a yellow rainstorm warning at 02:10, a blue gale warning at 03:00, the rainstorm upgraded to orange at 04:30, the gale over at 06:00 — one message at 07:00 (23:00Z); a red typhoon warning at 03:30 bypasses the quiet hours and goes at once in its poll cycle’s message (due at 03:31 at the latest, sent as soon as the cycle’s checks are done).\n',
);
out.push(
  text(
    night.messages
      .map(
        (m) => `${m.sendAt.toISOString()}  hold=${m.hold ?? '-'}  ${m.notificationIds.join(', ')}`,
      )
      .join('\n'),
  ),
);

const single = notification(
  '4f1c7a52-0d2e-4f8a-9b6e-1c2d3e4f5a6b',
  'new',
  '2026-07-01T08:00:00Z',
  typhoon,
);
section(
  'Single webhook (one notification)',
  json(renderWebhookMessage({ id: 'm1', hold: null, notifications: [single] })),
);

const batch: Message = {
  id: '7d0e5b3a-8c41-4b2f-a6d9-0e1f2a3b4c5d',
  hold: 'cycle',
  notifications: [
    notification('a1b2c3d4-0000-4000-8000-000000000001', 'new', '2026-07-01T08:00:00Z', typhoon),
    notification('a1b2c3d4-0000-4000-8000-000000000002', 'update', '2026-07-01T08:00:00Z', rainUp),
  ],
};
section('Grouped webhook (warning.batch)', json(renderWebhookMessage(batch)));

const grouped = renderEmailMessage(batch, {
  unsubscribeUrl: 'https://alerts.example.com/unsubscribe/TOKEN',
});
section('Grouped email', text(`Subject: ${grouped.subject}\n\n${grouped.text}`));

const away: Message = {
  id: '2c9a8b7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d',
  hold: 'quiet',
  quietHours: { from: '22:00', to: '07:00' },
  notifications: [
    notification(
      'b1b2c3d4-0000-4000-8000-000000000001',
      'new',
      '2026-06-30T18:10:00Z',
      rainEn,
      'en',
    ),
    notification(
      'b1b2c3d4-0000-4000-8000-000000000002',
      'new',
      '2026-06-30T19:00:00Z',
      windEn,
      'en',
    ),
    notification(
      'b1b2c3d4-0000-4000-8000-000000000003',
      'update',
      '2026-06-30T20:30:00Z',
      rainUpEn,
      'en',
    ),
    notification(
      'b1b2c3d4-0000-4000-8000-000000000004',
      'expired',
      '2026-06-30T22:00:00Z',
      windEn,
      'en',
    ),
  ],
};
const awayEmail = renderEmailMessage(away);
section(
  'While-you-were-away email (lang en)',
  text(`Subject: ${awayEmail.subject}\n\n${awayEmail.text}`),
);

process.stdout.write(out.join('\n'));
