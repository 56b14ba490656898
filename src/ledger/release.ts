import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { queryRows, transaction } from '../db/client.js';
import type { PipelineContext } from '../runtime/context.js';
import { enqueueFirstAttempts, firstAttemptJob, removeHeldJobs } from './dispatch.js';
import { createdInCycle, IN_COLLECTING_MESSAGE } from './lookups.js';
import type { Channel, CycleRelease } from './message.js';

/**
 * A `"cycle"` message collects what one poll cycle creates for its subscriber and goes when the
 * cycle's checks are done, or 60 s after its first notification if they are lost or slow
 * (docs/messages.md). Its notifications name it (`cycleMessageId`) and it has no row while it
 * collects; the release marks the cycle released, so that no check adds to it any more, and
 * writes its row, due and planned into a first-attempt batch whose job owns it, as a check's jobs
 * own its direct messages. A message the scheduler made for a subscriber who groups by cycle and
 * keeps quiet hours or an hourly limit has its row, open, from the start: the release makes it
 * due at once.
 *
 * Idempotent: a second release of the cycle writes nothing, and leaves a message already due
 * or taken alone.
 */
export async function releaseCycleMessages(ctx: PipelineContext, cycleId: string): Promise<number> {
  // One job per batch, as a check's own first attempts go (`firstAttemptBatch`): a storm's
  // grouped emails released one job each cost their own Redis round trips per message. The
  // batch job's id goes on the message, so the sweeper asks that job before requeueing.
  const now = ctx.now();
  const released = await transaction(ctx.db, async (tx) => {
    // Waits for every check still adding to the cycle's messages (they hold the row FOR KEY
    // SHARE, which an update of the row alone would not wait for); a check that comes after
    // finds it released.
    const [cycle] = await queryRows<{ released: boolean }>(
      tx,
      sql`SELECT released_at IS NOT NULL AS released FROM poll_cycles
          WHERE id = ${cycleId} FOR UPDATE`,
    );
    let collected: ReleasedRow[] = [];
    if (cycle && !cycle.released) {
      await tx.execute(sql`UPDATE poll_cycles SET released_at = ${now} WHERE id = ${cycleId}`);
      collected = await queryRows<ReleasedRow>(
        tx,
        sql`WITH collected AS (
              SELECT d.message_id AS id, d.subscriber_id, d.channel, min(d.created_at) AS created_at
              FROM deliveries d
              WHERE ${createdInCycle(cycleId)} AND ${IN_COLLECTING_MESSAGE}
              GROUP BY d.message_id, d.subscriber_id, d.channel),
            batched AS (
              SELECT c.*,
                ${firstAttemptJob(`rel_${randomUUID()}_`, sql`c.channel`, sql`c.id`)} AS job
              FROM collected c)
            INSERT INTO messages (id, subscriber_id, channel, status, hold, cycle_id,
              next_attempt_at, first_job_id, created_at, updated_at)
            SELECT id, subscriber_id, channel, 'pending', 'cycle', ${cycleId}, ${now}, job,
              created_at, ${now}
            FROM batched
            ORDER BY id
            RETURNING id, channel, first_job_id, NULL::text AS held_job`,
      );
    }
    const scheduled = await queryRows<ReleasedRow>(
      tx,
      sql`WITH due AS (
            SELECT id, channel, first_job_id AS held_job FROM messages
            WHERE status = 'open' AND hold = 'cycle' AND cycle_id = ${cycleId}
              AND next_attempt_at > ${now}
            FOR UPDATE),
          batched AS (
            SELECT id, held_job,
              ${firstAttemptJob(`rels_${randomUUID()}_`, sql`channel`, sql`id`)} AS job
            FROM due)
          -- It stops collecting here, so its batch job owns its first attempt and sends it
          -- with no claim write (FIRST_ATTEMPT_OWNED). The row lock above waited for every
          -- check still adding to it.
          UPDATE messages m SET status = 'pending', next_attempt_at = ${now}, updated_at = ${now},
            first_job_id = b.job
          FROM batched b WHERE m.id = b.id
          RETURNING m.id, m.channel, m.first_job_id, b.held_job`,
    );
    return [...collected, ...scheduled];
  });
  const held = new Map<string, Channel>();
  for (const m of released) if (m.held_job) held.set(m.held_job, m.channel);
  await enqueueFirstAttempts(
    ctx.queues,
    released.map((m) => ({ id: m.id, channel: m.channel, firstJobId: m.first_job_id, dueAt: now })),
    now,
  );
  await removeHeldJobs(
    ctx.queues,
    [...held].map(([jobId, channel]) => ({ jobId, channel })),
  );
  return released.length;
}

interface ReleasedRow {
  id: string;
  channel: Channel;
  first_job_id: string;
  held_job: string | null;
}

/** The job that releases a cycle's messages when their 60 s are up, if its end has not. */
export const releasePayload = z.object({ releaseCycle: z.string().uuid() });

/** One per cycle: every check that adds to the cycle's messages asks for the same job. */
export const releaseJobId = (cycleId: string) => `release_${cycleId}`;

/** Cycles this process has asked a release job for; the oldest are forgotten. */
const asked = new WeakMap<PipelineContext, Set<string>>();
const ASKED_KEPT = 64;

/**
 * Asks for the release job of each cycle a check added to, delayed until its due time. The
 * first ask wins (BullMQ ignores a job id it holds); a process asks once per cycle, not once per
 * check. A job lost with Redis is made up for by the sweeper (`releaseOverdueCycles`).
 */
export async function scheduleCycleReleases(
  ctx: PipelineContext,
  releases: readonly CycleRelease[],
): Promise<void> {
  let mine = asked.get(ctx);
  if (!mine) {
    mine = new Set();
    asked.set(ctx, mine);
  }
  for (const { cycleId, dueAt } of releases) {
    if (mine.has(cycleId)) continue;
    await ctx.queues.poll.add(
      'release',
      { releaseCycle: cycleId } satisfies z.infer<typeof releasePayload>,
      { jobId: releaseJobId(cycleId), delay: Math.max(0, dueAt.getTime() - ctx.now().getTime()) },
    );
    mine.add(cycleId);
    if (mine.size > ASKED_KEPT) mine.delete(mine.values().next().value!);
  }
}

/**
 * Releases every cycle that still collects `graceSeconds` after its messages were due: their
 * release job was lost (Redis flushed) or failed for good. A cycle's messages are due 60 s after
 * its first notification at the latest, so after its start plus that.
 */
export async function releaseOverdueCycles(
  ctx: PipelineContext,
  graceSeconds: number,
): Promise<number> {
  const overdue = await queryRows<{ id: string }>(
    ctx.db,
    sql`SELECT id FROM poll_cycles
        WHERE released_at IS NULL
          AND started_at <= ${ctx.now()}::timestamptz - make_interval(secs => ${graceSeconds + 60})
        ORDER BY started_at`,
  );
  let released = 0;
  for (const { id } of overdue) released += await releaseCycleMessages(ctx, id);
  return released;
}
