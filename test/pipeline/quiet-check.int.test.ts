import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { CycleCounter } from '../../src/detection/cycle-counters.js';
import { QuietChecks } from '../../src/detection/quiet-check.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { waitForLockWait, writeBeforeFirstTransaction } from '../support/db.js';
import { newCycle, startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * A check whose answer changes nothing writes its bookkeeping without the place lock, in one
 * statement that applies only to the place row it read (src/detection/apply-check.ts, `checkQuietly`). The
 * cycle counters of many checks go out together (CycleCounter).
 */
describe('quiet checks and cycle counters', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A watched place whose one warning a full cycle has already detected and delivered. */
  async function warnedOnce(place: string, name: string, path: string, seq: number) {
    await h.addPlace(place, name);
    await h.addWebhookSubscriber(path, [place]);
    h.sim.setWarnings(place, [
      v7Warning({ locationId: place, seq, typeCode: '1003', level: '黄色' }),
    ]);
    expect((await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 })).ok).toBe(true);
  }

  it('reads the tracked warnings again under the lock when another check wrote after its unlocked read', async () => {
    // A warning missed once; this check misses it again, which would end it (two misses). Between
    // the check's unlocked read and its lock, a check of an earlier answer (fetched before this
    // one) that still had the warning records it as seen. Reusing the unlocked read would end
    // the warning on a stale miss count: a false all-clear.
    const place = '101200601';
    await h.addPlace(place, '黄石');
    await h.addWebhookSubscriber('/hs', [place]);
    h.sim.setWarnings(place, [
      v7Warning({ locationId: place, seq: 61, typeCode: '1003', level: '黄色' }),
    ]);
    expect((await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 })).ok).toBe(true);
    h.sim.setWarnings(place, []);
    expect(
      (await runCheck(rt.ctx, { cycleId: await newCycle(h.database.db), placeId: place })).applied,
    ).toBe(true);
    const [missed] = await queryRows<{ misses: number; state: string }>(
      h.database.db,
      sql`SELECT misses, state FROM warnings WHERE place_id = ${place}`,
    );
    expect(missed).toEqual({ misses: 1, state: 'open' });

    const started = new Date();
    // The earlier answer's check: seen again, its fetch older than this check's.
    const { db, interleaved } = writeBeforeFirstTransaction(rt.ctx.db, async () => {
      await h.database.db.execute(
        sql`UPDATE warnings SET misses = 0, last_seen = now() WHERE place_id = ${place}`,
      );
      await h.database.db.execute(sql`
        UPDATE places SET last_fetched_at = ${new Date(started.getTime() - 1000)}
        WHERE id = ${place}`);
    });
    const outcome = await runCheck(
      { ...rt.ctx, db },
      { cycleId: await newCycle(h.database.db), placeId: place },
    );
    expect(interleaved()).toBe(true);
    expect(outcome.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    const [after] = await queryRows<{ misses: number; state: string }>(
      h.database.db,
      sql`SELECT misses, state FROM warnings WHERE place_id = ${place}`,
    );
    // Seen after this check's cycle began: its answer is no miss at all (countsAsMiss). On the
    // unlocked read's count it would have been the second miss, and an end.
    expect(after).toEqual({ misses: 0, state: 'open' });
  });

  it('writes only last-seen times and the place row, one statement after one read', async () => {
    const place = '101200101';
    await warnedOnce(place, '武汉', '/wh', 1);
    const before = await queryRows<{ last_seen: Date }>(
      h.database.db,
      sql`SELECT last_seen FROM warnings WHERE place_id = ${place}`,
    );

    const cycleId = await newCycle(h.database.db);
    const outcome = await runCheck(rt.ctx, { cycleId, placeId: place });
    expect(outcome).toEqual({
      applied: true,
      fetchOk: true,
      events: { new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: 0,
      skippedRecords: 0,
    });
    const [after] = await queryRows<{ last_seen: Date; last_cycle_id: string }>(
      h.database.db,
      sql`SELECT w.last_seen, p.last_cycle_id FROM warnings w JOIN places p ON p.id = w.place_id
          WHERE w.place_id = ${place}`,
    );
    expect(after!.last_cycle_id).toBe(cycleId);
    expect(new Date(after!.last_seen).getTime()).toBeGreaterThan(
      new Date(before[0]!.last_seen).getTime(),
    );
    // Counted on its cycle row (by the CycleCounter), which closes the one-check cycle.
    const [cycle] = await queryRows<{ checked: number; status: string }>(
      h.database.db,
      sql`SELECT checked, status FROM poll_cycles WHERE id = ${cycleId}`,
    );
    expect(cycle).toEqual({ checked: 1, status: 'done' });
    // The same cycle again is a re-run: nothing applied twice.
    expect((await runCheck(rt.ctx, { cycleId, placeId: place })).applied).toBe(false);
    const [again] = await queryRows<{ checked: number }>(
      h.database.db,
      sql`SELECT checked FROM poll_cycles WHERE id = ${cycleId}`,
    );
    expect(again!.checked).toBe(1);
  });

  it('falls back to the locked check when another check changed the place after its read', async () => {
    const place = '101190101';
    await warnedOnce(place, '南京', '/nj', 2);

    // Another transaction changes what is stored for the place and holds the row meanwhile:
    // the warning is gone from the store, so the same answer now means a new warning.
    const other = new pg.Client({ connectionString: h.database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('DELETE FROM events WHERE place_id = $1', [place]);
      await other.query('DELETE FROM warnings WHERE place_id = $1', [place]);
      await other.query('UPDATE places SET last_ok_at = now() WHERE id = $1', [place]);

      const check = runCheck(rt.ctx, { cycleId: await newCycle(h.database.db), placeId: place });
      // Commit only once the check waits for the row: it has read the old state by then.
      await waitForLockWait(h.database.url, 'a check waiting for the place row');
      await other.query('COMMIT');
      const outcome = await check;
      expect(outcome.events.new).toBe(1);
      expect(outcome.deliveries).toBe(1);
    } finally {
      await other.end();
    }
    const rows = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM warnings WHERE place_id = ${place}`,
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('counts checks made together in one statement and closes the cycle', async () => {
    const cycleId = await newCycle(h.database.db, 40);
    let statements = 0;
    const counter = new CycleCounter((statement, values) => {
      statements += 1;
      return statement.run(h.database.db, values);
    });
    const at = new Date('2026-07-01T08:00:00Z');
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        counter.count({
          cycleId,
          fetchOk: i % 10 !== 0,
          events: {
            new: i === 3 ? 2 : 0,
            update: 0,
            cancel: i === 5 ? 1 : 0,
            expired: 0,
            resumed: 0,
          },
          deliveries: i === 3 ? 7 : 0,
          skippedRecords: i === 7 ? 1 : 0,
          englishCalls: i % 4 === 0 ? 1 : 0,
          now: new Date(at.getTime() + i * 1000),
        }),
      ),
    );
    expect(statements).toBe(1);
    const [row] = await queryRows<Record<string, unknown>>(
      h.database.db,
      sql`SELECT status, checked, upstream_calls, upstream_errors, events_new, events_cancel,
            deliveries_created, finished_at, skipped_records, english_calls
          FROM poll_cycles WHERE id = ${cycleId}`,
    );
    expect(row).toMatchObject({
      status: 'done',
      checked: 40,
      upstream_calls: 40,
      upstream_errors: 4,
      skipped_records: 1,
      english_calls: 10,
      events_new: 2,
      events_cancel: 1,
      deliveries_created: 7,
    });
    expect(new Date(row!.finished_at as Date).getTime()).toBe(at.getTime() + 39_000);
  });

  it('reads and writes the checks made together in one statement each', async () => {
    const places = Array.from({ length: 10 }, (_, i) => `1012106${String(i).padStart(2, '0')}`);
    for (const place of places) await h.addPlace(place, `place ${place}`);
    let statements = 0;
    const checks = new QuietChecks('places', (statement, values) => {
      statements += 1;
      return statement.run(h.database.db, values);
    });
    const windowStart = new Date(Date.now() - 3600_000);
    const read = await Promise.all(
      [...places, 'no-such-place'].map((place) => checks.read(place, windowStart)),
    );
    expect(statements).toBe(1);
    expect(read.at(-1)).toBeNull();
    expect(read.slice(0, -1).every((r) => r !== null && r.last_cycle_id === null)).toBe(true);

    const cycleId = await newCycle(h.database.db);
    const now = new Date();
    const write = (place: string, version: string) =>
      checks.write({
        cycleId,
        key: place,
        fetchOk: true,
        fetchStartedAt: now,
        now,
        version,
        seen: [],
      });
    statements = 0;
    const written = await Promise.all([
      ...places.slice(0, 9).map((place, i) => write(place, read[i]!.version)),
      // A place row changed since its read, and a second write of one place in the same batch:
      // both are left to the locked path.
      write(places[9]!, '1'),
      write(places[0]!, read[0]!.version),
    ]);
    expect(statements).toBe(1);
    expect(written).toEqual([...places.slice(0, 9).map(() => true), false, false]);
    const booked = await queryRows<{ id: string }>(
      h.database.db,
      sql`SELECT id FROM places WHERE last_cycle_id = ${cycleId} ORDER BY id`,
    );
    expect(booked.map((r) => r.id)).toEqual(places.slice(0, 9));
  });
});
