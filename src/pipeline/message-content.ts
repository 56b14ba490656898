import { inEnglish } from '../domain/english.js';
import type { Message } from '../domain/message-render.js';
import { ATTRIBUTION, type Notification } from '../domain/render.js';
import type { CarriedNotification, Outgoing } from '../ledger/index.js';

/** A taken message as its channel renders it (src/pipeline/deliver.ts sends it). */

/**
 * A carried notification as its reader sees it: in their language, its times in `timeZone` (the
 * subscriber's own zone) or, without one, in its place's.
 */
export function notificationFor(
  row: CarriedNotification,
  lang: 'zh' | 'en',
  timeZone: string | null,
): Notification {
  const record = { ...row.record, raw: null };
  // An English subscriber reads the upstream's English, else English names and the original
  // text marked as Chinese (README, promises).
  const shown = lang === 'en' ? inEnglish(record) : { warning: record, textInChinese: false };
  const placeName = (lang === 'en' ? row.place_name_en : null) ?? row.place_name;
  return {
    deliveryId: row.id,
    eventType: row.event_type,
    occurredAt: new Date(row.detected_at),
    location: {
      id: row.place_id,
      name: placeName ?? row.place_id,
      tz: timeZone ?? row.place_tz ?? 'Asia/Shanghai',
    },
    warning: shown.warning,
    ...(shown.textInChinese ? { textInChinese: true } : {}),
    // An update told as a subscriber's first news of a warning (src/ledger/told.ts) replaces
    // nothing they know of.
    supersedes: row.event_type === 'update' || row.event_type === 'cancel' ? row.supersedes : [],
    attribution: ATTRIBUTION[lang],
    ...(row.attributions ? { attributions: row.attributions } : {}),
    lang,
    ...(row.in_force ? { inForceWhenSubscribed: true } : {}),
  };
}

/**
 * What a one-notification webhook body is made of: the event (its place, record, supersedes,
 * attributions and detection time never change), what it was told as (an update told as first
 * news is a `new`), the language, whether it was in force when they subscribed, and the place's
 * names as they are now (a rename, or an English name looked up later).
 */
function webhookBodyKey(message: Outgoing): string | undefined {
  const [only, ...more] = message.notifications;
  if (!only || more.length > 0) return undefined;
  return [
    only.event_id,
    only.event_type,
    message.lang,
    only.in_force ? 1 : 0,
    only.place_name ?? '',
    only.place_name_en ?? '',
  ].join('\u0000');
}

/** What the channels send: the message id and its notifications, rendered by the channel. */
export function contentOf(message: Outgoing): Message {
  const bodyKey = webhookBodyKey(message);
  let notifications: Notification[] | undefined;
  return {
    id: message.id,
    hold: message.hold,
    // Made when a channel renders them: a webhook whose body a message of the same event has
    // rendered already (`webhookBodyKey`) never reads them.
    get notifications() {
      return (notifications ??= message.notifications.map((n) =>
        notificationFor(n, message.lang, message.timezone),
      ));
    },
    // What a "while you were away" heading names.
    ...(message.quiet_from && message.quiet_to
      ? { quietHours: { from: message.quiet_from, to: message.quiet_to } }
      : {}),
    ...(bodyKey === undefined ? {} : { webhookBodyKey: bodyKey }),
  };
}
