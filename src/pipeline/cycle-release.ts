import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { PipelineContext } from './context.js';
import {
  enqueueFirstAttempts,
  firstAttemptJob,
  removeHeldJobs,
  type Channel,
} from './deliver-queues.js';

/**
 * A `"cycle"` message collects what one poll cycle creates for its subscriber and goes when the
 * cycle's checks are done (INTERFACE §6). It was created due 60 s after its first notification,
 * the bound that holds when checks are lost or slow; the cycle's end makes it due at once and
 * closes it. Idempotent: a message already due or taken is left alone.
 */
export async function releaseCycleMessages(ctx: PipelineContext, cycleId: string): Promise<number> {
  // One job per batch, as a check's own first attempts go (FIRST_ATTEMPT_BATCH): a storm's
  // grouped emails released one job each cost their own Redis round trips per message. The
  // batch job's id goes on the message, so the sweeper asks that job before requeueing.
  const released = await queryRows<{
    id: string;
    channel: Channel;
    first_job_id: string;
    held_job: string | null;
  }>(
    ctx.db,
    sql`WITH due AS (
          SELECT id, channel, first_job_id AS held_job FROM messages
          WHERE status = 'open' AND hold = 'cycle' AND cycle_id = ${cycleId}
            AND next_attempt_at > now()
          FOR UPDATE),
        batched AS (
          SELECT id, held_job,
            ${firstAttemptJob(`rel_${randomUUID()}_`, sql`channel`, sql`id`)} AS job
          FROM due)
        -- It stops collecting here, so its batch job owns its first attempt and sends it with
        -- no claim write (FIRST_ATTEMPT_OWNED). The row lock above waited for every check still
        -- adding to it; a notification of the cycle that comes later is placed as a late one.
        UPDATE messages m SET status = 'pending', next_attempt_at = now(), updated_at = now(),
          first_job_id = b.job
        FROM batched b WHERE m.id = b.id
        RETURNING m.id, m.channel, m.first_job_id, b.held_job`,
  );
  const held = new Map<string, Channel>();
  for (const m of released) if (m.held_job) held.set(m.held_job, m.channel);
  await enqueueFirstAttempts(
    ctx.queues,
    released.map((m) => ({
      id: m.id,
      channel: m.channel,
      firstJobId: m.first_job_id,
      dueAt: ctx.now(),
    })),
    ctx.now(),
  );
  await removeHeldJobs(
    ctx.queues,
    [...held].map(([jobId, channel]) => ({ jobId, channel })),
  );
  return released.length;
}
