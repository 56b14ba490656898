import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderWebhookMessage } from '../../src/domain/message-render.js';
import type { Outgoing } from '../../src/ledger/index.js';
import { contentOf } from '../../src/pipeline/message-content.js';
import { sampleWarning } from '../channels/fixtures.js';

/**
 * The webhook body key (`Message.webhookBodyKey`): the sender renders a body once per key and
 * sends it to every subscriber whose message has that key, so two messages with one key must
 * have one body, whatever else differs between them (message and notification ids, the
 * subscriber's time zone and quiet hours).
 */

/** The events a property draws from: v7 and v1, with and without English, one ended. */
const EVENTS = [
  { id: '1', place: '101280101', record: sampleWarning({ id: 'w1' }), supersedes: [] },
  {
    id: '2',
    place: '101280101',
    record: sampleWarning({ id: 'w2', status: 'update', related: ['w1'] }),
    supersedes: ['w1'],
  },
  {
    id: '3',
    place: '101010100',
    record: sampleWarning({
      id: 'w3',
      source: 'v1',
      color: 'red',
      instruction: 'Stay indoors.',
      v1Id: 'v1-3',
    }),
    supersedes: [],
    attributions: ['CMA'],
  },
  {
    id: '4',
    place: '101010100',
    record: sampleWarning({ id: 'w4', status: 'cancel' }),
    supersedes: [],
  },
] as const;

const outgoing = fc
  .record({
    event: fc.constantFrom(...EVENTS),
    eventType: fc.constantFrom('new', 'update', 'cancel', 'expired', 'resumed' as const),
    lang: fc.constantFrom('zh', 'en' as const),
    inForce: fc.boolean(),
    timezone: fc.constantFrom(null, 'Europe/London', 'Asia/Shanghai'),
    placeName: fc.constantFrom('广州', '广州市'),
    placeNameEn: fc.constantFrom(null, 'Guangzhou'),
    messageId: fc.uuid(),
    deliveryId: fc.uuid(),
    quiet: fc.boolean(),
  })
  .map((o): Outgoing => ({
    id: o.messageId,
    attempts: 1,
    channel: 'webhook',
    hold: null,
    quiet_from: o.quiet ? '22:00' : null,
    quiet_to: o.quiet ? '07:00' : null,
    timezone: o.timezone,
    deleted: false,
    subscriber_id: 's',
    email: null,
    webhook_url: 'https://example.com/hook',
    webhook_secret: null,
    robot_kind: null,
    robot_url: null,
    robot_secret: null,
    lang: o.lang,
    active: true,
    unsubscribed: false,
    disabled_reason: null,
    owned: true,
    readAt: 0,
    notifications: [
      {
        id: o.deliveryId,
        message_id: o.messageId,
        event_type: o.eventType,
        warning_id: o.event.record.id,
        place_id: o.event.place,
        event_id: o.event.id,
        record: o.event.record,
        supersedes: [...o.event.supersedes],
        attributions: 'attributions' in o.event ? [...o.event.attributions] : null,
        detected_at: new Date(`2026-07-01T0${o.event.id}:00:00Z`),
        in_force: o.inForce,
        place_name: o.placeName,
        place_name_en: o.placeNameEn,
        place_tz: 'Asia/Shanghai',
      },
    ],
  }));

const body = (m: Outgoing) => JSON.stringify(renderWebhookMessage(contentOf(m)));

describe('the webhook body key', () => {
  it('is the same for two messages only when their bodies are', () => {
    fc.assert(
      fc.property(outgoing, outgoing, (a, b) => {
        const [keyA, keyB] = [contentOf(a).webhookBodyKey, contentOf(b).webhookBodyKey];
        expect(keyA).toBeDefined();
        if (keyA === keyB) expect(body(a)).toBe(body(b));
      }),
      { numRuns: 2000 },
    );
  });

  it('is absent from a message of several notifications, whose body is its own', () => {
    const one = fc.sample(outgoing, { numRuns: 2, seed: 38 });
    const both: Outgoing = {
      ...one[0]!,
      notifications: [...one[0]!.notifications, ...one[1]!.notifications],
    };
    expect(contentOf(both).webhookBodyKey).toBeUndefined();
  });
});
