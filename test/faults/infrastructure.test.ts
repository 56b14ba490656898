import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { deletePrefixKeys } from '../../src/runtime/queues.js';
import { ADMIN_URL } from '../support/db.js';
import { report, startFaultRun, waitUntil, type FaultRun } from './support/harness.js';
import { expectNothingLostOrSplit } from './support/expect.js';

/**
 * Redis and Postgres misbehave under a running worker: Redis forgets every key of the
 * deployment or drops its connections, Postgres kills the worker's sessions mid-transaction.
 * Postgres is the truth (docs/design.md, invariant 1): the worker carries on and nothing is lost.
 */

const STORM = { places: 24, emailSubscribers: 24, webhookSubscribers: 8 } as const;

async function sentCount(r: FaultRun): Promise<number> {
  return (await r.ledger()).filter((row) => row.status === 'sent').length;
}

describe('Redis and Postgres failing under a running worker', () => {
  let run: FaultRun | undefined;
  afterEach(async () => {
    await run?.close();
    run = undefined;
  });

  it('Redis losing every key of the deployment mid-cycle loses nothing, and polling resumes', async () => {
    const seed = 7101;
    run = await startFaultRun(seed, STORM);
    const r = run;
    r.showPhase(0);
    r.startWorker();
    await waitUntil(async () => (await sentCount(r)) >= 20, 'first deliveries sent');

    // This test's prefix only: the Redis server is shared (never FLUSHALL).
    const deleted = await deletePrefixKeys(r.redis(), r.h.prefix);
    const sentAtFlush = await sentCount(r);

    // The schedulers went with the keys: the worker must notice and poll again by itself.
    const listsAtFlush = r.h.sim.requests().byOperation.warningList;
    await waitUntil(
      () => r.h.sim.requests().byOperation.warningList >= listsAtFlush + 2,
      'polling resumed after Redis lost its keys',
      45_000,
      500,
    );
    await r.waitForPhase(0);
    await r.settle();
    const outcome = await r.outcome();
    report('Redis keys of the deployment deleted mid-cycle', outcome, { deleted, sentAtFlush });
    expect(deleted).toBeGreaterThan(0);
    expect(sentAtFlush).toBeLessThan(outcome.owed);
    expectNothingLostOrSplit(outcome);
  });

  it('Redis losing every key while cycle emails collect loses none of them', async () => {
    // The email default groups by cycle: the flush takes the checks still queued, the delayed
    // job that bounds each cycle email's wait and the release's batch jobs. The sweeper must
    // find the emails from the ledger alone.
    const seed = 7104;
    run = await startFaultRun(seed, { ...STORM, emailGroup: 'cycle' });
    const r = run;
    r.showPhase(0);
    r.startWorker();
    await waitUntil(async () => (await r.ledger()).length >= 20, 'first notifications written');

    const deleted = await deletePrefixKeys(r.redis(), r.h.prefix);
    const atFlush = await r.ledger();
    await r.waitForPhase(0, 60_000);
    await r.settle({ timeoutMs: 120_000 });
    const outcome = await r.outcome();
    const grouped = (await r.ledger()).filter(
      (row) => row.channel === 'email' && row.message_id !== row.id,
    ).length;
    report('Redis keys deleted while cycle emails collect', outcome, {
      deleted,
      writtenAtFlush: atFlush.length,
      sentAtFlush: atFlush.filter((row) => row.status === 'sent').length,
      grouped,
    });
    expect(deleted).toBeGreaterThan(0);
    expect(grouped).toBeGreaterThan(0);
    expectNothingLostOrSplit(outcome);
  });

  it('Redis connections killed mid-cycle lose nothing', async () => {
    const seed = 7102;
    run = await startFaultRun(seed, STORM);
    const r = run;
    r.showPhase(0);
    r.startWorker();
    await waitUntil(async () => (await sentCount(r)) >= 20, 'first deliveries sent');

    const redis = r.redis();
    let killed = 0;
    for (let round = 0; round < 3; round += 1) {
      // BullMQ names its connections "<prefix>:<queue>": this test's clients only.
      const clients = String(await redis.client('LIST'))
        .split('\n')
        .map((line) => /(?:^| )id=(\d+) .* name=(\S*)/.exec(line))
        .filter((m): m is RegExpExecArray => m !== null && m[2]!.startsWith(`${r.h.prefix}:`));
      for (const m of clients) {
        killed += Number(await redis.client('KILL', 'ID', m[1]!));
      }
      await sleep(1500);
    }
    await r.waitForPhase(0);
    await r.settle();
    const outcome = await r.outcome();
    report('Redis connections of the worker killed (CLIENT KILL) 3 times mid-cycle', outcome, {
      killed,
    });
    expect(killed).toBeGreaterThan(0);
    expectNothingLostOrSplit(outcome);
  });

  // v7, and Weather Alert v1, whose checks lock a point and its alerts in other statements.
  for (const { label, source, seed } of [
    { label: '', source: undefined, seed: 7103 },
    { label: 'v1: ', source: 'v1', seed: 7105 },
  ] as const) {
    it(`${label}Postgres sessions terminated mid-transaction lose nothing`, async () => {
      run = await startFaultRun(seed, { ...STORM, ...(source ? { source } : {}) });
      const r = run;
      r.showPhase(0);
      r.startWorker();
      await waitUntil(async () => (await sentCount(r)) >= 1, 'first delivery sent');

      const admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      let terminated = 0;
      let inTransaction = 0;
      try {
        for (let round = 0; round < 8; round += 1) {
          // The worker's sessions only ("qwn"); the harness's own pool is "qwn test".
          const { rows } = await admin.query<{ state: string | null; ok: boolean }>(
            `SELECT state, pg_terminate_backend(pid) AS ok FROM pg_stat_activity
           WHERE datname = $1 AND application_name = 'qwn' AND pid <> pg_backend_pid()`,
            [r.h.database.name],
          );
          terminated += rows.filter((row) => row.ok).length;
          inTransaction += rows.filter((row) => row.state !== 'idle').length;
          await sleep(400 + round * 150);
        }
      } finally {
        await admin.end();
      }
      await r.waitForPhase(0);
      await r.settle();
      const outcome = await r.outcome();
      report(`${label}Postgres sessions of the worker terminated 8 times mid-cycle`, outcome, {
        terminated,
        activeOrInTransaction: inTransaction,
      });
      expect(terminated).toBeGreaterThan(0);
      expectNothingLostOrSplit(outcome);
    });
  }
});
