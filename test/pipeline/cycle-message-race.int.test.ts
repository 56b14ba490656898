import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { listDeliveries } from '../../src/ledger/list.js';
import { redeliver } from '../../src/ledger/redeliver.js';
import {
  releaseCycleMessages,
  releaseJobId,
  scheduleCycleReleases,
} from '../../src/ledger/release.js';
import {
  cycleMessageId,
  insertNotifications,
  type InsertedNotifications,
} from '../../src/ledger/record.js';
import { deliverJobId } from '../../src/runtime/queues.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { jobDefinition } from '../../src/pipeline/workers.js';
import { waitForLockWait } from '../support/db.js';
import {
  deliverOne,
  insertCycleEvent,
  startPipelineHarness,
  type PipelineHarness,
} from '../support/pipeline.js';

/**
 * A cycle message collects from its first notification: checks add notifications that name it,
 * under a share of the cycle's row, and the release makes it due once no check is adding any
 * more (src/ledger/release.ts). What the races between them must never do: strand a
 * notification in a message nobody writes, put one in a message already sent, or make the
 * sixteen checks of a storm wait for one another (a storm's cycle once went from 29 s to 155 s
 * that way).
 */
describe('a cycle message while it collects', () => {
  let h: PipelineHarness;
  let runtime: Runtime;
  const place = '101010100';
  let cycleId: string;
  let subscriber: string;
  let eventId: number;

  beforeAll(async () => {
    h = await startPipelineHarness();
    runtime = h.runtime();
    await h.addPlace(place, '北京');
    subscriber = await h.addEmailSubscriber('desk@example.com', [place]);
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(async () => {
    ({ cycleId, eventId } = await insertCycleEvent(h.database.db, place));
  });

  /** A check that adds one cycle notification and stays open until `commit` resolves. */
  function check(warning: string, commit: Promise<void> = Promise.resolve()) {
    // Warning ids of this test's own: a notification is one per subscriber, warning and type.
    const warningId = `${cycleId}-${warning}`;
    let added!: (inserted: InsertedNotifications) => void;
    const addedNow = new Promise<InsertedNotifications>((resolve) => (added = resolve));
    const committed = h.database.db.transaction(async (tx) => {
      const inserted = await insertNotifications(
        tx,
        [
          {
            subscriberId: subscriber,
            eventId,
            cycleId,
            placeId: place,
            warningId,
            eventType: 'new',
            occurrence: 0,
            channel: 'email',
            scheduled: true,
            cycleOnly: true,
            level: '黄色',
            supersedes: [],
            chain: [],
          },
        ],
        { key: `${cycleId}_${place}_${warningId}`, now: new Date() },
      );
      added(inserted);
      await commit;
      return inserted;
    });
    return { added: addedNow, committed };
  }

  const messageOf = async (warning: string) => {
    const [row] = await queryRows<{ message_id: string; status: string; row: string | null }>(
      h.database.db,
      sql`SELECT d.message_id, coalesce(m.status, 'open') AS status, m.status AS row
          FROM deliveries d LEFT JOIN messages m ON m.id = d.message_id
          WHERE d.subscriber_id = ${subscriber} AND d.warning_id = ${`${cycleId}-${warning}`}`,
    );
    return row;
  };

  it('joins without a row or a lock of the subscriber, beside the other checks and the counters', async () => {
    let commitFirst!: () => void;
    const first = check('w1', new Promise((resolve) => (commitFirst = resolve)));
    const inserted = await first.added;
    expect(inserted.count).toBe(1);
    expect(inserted.messages).toEqual([]);
    expect(inserted.releases).toEqual([{ cycleId, dueAt: expect.any(Date) as unknown }]);
    // The scheduler's subscriber locks deadlocked concurrent checks: none is taken.
    const locks = await queryRows<{ n: number }>(
      h.database.db,
      // This test's database only: other files run beside it on the same server.
      sql`SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory'
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    expect(locks[0]!.n).toBe(0);
    try {
      // While the first check is open: a second check adds to the same message, and the
      // cycle's counters update its row, neither waiting (a lock that made them wait fails the
      // statement here rather than hanging).
      const other = new pg.Client({ connectionString: h.database.url });
      await other.connect();
      try {
        await other.query(`SET lock_timeout = '2s'`);
        await other.query(`UPDATE poll_cycles SET checked = checked + 1 WHERE id = $1`, [cycleId]);
      } finally {
        await other.end();
      }
      const second = await check('w2').committed;
      expect(second.count).toBe(1);
    } finally {
      commitFirst();
    }
    await first.committed;
    const message = cycleMessageId(subscriber, cycleId);
    expect(await messageOf('w1')).toEqual({ message_id: message, status: 'open', row: null });
    expect(await messageOf('w2')).toEqual({ message_id: message, status: 'open', row: null });
  });

  it('is released only after the checks still adding to it, and carries what they added', async () => {
    let commitCheck!: () => void;
    const adding = check('w1', new Promise((resolve) => (commitCheck = resolve)));
    await adding.added;
    const released = releaseCycleMessages(runtime.ctx, cycleId);
    await waitForLockWait(h.database.url, 'the release waiting for the check');
    commitCheck();
    await adding.committed;
    expect(await released).toBe(1);
    const message = cycleMessageId(subscriber, cycleId);
    // Its row written, pending, owned by a first-attempt batch job of the release's.
    expect(await messageOf('w1')).toEqual({
      message_id: message,
      status: 'pending',
      row: 'pending',
    });
    const owners = await queryRows<{ job: string; attempts: number }>(
      h.database.db,
      sql`SELECT first_job_id AS job, attempts FROM messages WHERE id = ${message}`,
    );
    expect(owners).toEqual([{ job: expect.stringMatching(/^rel_/) as unknown, attempts: 0 }]);
    // Released once: a second release writes nothing.
    expect(await releaseCycleMessages(runtime.ctx, cycleId)).toBe(0);
    // Its batch job sends it and carries what the check added.
    expect(await deliverOne(runtime.ctx, message)).toBe('sent');
    expect(await messageOf('w1')).toEqual({ message_id: message, status: 'sent', row: 'sent' });
    expect(await deliverOne(runtime.ctx, message)).toBe('skipped');
    const mails = h.smtp.messages.filter((m) => m.messageId?.includes(message));
    expect(mails).toHaveLength(1);
  });

  it('reads as held while it collects, and its job releases it when its 60 s are up', async () => {
    const inserted = await check('w1').committed;
    const message = cycleMessageId(subscriber, cycleId);
    const listed = (await listDeliveries(h.database.db, { status: 'held' })).filter(
      (d) => d.messageId === message,
    );
    expect(listed).toMatchObject([{ status: 'held', hold: 'cycle', attempts: 0 }]);
    const notification = listed[0]!.id;
    // Still collecting: a redelivery would send it before its cycle is done.
    const asked = await redeliver(runtime.ctx, { ids: [notification] });
    expect(asked).toEqual({
      requeued: [],
      skipped: [{ id: message, reason: 'held', detail: expect.any(String) as unknown }],
      unknown: [],
    });

    // Every check that adds to it asks for the same job, delayed until the bound.
    await scheduleCycleReleases(runtime.ctx, inserted.releases);
    await scheduleCycleReleases(runtime.ctx, [{ cycleId, dueAt: new Date(Date.now() + 5000) }]);
    const job = await runtime.ctx.queues.poll.getJob(releaseJobId(cycleId));
    expect(await job?.getState()).toBe('delayed');
    expect(job!.opts.delay).toBeGreaterThan(50_000);
    expect(job!.opts.delay).toBeLessThanOrEqual(60_000);
    expect(await runtime.ctx.queues.poll.getJobCounts('delayed')).toEqual({ delayed: 1 });

    // Run as the poll queue's worker runs it.
    const poll = jobDefinition('poll');
    expect(await poll.run(runtime.ctx, poll.payload.parse(job!.data), job!, undefined)).toBe(1);
    expect(await messageOf('w1')).toEqual({
      message_id: message,
      status: 'pending',
      row: 'pending',
    });
    const heldNow = await listDeliveries(h.database.db, { status: 'held' });
    expect(heldNow.filter((d) => d.messageId === message)).toEqual([]);
    await job!.remove();
  });

  it('is given a job by the sweeper when its batch job is lost, and sent once', async () => {
    await check('w1').committed;
    expect(await releaseCycleMessages(runtime.ctx, cycleId)).toBe(1);
    const message = cycleMessageId(subscriber, cycleId);
    // Redis loses the release's batch job.
    await runtime.ctx.queues.deliverEmail.obliterate({ force: true });
    await runSweep(runtime.ctx, { graceSeconds: 0 });
    // Given a job of its own (the earlier tests' released messages lost theirs too).
    const job = await runtime.ctx.queues.deliverEmail.getJob(deliverJobId(message, 0));
    expect(job?.data).toEqual({ messageIds: [message] });
    const [row] = await queryRows<{
      status: string;
      attempts: number;
      hold: string;
      cycle: string;
    }>(
      h.database.db,
      sql`SELECT status, attempts, hold, cycle_id AS cycle FROM messages WHERE id = ${message}`,
    );
    expect(row).toEqual({ status: 'pending', attempts: 0, hold: 'cycle', cycle: cycleId });
    expect(await deliverOne(runtime.ctx, message)).toBe('sent');
    expect(await deliverOne(runtime.ctx, message)).toBe('skipped');
    expect(h.smtp.messages.filter((m) => m.messageId?.includes(message))).toHaveLength(1);
  });

  it('is neither sent nor requeued while it collects, however overdue, until its release', async () => {
    await check('w1').committed;
    const message = cycleMessageId(subscriber, cycleId);
    // Its release job is lost and its 60 s are long up.
    await h.database.db.execute(sql`
      UPDATE deliveries SET created_at = now() - interval '1 hour' WHERE message_id = ${message}`);
    await runtime.ctx.queues.poll.obliterate({ force: true });
    const before = h.smtp.messages.length;
    // A job naming it, and the recovery of due messages: nothing takes it from its cycle.
    expect(await deliverOne(runtime.ctx, message)).toBe('skipped');
    const { requeueDueMessages } = await import('../../src/ledger/recover.js');
    expect((await requeueDueMessages(runtime.ctx, 0)).due.map((m) => m.id)).not.toContain(message);
    expect(await messageOf('w1')).toEqual({ message_id: message, status: 'open', row: null });
    expect(h.smtp.messages.length).toBe(before);
    // The release (the sweeper's, for a cycle whose release job is lost) is what makes it due.
    expect(await releaseCycleMessages(runtime.ctx, cycleId)).toBe(1);
    expect(await deliverOne(runtime.ctx, message)).toBe('sent');
    expect(h.smtp.messages.filter((m) => m.messageId?.includes(message))).toHaveLength(1);
  });

  it('leaves a check that comes during the release to a message of its own', async () => {
    await check('w1').committed;
    // The release has stopped the collecting and is writing the message, not yet committed.
    const release = new pg.Client({ connectionString: h.database.url });
    await release.connect();
    let late: Promise<InsertedNotifications>;
    try {
      await release.query('BEGIN');
      await release.query(`SELECT 1 FROM poll_cycles WHERE id = $1 FOR UPDATE`, [cycleId]);
      await release.query(`UPDATE poll_cycles SET released_at = now() WHERE id = $1`, [cycleId]);
      late = check('w2').committed;
      await waitForLockWait(h.database.url, 'the check waiting for the release');
      await release.query('COMMIT');
    } finally {
      await release.end();
    }
    const inserted = await late;
    expect(inserted.count).toBe(1);
    expect(inserted.releases).toEqual([]);
    // Placed by the scheduler in a message written at once, not the one released.
    expect(inserted.messages).toHaveLength(1);
    const collected = cycleMessageId(subscriber, cycleId);
    expect((await messageOf('w1'))?.message_id).toBe(collected);
    const own = await messageOf('w2');
    expect(own?.message_id).toBe(inserted.messages[0]!.id);
    expect(own?.message_id).not.toBe(collected);
    expect(own?.status).not.toBeNull();
  });
});
