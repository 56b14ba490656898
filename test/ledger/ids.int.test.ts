import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { runPoll } from '../../src/pipeline/poll.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

const PLACE = '101280101';
const NOW = new Date('2026-07-01T08:00:00.123Z');

/** The milliseconds a UUIDv7 carries in its first 48 bits. */
const timeOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

/**
 * Every writer of notifications names them, and the messages it writes, with time-ordered ids
 * (`ledgerIds`), so that a storm's inserts reach the newest leaves of the primary keys rather
 * than any leaf of a kept ledger's: a direct message, a notification joining its cycle's
 * message, and one placed by the scheduler (a grouping window).
 */
describe('ledger ids', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(PLACE, '广州');
    await h.addWebhookSubscriber('/direct', [PLACE]);
    await h.addEmailSubscriber('cycle@example.com', [PLACE], {}, 'cycle');
    await h.addEmailSubscriber('window@example.com', [PLACE], {}, { windowSeconds: 600 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('carry the check’s time in every path a notification is written by', async () => {
    const rt = h.runtime({}, { now: () => NOW });
    h.sim.setWarnings(PLACE, [
      v7Warning({ locationId: PLACE, seq: 1, typeCode: '1003', level: '橙色' }),
    ]);
    const poll = await runPoll(rt.ctx, {});
    if (!poll.ok) throw new Error('poll failed');
    await runCheck(rt.ctx, { cycleId: poll.cycleId, placeId: PLACE });

    const notifications = await queryRows<{ id: string; message_id: string; group_mode: string }>(
      h.database.db,
      sql`SELECT d.id, d.message_id, coalesce(u.group_mode, 'none') AS group_mode
          FROM deliveries d JOIN subscribers u ON u.id = d.subscriber_id ORDER BY group_mode`,
    );
    expect(notifications.map((n) => n.group_mode)).toEqual(['cycle', 'none', 'window']);
    for (const n of notifications) {
      expect(n.id[14]).toBe('7');
      expect(timeOf(n.id)).toBe(NOW.getTime());
    }
    // A cycle's message is named after its subscriber and cycle (`cycleMessageId`, written by
    // the cycle's release); the others are written by the check, their ids from its clock.
    const written = await queryRows<{ id: string }>(h.database.db, sql`SELECT id FROM messages`);
    const byMode = new Map(notifications.map((n) => [n.group_mode, n.message_id]));
    expect(written.map((m) => m.id).sort()).toEqual([...byMode.values()].sort());
    expect(byMode.get('cycle')![14]).toBe('8');
    for (const mode of ['none', 'window']) expect(timeOf(byMode.get(mode)!)).toBe(NOW.getTime());
  });
});
