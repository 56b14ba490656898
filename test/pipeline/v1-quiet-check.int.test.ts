import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { withTimeout } from '../../src/ops/with-timeout.js';
import { runCheck } from '../../src/pipeline/check.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v1Alert } from '../../src/simulator/index.js';
import { waitForLockWait, writeBeforeFirstTransaction } from '../support/db.js';
import { newCycle } from '../support/pipeline.js';
import { startV1Harness, type V1Harness } from './v1-harness.js';

const POINT = '30.27,120.15';

/**
 * A v1 point check whose answer changes nothing (the tag of the last one applied, or nothing
 * detected) writes its bookkeeping
 * without the point's lock, many checks per statement (src/detection/apply-check.ts,
 * `checkQuietly`); any other answer takes the lock as before. Another session holding
 * the point row FOR KEY SHARE tells the two apart: the lock (FOR UPDATE) waits for it, a plain
 * update of the row does not.
 */
describe('quiet v1 point checks', () => {
  let v: V1Harness;
  let rt: Runtime;

  beforeAll(async () => {
    v = await startV1Harness();
    rt = v.h.runtime();
    await v.addPlace('101210101', '杭州', 30.27, 120.15);
    await v.subscribe({ webhookPath: '/hz' }, [{ place: '101210101', points: [POINT] }]);
  });
  afterAll(async () => {
    await v?.close();
  });

  /**
   * Runs `check` while another session holds `point`'s row (FOR KEY SHARE unless said). The
   * check may call `waitedFor` once it has started: it waits until some session waits on a lock,
   * lets the other session write `meanwhile`, and commits it.
   */
  async function withPointLocked<T>(
    check: (
      waitedFor: (meanwhile?: (other: pg.Client) => Promise<unknown>) => Promise<void>,
    ) => Promise<T>,
    { point = POINT, lock = 'FOR KEY SHARE' } = {},
  ) {
    const other = new pg.Client({ connectionString: v.h.database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM alert_points WHERE id = $1 ${lock}`, [point]);
      return await check(async (meanwhile) => {
        await waitForLockWait(v.h.database.url, 'a point check waiting for its row');
        await meanwhile?.(other);
        await other.query('COMMIT');
      });
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
  }

  it('writes an unchanged answer without the lock, and takes it for a changed one', async () => {
    const rain = v1Alert({
      area: { lat: 30.27, lon: 120.15, radiusKm: 5 },
      id: 'V1QUIET001',
      typeCode: '1003',
      level: '黄色',
    });
    v.sim.setAlerts([rain]);
    expect((await v.h.pollOnce()).summary.events.new).toBe(1);
    const [before] = await queryRows<{ last_tag: string; last_seen: Date }>(
      v.h.database.db,
      sql`SELECT a.last_tag, w.last_seen FROM alert_points a
          JOIN warnings w ON w.place_id = a.id WHERE a.id = ${POINT}`,
    );

    // The same answer: done while the row is shared, seen again, counted as applied.
    const cycleId = await newCycle(v.h.database.db);
    const quiet = await withPointLocked(() =>
      withTimeout('a quiet point check', 10_000, runCheck(rt.ctx, { cycleId, pointId: POINT })),
    );
    expect(quiet).toEqual({
      applied: true,
      fetchOk: true,
      events: { new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: 0,
      skippedRecords: 0,
    });
    const [after] = await queryRows<{ last_tag: string; last_seen: Date; last_cycle_id: string }>(
      v.h.database.db,
      sql`SELECT a.last_tag, a.last_cycle_id, w.last_seen FROM alert_points a
          JOIN warnings w ON w.place_id = a.id WHERE a.id = ${POINT}`,
    );
    expect(after!.last_cycle_id).toBe(cycleId);
    expect(after!.last_tag).toBe(before!.last_tag);
    expect(new Date(after!.last_seen).getTime()).toBeGreaterThan(
      new Date(before!.last_seen).getTime(),
    );
    // The same cycle again is a re-run: nothing applied twice.
    expect((await runCheck(rt.ctx, { cycleId, pointId: POINT })).applied).toBe(false);

    // An upgrade changes the tag: the check takes the lock, waits for the other session, and
    // announces the update.
    v.sim.setAlerts([
      v1Alert({
        area: { lat: 30.27, lon: 120.15, radiusKm: 5 },
        id: 'V1QUIET002',
        typeCode: '1003',
        level: '橙色',
        messageType: 'update',
        supersedes: ['V1QUIET001'],
      }),
    ]);
    const changed = await withPointLocked(async (waitedFor) => {
      const check = runCheck(rt.ctx, {
        cycleId: await newCycle(v.h.database.db),
        pointId: POINT,
      });
      await waitedFor();
      return check;
    });
    expect(changed.events.update).toBe(1);
    expect(changed.deliveries).toBe(1);
  });

  it('reads the tracked alerts again under the lock when another check wrote after its unlocked read', async () => {
    // An alert missed once; this check misses it again, which would end it (two misses).
    // Between the check's unlocked read and its lock, a check of an earlier answer that still
    // had the alert records it as seen. Reusing the unlocked read would end the alert on a
    // stale miss count: a false all-clear.
    const point = '30.57,104.07';
    await v.addPlace('101270101', '成都', 30.57, 104.07);
    await v.subscribe({ webhookPath: '/cd' }, [{ place: '101270101', points: [point] }]);
    v.sim.setAlerts([
      v1Alert({
        area: { lat: 30.57, lon: 104.07, radiusKm: 5 },
        id: 'V1STALE001',
        typeCode: '1003',
        level: '黄色',
      }),
    ]);
    const check = (ctx = rt.ctx) =>
      newCycle(v.h.database.db).then((cycleId) => runCheck(ctx, { cycleId, pointId: point }));
    expect((await check()).events.new).toBe(1);
    v.sim.setAlerts([]);
    expect((await check()).applied).toBe(true);
    const tracked = sql`SELECT misses, state FROM warnings WHERE place_id = ${point}`;
    expect(await queryRows(v.h.database.db, tracked)).toEqual([{ misses: 1, state: 'open' }]);

    const started = new Date();
    // The earlier answer's check: the alert seen again, that answer's tag applied, its fetch
    // older than this check's.
    const { db, interleaved } = writeBeforeFirstTransaction(rt.ctx.db, async () => {
      await v.h.database.db.execute(
        sql`UPDATE warnings SET misses = 0, last_seen = now() WHERE place_id = ${point}`,
      );
      await v.h.database.db.execute(sql`
        UPDATE alert_points SET last_tag = 'an answer with the alert',
          last_fetched_at = ${new Date(started.getTime() - 1000)}
        WHERE id = ${point}`);
    });
    const outcome = await check({ ...rt.ctx, db });
    expect(interleaved()).toBe(true);
    expect(outcome.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    // Seen after this check's cycle began: its answer is no miss at all (countsAsMiss). On the
    // unlocked read's count it would have been the second miss, and an end.
    expect(await queryRows(v.h.database.db, tracked)).toEqual([{ misses: 0, state: 'open' }]);
  });

  it('keeps the last applied answer when a failed or stale call ends up under the lock', async () => {
    // A failed or stale call writes bookkeeping only, without the lock, unless another check
    // changes the point row between its read and its write: then it takes the lock, and must
    // still keep the tag and attributions of the last answer applied there.
    const point = '23.13,113.26';
    await v.addPlace('101280101', '广州', 23.13, 113.26);
    await v.subscribe({ webhookPath: '/gz' }, [{ place: '101280101', points: [point] }]);
    v.sim.setAlerts([]);
    const check = () =>
      newCycle(v.h.database.db).then((cycleId) => runCheck(rt.ctx, { cycleId, pointId: point }));
    expect((await check()).fetchOk).toBe(true);

    /** Runs a check while another session applies a newer answer, fetched at `fetchedAt`. */
    const checkWhileApplied = (tag: string, fetchedAt: Date) =>
      withPointLocked(
        async (waitedFor) => {
          const checked = check();
          await waitedFor((other) =>
            other.query(
              `UPDATE alert_points SET last_tag = $2, attributions = ARRAY['CMA'],
                 last_fetched_at = $3 WHERE id = $1`,
              [point, tag, fetchedAt],
            ),
          );
          return withTimeout('a point check', 10_000, checked);
        },
        { point, lock: 'FOR UPDATE' },
      );
    const lastAnswer = sql`SELECT last_tag, attributions FROM alert_points WHERE id = ${point}`;

    v.sim.addFault({ kind: 'http', status: 500, operation: 'weatherAlert' });
    try {
      const failed = await checkWhileApplied('applied meanwhile', new Date());
      expect(failed).toMatchObject({ applied: true, fetchOk: false, deliveries: 0 });
    } finally {
      v.sim.clearFaults();
    }
    expect(await queryRows(v.h.database.db, lastAnswer)).toEqual([
      { last_tag: 'applied meanwhile', attributions: ['CMA'] },
    ]);

    // A successful call made before the answer applied meanwhile was fetched: stale.
    const stale = await checkWhileApplied('fetched later', new Date(Date.now() + 60_000));
    expect(stale).toMatchObject({ applied: true, fetchOk: true, deliveries: 0 });
    expect(await queryRows(v.h.database.db, lastAnswer)).toEqual([
      { last_tag: 'fetched later', attributions: ['CMA'] },
    ]);
  });
});
