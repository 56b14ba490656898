import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { waitForLockWait } from '../support/db.js';
import { newCycle, startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * One warning id at two places a desk watches ends at both in the same cycle. Its end is the
 * desk's when it is over at both, so each check reads the other place's state. Run side by side,
 * each would read the other's state from before the other's commit, "still open", and neither
 * would tell the end: a missed all-clear. Checks that report the same warning take its lock
 * before they write (src/detection/apply-check.ts, `lockWarnings`), so the second one reads what
 * the first committed.
 */
describe('a warning that ends at two places at once', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  const HANGZHOU = '101210101';
  const BEIJING = '101010100';

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(BEIJING, '北京');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is told ended once to the desk that watches both, whichever check commits first', async () => {
    const desk = await h.addWebhookSubscriber('/both', [HANGZHOU, BEIJING]);
    const shared = v7Warning({
      locationId: HANGZHOU,
      id: '10121010120261128090000077',
      typeCode: '1004',
      level: '橙色',
    });
    h.sim.setWarnings(HANGZHOU, [shared]);
    h.sim.setWarnings(BEIJING, [shared]);
    expect((await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 })).ok).toBe(true);
    // Missed once at both; the next miss at each place ends it there.
    h.sim.setWarnings(HANGZHOU, []);
    h.sim.setWarnings(BEIJING, []);
    const missed = await newCycle(h.database.db, 2);
    await runCheck(rt.ctx, { cycleId: missed, placeId: HANGZHOU });
    await runCheck(rt.ctx, { cycleId: missed, placeId: BEIJING });

    // Both checks of the ending cycle held at the warning's lock, then let go together.
    const holder = new pg.Client({ connectionString: h.database.url });
    await holder.connect();
    try {
      await holder.query(`SELECT pg_advisory_lock(hashtextextended('qwn-alert/' || $1, 0))`, [
        shared.id,
      ]);
      const ending = await newCycle(h.database.db, 2);
      const checks = Promise.all([
        runCheck(rt.ctx, { cycleId: ending, placeId: HANGZHOU }),
        runCheck(rt.ctx, { cycleId: ending, placeId: BEIJING }),
      ]);
      await waitForLockWait(h.database.url, 'the ending checks at the warning lock');
      await holder.query(`SELECT pg_advisory_unlock(hashtextextended('qwn-alert/' || $1, 0))`, [
        shared.id,
      ]);
      const outcomes = await checks;
      expect(outcomes.map((o) => o.events.expired)).toEqual([1, 1]);
    } finally {
      await holder.end();
    }

    const told = await queryRows<{ event_type: string; n: number }>(
      h.database.db,
      sql`SELECT event_type, count(*)::int AS n FROM deliveries
          WHERE subscriber_id = ${desk} GROUP BY event_type ORDER BY event_type`,
    );
    expect(told).toEqual([
      { event_type: 'expired', n: 1 },
      { event_type: 'new', n: 1 },
    ]);
  });
});
