import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { PipelineContext } from '../runtime/context.js';
import { carriesDueMessage, enqueueMessage } from './dispatch.js';
import type { Channel } from './message.js';

/**
 * Recovery: Postgres is the truth, so a message that is due and has no live job (Redis flushed,
 * a process killed between commit and enqueue) gets one again (docs/design.md, invariant 1).
 * The sweeper runs it, and `poll --once` with no grace.
 */

/** Due messages looked at per run. */
const BATCH = 5000;

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
  const now = ctx.now();
  const due = await queryRows<RequeuedMessage & { first_job_id: string | null }>(
    ctx.db,
    sql`SELECT id, channel, attempts, first_job_id FROM messages
        WHERE status IN ('open', 'pending', 'retrying')
          AND next_attempt_at <= ${now}::timestamptz - make_interval(secs => ${graceSeconds})
          AND (claimed_until IS NULL OR claimed_until < ${now}::timestamptz)
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
        live = await carriesDueMessage(ctx.queues, row.channel, firstJob);
        batchLive.set(firstJob, live);
      }
      if (live) continue;
      lost.set(firstJob, [...(lost.get(firstJob) ?? []), row]);
    } else {
      orphans.push(row);
    }
  }
  // A lost job's first attempts are handed back before they get jobs that claim them; a row
  // whose owner changed meanwhile (the cycle's release) is left to its new job.
  for (const [jobId, rows] of lost) {
    const freed = await queryRows<{ id: string }>(
      ctx.db,
      sql`UPDATE messages SET first_job_id = NULL, updated_at = ${now}
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
    due: due.map(({ id, channel, attempts }) => ({ id, channel, attempts })),
    requeued,
  };
}
