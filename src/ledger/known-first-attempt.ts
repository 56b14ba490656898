import { sql } from 'drizzle-orm';
import type { ChannelAddress } from '../channels/registry.js';
import type { EventType } from '../domain/detect.js';
import type { Channel } from '../channels/kinds.js';
import {
  subscriberAddressColumns,
  type CarriedNotification,
  type ClaimedMessage,
  type Outgoing,
} from './take.js';

/**
 * A direct message's first attempt as the check that writes it already knows it. The check has
 * read its subscribers (their subscriptions, to filter) and holds the events it detected, so the
 * process that sends the attempt need not read them back through the take statement, a round
 * trip and a row parse per batch before its first send (issue 38). What it carries is what the
 * take would have read: test/ledger/known-first-attempt.int.test.ts renders both and compares.
 */

/**
 * What a check's subscription statement reads for such a message, of subscriber `u` and of the
 * subscription's place `p` (left joined): the take's columns of each.
 */
export const KNOWN_SUBSCRIBER_COLUMNS = sql.raw(
  `${subscriberAddressColumns('u')}, p.name AS place_name, p.name_en AS place_name_en, p.tz AS place_tz`,
);

/** A row of `KNOWN_SUBSCRIBER_COLUMNS`. */
export type KnownSubscriber = Omit<ChannelAddress, 'subscriber_id'> &
  Pick<ClaimedMessage, 'lang' | 'disabled_reason' | 'quiet_from' | 'quiet_to' | 'timezone'> &
  Pick<CarriedNotification, 'place_name' | 'place_name_en' | 'place_tz'>;

/** An event as its check wrote it: what the take reads of the event row. */
export type KnownEvent = Pick<
  CarriedNotification,
  'event_id' | 'record' | 'supersedes' | 'attributions' | 'detected_at' | 'in_force'
>;

/** What a notification's check knows of its first attempt. */
export interface KnownContent {
  subscriber: KnownSubscriber;
  event: KnownEvent;
}

/**
 * The message the take would return for direct notification `id`, written leased to this
 * process by a check that read its subscriber as receiving (active, not unsubscribed): its
 * first attempt, owned, carrying that one notification. `readAt`: the check's time, taken before
 * its transaction read the subscriber (`Outgoing.readAt`).
 */
export function knownFirstAttempt(
  id: string,
  notification: {
    subscriberId: string;
    channel: Channel;
    eventType: EventType;
    warningId: string;
    placeId: string;
  },
  known: KnownContent,
  readAt: number,
): Outgoing {
  const { subscriber: s, event } = known;
  return {
    id,
    attempts: 1,
    channel: notification.channel,
    hold: null,
    subscriber_id: notification.subscriberId,
    email: s.email,
    webhook_url: s.webhook_url,
    webhook_secret: s.webhook_secret,
    robot_kind: s.robot_kind,
    robot_url: s.robot_url,
    robot_secret: s.robot_secret,
    lang: s.lang,
    active: true,
    unsubscribed: false,
    disabled_reason: s.disabled_reason,
    quiet_from: s.quiet_from,
    quiet_to: s.quiet_to,
    timezone: s.timezone,
    deleted: false,
    owned: true,
    notifications: [
      {
        id,
        message_id: id,
        event_type: notification.eventType,
        warning_id: notification.warningId,
        place_id: notification.placeId,
        event_id: event.event_id,
        record: event.record,
        supersedes: event.supersedes,
        attributions: event.attributions,
        detected_at: event.detected_at,
        in_force: event.in_force,
        place_name: s.place_name,
        place_name_en: s.place_name_en,
        place_tz: s.place_tz,
      },
    ],
    readAt,
  };
}
