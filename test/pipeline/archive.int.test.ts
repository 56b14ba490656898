import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

describe('CHECK_ALL_LISTED (the archive option)', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace('101210101', '杭州');
    await h.addEmailSubscriber('duty@example.com', ['101210101']);
    h.sim.setWarnings('101210101', [
      v7Warning({ locationId: '101210101', typeCode: '1003', level: '黄色' }),
    ]);
    h.sim.setWarnings('101010100', [
      v7Warning({ locationId: '101010100', typeCode: '1006', level: '蓝色' }),
    ]);
    h.sim.setWarnings('101280101', [
      v7Warning({ locationId: '101280101', typeCode: '1001', level: '红色' }),
    ]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('checks and stores every listed place but notifies only subscribers', async () => {
    const { summary } = await h.pollOnce({ CHECK_ALL_LISTED: 'true' });
    expect(summary).toMatchObject({ listed: 3, checked: 3, upstreamCalls: 4 });
    expect(summary.events.new).toBe(3);
    expect(Object.keys(h.sim.requests().byOperationLocation.warningNow).sort()).toEqual([
      '101010100',
      '101210101',
      '101280101',
    ]);
    const stored = await queryRows<{ place_id: string }>(
      h.database.db,
      sql`SELECT place_id FROM warnings WHERE state = 'open' ORDER BY place_id`,
    );
    expect(stored.map((r) => r.place_id)).toEqual(['101010100', '101210101', '101280101']);
    const rows = await h.deliveries();
    expect(rows.map((r) => [r.subscriber, r.event_type])).toEqual([['duty@example.com', 'new']]);
  });

  it('without it, unwatched places cost no call', async () => {
    h.sim.resetRequests();
    const { summary } = await h.pollOnce();
    // Hangzhou (watched) only; the archived open warnings elsewhere are nobody's concern.
    expect(summary).toMatchObject({ listed: 3, checked: 1, upstreamCalls: 2 });
    expect(Object.keys(h.sim.requests().byOperationLocation.warningNow)).toEqual(['101210101']);
  });
});
