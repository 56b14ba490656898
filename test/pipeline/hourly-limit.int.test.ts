import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { insertNotifications, type NewNotification } from '../../src/ledger/record.js';
import {
  insertCycleEvent,
  startPipelineHarness,
  type PipelineHarness,
} from '../support/pipeline.js';

/**
 * docs/messages.md: no sliding hour carries more messages than `maxPerHour`. A subscriber who had
 * no limit got messages planned outside the scheduler: a direct message, pending in its
 * first-attempt job, or a cycle's message, collecting without a row until its cycle's release
 * (src/ledger/release.ts). One who sets a limit while such a message is still to be sent has it
 * go out within the hour, so the limit counts it.
 */
describe('the hourly limit', () => {
  let h: PipelineHarness;
  const place = '101010100';

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(place, '北京');
  });
  afterAll(async () => {
    await h?.close();
  });

  async function notification(
    subscriberId: string,
    warningId: string,
    scheduled: boolean,
    cycleOnly = false,
  ): Promise<NewNotification> {
    const { cycleId, eventId } = await insertCycleEvent(h.database.db, place, warningId);
    return {
      subscriberId,
      eventId,
      cycleId,
      placeId: place,
      warningId,
      eventType: 'new',
      occurrence: 0,
      channel: 'webhook',
      scheduled,
      cycleOnly,
      level: '黄色',
      supersedes: [],
      chain: [],
    };
  }

  const insert = (row: NewNotification) =>
    h.database.db.transaction((tx) =>
      insertNotifications(tx, [row], { key: `${row.cycleId}_${place}`, now: new Date() }),
    );

  it('counts a direct message its first-attempt job has still to send', async () => {
    const subscriber = await h.addWebhookSubscriber('/limited', [place]);
    const first = await insert(await notification(subscriber, 'w-before', false));
    expect(first.messages).toHaveLength(1);
    await limitedToOne(subscriber);
    const second = await insert(await notification(subscriber, 'w-after', true));
    expect(second.count).toBe(1);
    await expectThrottled(second.messages[0]!.id);
  });

  it('counts a cycle message that collects without a row yet', async () => {
    const subscriber = await h.addWebhookSubscriber('/limited-cycle', [place]);
    const first = await insert(await notification(subscriber, 'w-cycle', true, true));
    expect(first.releases).toHaveLength(1);
    const rows = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM messages WHERE subscriber_id = ${subscriber}`,
    );
    expect(rows[0]!.n).toBe(0);
    await limitedToOne(subscriber);
    const second = await insert(await notification(subscriber, 'w-cycle-after', true));
    expect(second.count).toBe(1);
    await expectThrottled(second.messages[0]!.id);
  });

  const limitedToOne = (subscriber: string) =>
    h.database.db.execute(sql`UPDATE subscribers SET max_per_hour = 1 WHERE id = ${subscriber}`);

  /** The first still goes out now: this one waits for the hour's slot. */
  async function expectThrottled(messageId: string): Promise<void> {
    const [placed] = await queryRows<{ status: string; hold: string; wait: number }>(
      h.database.db,
      sql`SELECT status, hold,
            extract(epoch FROM next_attempt_at - now())::int AS wait
          FROM messages WHERE id = ${messageId}`,
    );
    expect(placed).toMatchObject({ status: 'open', hold: 'throttle' });
    expect(placed!.wait).toBeGreaterThan(55 * 60);
  }
});
