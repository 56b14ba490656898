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
 * no limit got messages planned without a row (a direct webhook waits in its first-attempt
 * batch, src/ledger/deferred.ts); one who sets a limit while such a message is
 * still to be sent has it go out within the hour, so the limit counts it.
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
      cycleOnly: false,
      level: '黄色',
      supersedes: [],
      chain: [],
    };
  }

  const insert = (row: NewNotification) =>
    h.database.db.transaction((tx) =>
      insertNotifications(tx, [row], { key: `${row.cycleId}_${place}`, now: new Date() }),
    );

  it('counts a message still to be sent that has no row yet', async () => {
    const subscriber = await h.addWebhookSubscriber('/limited', [place]);
    // Planned without a limit: a direct message, no row, its batch job not run yet.
    const first = await insert(await notification(subscriber, 'w-before', false));
    expect(first.messages).toHaveLength(1);
    const rows = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM messages WHERE subscriber_id = ${subscriber}`,
    );
    expect(rows[0]!.n).toBe(0);

    await h.database.db.execute(
      sql`UPDATE subscribers SET max_per_hour = 1 WHERE id = ${subscriber}`,
    );
    const second = await insert(await notification(subscriber, 'w-after', true));
    expect(second.count).toBe(1);
    // The first still goes out now: this one waits for the hour's slot.
    const [placed] = await queryRows<{ status: string; hold: string; wait: number }>(
      h.database.db,
      sql`SELECT status, hold,
            extract(epoch FROM next_attempt_at - now())::int AS wait
          FROM messages WHERE id = ${second.messages[0]!.id}`,
    );
    expect(placed).toMatchObject({ status: 'open', hold: 'throttle' });
    expect(placed!.wait).toBeGreaterThan(55 * 60);
  });
});
