import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { cycleMessageId, insertNotifications } from '../../src/pipeline/notification-ledger.js';
import { waitForLockWait } from '../support/db.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * A check adds a cycle-grouped notification to its subscriber's message of the cycle, making the
 * message when its statement's snapshot lacks it. Another check may make that message, and
 * commit it, while the first check's statement waits on its insert: the statement neither made
 * it nor saw it. The notification must still join that message (a second message would tell the
 * subscriber in two emails what the cycle meant to say in one), and without the scheduler's
 * subscriber locks, which concurrent checks holding message locks deadlocked on.
 */
describe('a cycle message made by another check during the statement', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await startPipelineHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('gets the notification, without the scheduler and its locks, and no second message', async () => {
    const db = h.database.db;
    const place = '101010100';
    await h.addPlace(place, '北京');
    const subscriber = await h.addEmailSubscriber('desk@example.com', [place]);
    const [cycle] = await queryRows<{ id: string }>(
      db,
      sql`INSERT INTO poll_cycles (status) VALUES ('running') RETURNING id`,
    );
    const [event] = await queryRows<{ id: number }>(
      db,
      sql`INSERT INTO events (cycle_id, place_id, warning_id, type, record)
          VALUES (${cycle!.id}, ${place}, 'w1', 'new', '{}'::jsonb) RETURNING id`,
    );
    const messageId = cycleMessageId(subscriber, cycle!.id);

    // The other check: its message is written, not yet committed.
    const other = new pg.Client({ connectionString: h.database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(
        `INSERT INTO messages (id, subscriber_id, channel, status, hold, cycle_id,
           next_attempt_at, first_job_id)
         VALUES ($1, $2, 'email', 'open', 'cycle', $3, now() + interval '1 minute', 'held_x_0')`,
        [messageId, subscriber, cycle!.id],
      );
      const adding = db.transaction(async (tx) => {
        const inserted = await insertNotifications(
          tx,
          [
            {
              subscriberId: subscriber,
              eventId: event!.id,
              cycleId: cycle!.id,
              placeId: place,
              warningId: 'w1',
              eventType: 'new',
              channel: 'email',
              scheduled: true,
              cycleOnly: true,
              level: '黄色',
              supersedes: [],
            },
          ],
          { key: `${cycle!.id}_${place}`, now: new Date() },
        );
        // The scheduler's subscriber locks, taken while this transaction holds message locks,
        // deadlocked concurrent checks: the notification joins without them.
        const [locks] = await queryRows<{ n: number }>(
          tx,
          sql`SELECT count(*)::int AS n FROM pg_locks
              WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
        );
        expect(locks!.n).toBe(0);
        return inserted;
      });
      // This check's statement waits on the other's uncommitted message.
      await waitForLockWait(h.database.url, "this check's insert waiting on the other's message");
      await other.query('COMMIT');
      const inserted = await adding;
      expect(inserted.count).toBe(1);
      // It made no message: the other check's job carries it.
      expect(inserted.messages).toEqual([]);
    } finally {
      await other.end();
    }

    const rows = await queryRows<{ message_id: string }>(
      db,
      sql`SELECT message_id FROM deliveries WHERE subscriber_id = ${subscriber}`,
    );
    expect(rows).toEqual([{ message_id: messageId }]);
    const messages = await queryRows<{ id: string }>(
      db,
      sql`SELECT id FROM messages WHERE subscriber_id = ${subscriber}`,
    );
    expect(messages).toEqual([{ id: messageId }]);
  });
});
