import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { queryRows } from '../db/client.js';
import { DEFAULT_DETECT_SETTINGS } from '../domain/detect.js';
import type { PipelineContext } from './context.js';
import {
  releaseOverdueCycles,
  BATCH_UNWRITTEN,
  writeDeferredMessages,
  enqueueMessage,
  isJobLive,
  type Channel,
} from '../ledger/index.js';
import {
  DEFAULT_RETENTION_BATCH,
  DEFAULT_RETENTION_MAX_BATCHES,
  pruneExpired,
  type RetentionOutcome,
} from './retention.js';

export const SWEEP_JOB = 'sweep';

export const sweepPayload = z.object({
  /** Rows due for less than this are left to the job enqueued with them. */
  graceSeconds: z.number().min(0).max(3600).optional(),
});

/**
 * Warning ids are valid at most 72 hours upstream; rows older than detection's reappear window
 * can never match again. One constant, so that pruning never removes what detection reads.
 */
const WARNING_RETENTION_HOURS = DEFAULT_DETECT_SETTINGS.reappearWindowMs / 3_600_000;
const DEFAULT_GRACE_SECONDS = 30;
const BATCH = 5000;

export interface SweepOutcome {
  requeued: number;
  /** Messages of cycles whose release job was lost, released (src/ledger/release.ts). */
  messagesReleased: number;
  pruned: number;
  cyclesClosed: number;
  /** Rows past RETENTION_DAYS removed, by table (src/pipeline/retention.ts). */
  expired: RetentionOutcome;
}

/**
 * The sweeper: Postgres is the truth, so any message that is due and has no live job
 * (Redis flushed, a process killed between commit and enqueue) gets one again
 * (docs/design.md, invariant 1), and a cycle whose messages are still collecting when they are overdue
 * is released. It also prunes warnings nobody can see again, closes cycles whose
 * checks were lost, and removes what is past RETENTION_DAYS.
 */
export async function runSweep(
  ctx: PipelineContext,
  payload: z.infer<typeof sweepPayload>,
): Promise<SweepOutcome> {
  const log = ctx.logger.child({ job: SWEEP_JOB });
  const graceSeconds = payload.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const messagesReleased = await releaseOverdueCycles(ctx, graceSeconds);
  const { requeued } = await requeueDueMessages(ctx, graceSeconds);

  const pruned = await queryRows<{ n: number }>(
    ctx.db,
    sql`WITH gone AS (
          DELETE FROM warnings
          -- A row last seen before the cut was first seen before it too: first_seen is the
          -- indexed column, as last_seen is rewritten by every check (migration 0004).
          WHERE first_seen < now() - make_interval(hours => ${WARNING_RETENTION_HOURS})
            AND last_seen < now() - make_interval(hours => ${WARNING_RETENTION_HOURS})
          RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
  );
  // A cycle whose check jobs vanished with Redis would otherwise stay "running" forever.
  const closed = await queryRows<{ n: number }>(
    ctx.db,
    sql`WITH closed AS (
          UPDATE poll_cycles SET status = 'failed', finished_at = now(),
            error = coalesce(error, 'checks did not finish within an hour')
          WHERE status = 'running' AND started_at < now() - interval '1 hour'
          RETURNING 1)
        SELECT count(*)::int AS n FROM closed`,
  );
  const expired = await pruneExpired(
    ctx.db,
    {
      days: ctx.config.retentionDays,
      batch: DEFAULT_RETENTION_BATCH,
      maxBatches: DEFAULT_RETENTION_MAX_BATCHES,
    },
    ctx.now(),
  );
  const outcome = {
    requeued,
    messagesReleased,
    pruned: pruned[0]?.n ?? 0,
    cyclesClosed: closed[0]?.n ?? 0,
    expired,
  };
  if (
    outcome.requeued ||
    outcome.messagesReleased ||
    outcome.pruned ||
    outcome.cyclesClosed ||
    Object.keys(outcome.expired).length > 0
  ) {
    log.info(outcome, 'swept');
  }
  return outcome;
}

/** A due message without a live job, given one again. */
export interface RequeuedMessage {
  id: string;
  channel: Channel;
  attempts: number;
}

/**
 * Gives every message that has been due for `graceSeconds` and has no live job a job again
 * (docs/design.md, invariant 1). Returns the due messages found, each either requeued or still carried by
 * its live job, and how many were requeued. `poll --once` runs it with no grace, so a quiet
 * window that ended while no worker ran is sent by the next run.
 */
export async function requeueDueMessages(
  ctx: PipelineContext,
  graceSeconds: number,
): Promise<{ due: RequeuedMessage[]; requeued: number }> {
  const due = await queryRows<RequeuedMessage & { first_job_id: string | null }>(
    ctx.db,
    sql`SELECT id, channel, attempts, first_job_id FROM messages
        WHERE status IN ('open', 'pending', 'retrying')
          AND next_attempt_at <= now() - make_interval(secs => ${graceSeconds})
          AND (claimed_until IS NULL OR claimed_until < now())
        ORDER BY next_attempt_at
        LIMIT ${BATCH}`,
  );
  // A first attempt travels in its planned batch job, which owns it: no other job may claim the
  // message while that job lives (a storm's backlog keeps such jobs waiting longer than the
  // grace, and they still carry it). One lookup per batch. A message that collected (quiet
  // hours, grouping) is due when its hold ends, and is found here if the delayed job that should
  // have sent it then is gone.
  const lost = new Map<string, RequeuedMessage[]>();
  const orphans: RequeuedMessage[] = [];
  const batchLive = new Map<string, boolean>();
  for (const { first_job_id: firstJob, ...row } of due) {
    if (row.attempts === 0 && firstJob) {
      let live = batchLive.get(firstJob);
      if (live === undefined) {
        live = await isJobLive(ctx.queues, row.channel, firstJob);
        batchLive.set(firstJob, live);
      }
      if (live) continue;
      lost.set(firstJob, [...(lost.get(firstJob) ?? []), row]);
    } else {
      orphans.push(row);
    }
  }
  const handedBack = await handBackLostBatches(ctx, graceSeconds);
  orphans.push(...handedBack);
  // A lost job's first attempts are handed back before they get jobs that claim them; a row
  // whose owner changed meanwhile (the cycle's release) is left to its new job.
  for (const [jobId, rows] of lost) {
    const freed = await queryRows<{ id: string }>(
      ctx.db,
      sql`UPDATE messages SET first_job_id = NULL, updated_at = now()
          WHERE id = ANY(${sql.param(rows.map((r) => r.id))}::uuid[])
            AND first_job_id = ${jobId} AND attempts = 0
          RETURNING id`,
    );
    const ids = new Set(freed.map((r) => r.id));
    orphans.push(...rows.filter((r) => ids.has(r.id)));
  }
  let requeued = 0;
  // Skips messages whose own job is still waiting or running; replaces a finished job's id.
  for (const row of orphans) if (await enqueueMessage(ctx.queues, row, row.attempts)) requeued += 1;
  return {
    due: [...due.map(({ id, channel, attempts }) => ({ id, channel, attempts })), ...handedBack],
    requeued,
  };
}

/**
 * The first-attempt batches of deferred messages (src/ledger/deferred.ts) older than
 * the grace: a batch whose messages all have rows is done and removed; one whose job is gone
 * (Redis flushed, the job failed for good) has its unwritten messages written as pending and
 * owned by nobody, and returns them to be given jobs of their own.
 */
async function handBackLostBatches(
  ctx: PipelineContext,
  graceSeconds: number,
): Promise<RequeuedMessage[]> {
  const batches = await queryRows<{ job_id: string; channel: Channel; unwritten: string[] }>(
    ctx.db,
    sql`SELECT b.job_id, b.channel, ARRAY(${BATCH_UNWRITTEN})::text[] AS unwritten
        FROM first_attempt_batches b
        WHERE b.created_at <= now() - make_interval(secs => ${graceSeconds})
        ORDER BY b.created_at
        LIMIT ${BATCH}`,
  );
  const done: string[] = [];
  const handedBack: RequeuedMessage[] = [];
  for (const batch of batches) {
    if (batch.unwritten.length > 0) {
      if (await isJobLive(ctx.queues, batch.channel, batch.job_id)) continue;
      const written = await writeDeferredMessages(ctx.db, batch.unwritten);
      handedBack.push(...written.map((id) => ({ id, channel: batch.channel, attempts: 0 })));
    }
    done.push(batch.job_id);
  }
  if (done.length > 0) {
    // Only a batch with nothing left unwritten goes, read again here: a message written by
    // nobody is never without its batch.
    await ctx.db.execute(sql`
      DELETE FROM first_attempt_batches b
      WHERE b.job_id = ANY(${sql.param(done)}::text[]) AND NOT EXISTS (${BATCH_UNWRITTEN})`);
  }
  return handedBack;
}
