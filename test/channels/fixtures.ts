import type { Message } from '../../src/domain/message-render.js';
import type { Notification } from '../../src/domain/render.js';
import type { Warning } from '../../src/domain/warning.js';

/** A v7 rainstorm warning for Hangzhou, as the normalizer would hand it over. */
export function sampleWarning(overrides: Partial<Warning> = {}): Warning {
  return {
    id: '10121010120260701080000001',
    source: 'v7',
    title: '杭州市气象台发布暴雨橙色预警[II级/严重]',
    sender: '杭州市气象台',
    pubTime: '2026-07-01T16:00+08:00',
    startTime: '2026-07-01T16:00+08:00',
    endTime: '2026-07-02T16:00+08:00',
    status: 'active',
    level: '橙色',
    severity: 'severe',
    color: 'orange',
    typeCode: '1003',
    typeName: '暴雨',
    text: '杭州市气象台2026年07月01日16时00分发布暴雨橙色预警：预计未来3小时内累计降水量将达50毫米以上。',
    related: [],
    instruction: null,
    raw: {},
    ...overrides,
  };
}

export function sampleNotification(overrides: Partial<Notification> = {}): Notification {
  return {
    deliveryId: '0b9f2c1e-4d5a-4c7b-9e1f-2a3b4c5d6e7f',
    eventType: 'new',
    occurredAt: new Date('2026-07-01T08:00:00.000Z'),
    location: { id: '101210101', name: '杭州', tz: 'Asia/Shanghai' },
    warning: sampleWarning(),
    supersedes: [],
    attribution: 'Weather data: QWeather',
    lang: 'zh',
    ...overrides,
  };
}

/**
 * The message of one notification that does not group: its id is the notification's own
 * (docs/messages.md), and it looks exactly like the notification alone (§4, §5).
 */
export function messageOf(n: Notification): Message {
  return { id: n.deliveryId, hold: null, notifications: [n] };
}

/** `messageOf(sampleNotification(overrides))`. */
export function sampleMessage(overrides: Partial<Notification> = {}): Message {
  return messageOf(sampleNotification(overrides));
}

/** A Standard Webhooks secret: whsec_ + base64 of 32 bytes. */
export const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
