import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { queryRows } from '../db/client.js';
import { DEFAULT_DETECT_SETTINGS } from '../domain/detect.js';
import type { PipelineContext } from '../runtime/context.js';
import { releaseOverdueCycles, requeueDueMessages } from '../ledger/index.js';
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

  const now = ctx.now();
  const pruned = await queryRows<{ n: number }>(
    ctx.db,
    sql`WITH gone AS (
          DELETE FROM warnings
          -- A row last seen before the cut was first seen before it too: first_seen is the
          -- indexed column, as last_seen is rewritten by every check (migration 0004).
          WHERE first_seen < ${now}::timestamptz - make_interval(hours => ${WARNING_RETENTION_HOURS})
            AND last_seen < ${now}::timestamptz - make_interval(hours => ${WARNING_RETENTION_HOURS})
          RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
  );
  // A cycle whose check jobs vanished with Redis would otherwise stay "running" forever.
  const closed = await queryRows<{ n: number }>(
    ctx.db,
    sql`WITH closed AS (
          UPDATE poll_cycles SET status = 'failed', finished_at = ${now},
            error = coalesce(error, 'checks did not finish within an hour')
          WHERE status = 'running' AND started_at < ${now}::timestamptz - interval '1 hour'
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
