import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import type { EventType } from '../domain/detect.js';
import { channelOfAddress } from '../channels/kinds.js';
import { terminalView } from '../channels/registry.js';
import type { Message } from '../domain/message-render.js';
import { ATTRIBUTION, type Notification } from '../domain/render.js';
import type { Warning } from '../domain/warning.js';
import type { SubscriberAddress } from '../ledger/index.js';
import { robotsDescribedAs, subscriberMatches } from '../ledger/index.js';

/**
 * What a subscriber would receive (`qwn preview`) and a marked test message through their real
 * channel (`qwn test-send`): the two questions of a desk that says "we got nothing". Both render
 * with the pipeline's own renderers.
 */

export interface PreviewSubscriber extends SubscriberAddress {
  name: string | null;
  /** The subscriber's own time zone; null: the place's. */
  timezone: string | null;
  place: { id: string; name: string; name_en: string | null; tz: string } | null;
}

/** The subscriber an operator names by email, webhook URL, robot host#fingerprint, name or id. */
export async function findSubscriber(db: Db, who: string): Promise<PreviewSubscriber[]> {
  const text = who.trim();
  return queryRows<PreviewSubscriber>(
    db,
    sql`SELECT s.id AS subscriber_id, s.name, s.email, s.webhook_url, s.webhook_secret, s.robot_kind, s.robot_url,
          s.robot_secret, s.lang, s.active, s.unsubscribed_at IS NOT NULL AS unsubscribed,
          s.disabled_reason, s.timezone,
          (SELECT json_build_object('id', p.id, 'name', p.name, 'name_en', p.name_en, 'tz', p.tz)
           FROM subscriptions x JOIN places p ON p.id = x.place_id
           WHERE x.subscriber_id = s.id ORDER BY p.name, p.id LIMIT 1) AS place
        FROM subscribers s
        WHERE ${subscriberMatches(text, await robotsDescribedAs(db, text))}
        ORDER BY s.created_at`,
  );
}

/** A stored warning by its id (the newest sighting of it), to preview as it really was. */
export async function storedWarning(
  db: Db,
  warningId: string,
): Promise<{ warning: Warning; place: NonNullable<PreviewSubscriber['place']> } | null> {
  const [row] = await queryRows<{
    record: Warning;
    place: NonNullable<PreviewSubscriber['place']>;
  }>(
    db,
    sql`SELECT w.record,
          json_build_object('id', p.id, 'name', p.name, 'name_en', p.name_en, 'tz', p.tz) AS place
        FROM warnings w JOIN places p ON p.id = w.place_id
        WHERE w.warning_id = ${warningId}
        ORDER BY w.last_seen DESC LIMIT 1`,
  );
  return row ? { warning: row.record, place: row.place } : null;
}

const TEST_TEXT = {
  zh: '这是 qwn 发送的测试消息，用于确认本渠道可以收到预警通知。此地目前并无此预警。',
  en: 'This is a test message from qwn, sent to check that this channel receives warning notifications. No such warning is in force.',
} as const;

/** A sample rainstorm warning at the subscriber's first place; `test` marks it as a test. */
export function sampleWarning(sub: PreviewSubscriber, now: Date, test: boolean): Warning {
  const place = sub.place?.name ?? (sub.lang === 'en' ? 'Hangzhou' : '杭州');
  const start = new Date(now.getTime());
  const end = new Date(now.getTime() + 12 * 3600_000);
  const mark = test ? (sub.lang === 'en' ? '[TEST] ' : '【测试】') : '';
  return {
    id: test ? `qwn-test-${now.getTime()}` : `qwn-sample-${sub.place?.id ?? '101210101'}`,
    source: 'v7',
    title:
      sub.lang === 'en'
        ? `${mark}${place} Meteorological Observatory issued Yellow Rainstorm Warning`
        : `${mark}${place}气象台发布暴雨黄色预警`,
    sender: sub.lang === 'en' ? `${place} Meteorological Observatory` : `${place}气象台`,
    pubTime: start.toISOString(),
    startTime: start.toISOString(),
    endTime: end.toISOString(),
    status: 'active',
    level: '黄色',
    severity: 'moderate',
    color: 'yellow',
    typeCode: '1003',
    typeName: sub.lang === 'en' ? 'Rainstorm' : '暴雨',
    text: test
      ? TEST_TEXT[sub.lang]
      : sub.lang === 'en'
        ? 'A sample warning: heavy rain of 50 mm or more is expected within 6 hours.'
        : '示例预警：预计未来6小时内累计降水量将达50毫米以上。',
    related: [],
    instruction: null,
    raw: {},
  };
}

/** One message of one notification for this subscriber, as the pipeline would build it. */
export function previewMessage(
  sub: PreviewSubscriber,
  warning: Warning,
  eventType: EventType,
  now: Date,
  id: string = randomUUID(),
): Message {
  const place = sub.place ?? {
    id: '101210101',
    name: '杭州',
    name_en: 'Hangzhou',
    tz: 'Asia/Shanghai',
  };
  const notification: Notification = {
    deliveryId: id,
    eventType,
    occurredAt: now,
    location: {
      id: place.id,
      name: sub.lang === 'en' ? (place.name_en ?? place.name) : place.name,
      tz: sub.timezone ?? place.tz,
    },
    warning,
    supersedes: warning.related ?? [],
    attribution: ATTRIBUTION[sub.lang],
    lang: sub.lang,
  };
  return { id, hold: null, notifications: [notification] };
}

/** The message as its channel carries it, for a terminal. */
export function renderForTerminal(sub: PreviewSubscriber, message: Message): string {
  return terminalView(channelOfAddress(sub), sub, message);
}
