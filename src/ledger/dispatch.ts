import type { Queue } from 'bullmq';
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { CHANNELS, kindOf } from '../channels/kinds.js';
import type { Channel, CreatedMessage } from './message.js';
import type { Outgoing } from './take.js';
import type { FirstAttemptBatch } from '../runtime/context.js';
import { deliverJobId, type Queues } from '../runtime/queues.js';

/**
 * Where deliver jobs go and how they are named: the job's payload, the queue of each channel,
 * the first-attempt batches a writer plans its messages into, and the enqueueing of a
 * message's attempt. What a deliver job does with its messages is src/pipeline/deliver.ts.
 */

export const DELIVER_JOB = 'deliver';

/** Most messages one deliver job may carry (a check's batches are smaller: `firstAttemptBatch`). */
export const MAX_DELIVER_BATCH = 200;

export const deliverPayload = z.object({
  messageIds: z.array(z.string().uuid()).min(1).max(MAX_DELIVER_BATCH),
});
export type DeliverPayload = z.infer<typeof deliverPayload>;

/** `firstAttemptBatch` of the channel in `channel`, an SQL expression of type int. */
const BATCH_SIZE_BY_CHANNEL = (channel: SQL): SQL =>
  sql`CASE ${channel} ${sql.raw(
    CHANNELS.map((c) => `WHEN '${c}' THEN ${kindOf(c).firstAttemptBatch}`).join(' '),
  )} END`;

/**
 * SQL for each row's first-attempt job, in a statement over rows with a `channel` column:
 * `prefix`, the channel and the batch number, `firstAttemptBatch` rows per job in `orderBy`
 * order. The writers of messages name their jobs in the statement that writes them.
 */
export function firstAttemptJob(prefix: string | Placeholder, channel: SQL, orderBy: SQL): SQL {
  return sql`${prefix}::text || ${channel} ||
    ((row_number() OVER (PARTITION BY ${channel} ORDER BY ${orderBy}) - 1) /
      ${BATCH_SIZE_BY_CHANNEL(channel)})::text`;
}

/** BullMQ states in which a job still runs by itself: an enqueue with its id would be ignored. */
const LIVE_STATES = new Set(['waiting', 'active', 'prioritized', 'waiting-children']);

export type DeliverQueues = Pick<Queues, 'deliverWebhook' | 'deliverEmail'>;

/** The queue that carries a channel's deliver jobs (`ChannelKind.queue`). */
export function deliverQueue(queues: DeliverQueues, channel: Channel): Queue {
  return queues[kindOf(channel).queue];
}

/**
 * Adds the deliver job for a message's next attempt, `deliverJobId(id, attempts)`. A finished
 * or delayed job can already hold that id (the message was redelivered, its attempts starting
 * again from 0, or released early from a delay); BullMQ would silently drop the new job, so the
 * old one is removed first. A live job with the id is left alone: it runs the attempt. Returns
 * whether a job was added.
 */
export async function enqueueMessage(
  queues: DeliverQueues,
  message: { id: string; channel: Channel },
  attempts: number,
  delayMs = 0,
): Promise<boolean> {
  const queue = deliverQueue(queues, message.channel);
  const jobId = deliverJobId(message.id, attempts);
  const existing = await queue.getJob(jobId);
  if (existing) {
    if (LIVE_STATES.has(await existing.getState())) return false;
    try {
      await existing.remove();
    } catch {
      // Taken by a worker a moment ago: that job makes the attempt.
      return false;
    }
  }
  await queue.add(DELIVER_JOB, { messageIds: [message.id] } satisfies DeliverPayload, {
    jobId,
    ...(delayMs > 0 ? { delay: delayMs } : {}),
  });
  return true;
}

/**
 * A batch of first attempts that may carry its messages as their writer knows them, every one
 * (`CreatedMessage.known`); without them, they are read through the take.
 */
export interface KnownBatch extends FirstAttemptBatch {
  known?: readonly Outgoing[];
}

/** The messages a batch carries as their writer knew them, if it carries them. */
export function knownOf(batch: FirstAttemptBatch): readonly Outgoing[] | undefined {
  // The batches handed to a `FirstAttemptSender` are this module's (`plannedBatches`).
  return (batch as KnownBatch).known;
}

/** A first-attempt job as its messages' writer planned it: id, channel, due time, messages. */
export interface PlannedBatch extends KnownBatch {
  /** Epoch milliseconds: a batch's messages share one due time. */
  dueAt: number;
}

/**
 * The messages a writer just committed, in the batches it planned (`first_job_id`); a batch
 * whose every message its writer knows (`CreatedMessage.known`) carries them.
 */
export function plannedBatches(created: readonly Omit<CreatedMessage, 'leased'>[]): PlannedBatch[] {
  const batches = new Map<string, PlannedBatch & { known: Outgoing[] }>();
  for (const m of created) {
    let batch = batches.get(m.firstJobId);
    if (!batch) {
      batch = {
        jobId: m.firstJobId,
        channel: m.channel,
        dueAt: m.dueAt.getTime(),
        messageIds: [],
        known: [],
      };
      batches.set(m.firstJobId, batch);
    }
    batch.messageIds.push(m.id);
    if (m.known) batch.known.push(m.known);
  }
  return [...batches.values()].map(({ known, ...batch }) =>
    known.length === batch.messageIds.length ? { ...batch, known } : batch,
  );
}

/**
 * One deliver job per batch, in its channel's queue, with the batch's id: the job owns its
 * first attempts. A batch that collects (a cycle's messages, a quiet window's) is delayed until
 * it is due. Whoever sends such a message earlier (the cycle's release, an urgent notification)
 * leaves the delayed job nothing to claim; the sweeper finds a message whose job was lost.
 */
export async function enqueueBatches(
  queues: DeliverQueues,
  batches: readonly PlannedBatch[],
  now: Date,
): Promise<void> {
  for (const channel of CHANNELS) {
    const jobs = batches.filter((b) => b.channel === channel);
    if (jobs.length === 0) continue;
    await deliverQueue(queues, channel).addBulk(
      jobs.map(({ jobId, dueAt, messageIds }) => ({
        name: DELIVER_JOB,
        data: { messageIds } satisfies DeliverPayload,
        opts: { jobId, ...(dueAt > now.getTime() ? { delay: dueAt - now.getTime() } : {}) },
      })),
    );
  }
}

/** First attempts of the messages a writer just committed, in the batch jobs it planned. */
export async function enqueueFirstAttempts(
  queues: DeliverQueues,
  created: readonly Omit<CreatedMessage, 'leased'>[],
  now: Date,
): Promise<void> {
  await enqueueBatches(queues, plannedBatches(created), now);
}

/** Removes delayed jobs whose messages went sooner; one already running finds nothing to do. */
export async function removeHeldJobs(
  queues: DeliverQueues,
  jobs: readonly { channel: Channel; jobId: string }[],
): Promise<void> {
  for (const { channel, jobId } of jobs) {
    try {
      await deliverQueue(queues, channel).remove(jobId);
    } catch {
      // Taken by a worker meanwhile: it claims nothing, the messages are no longer open.
    }
  }
}

/**
 * Whether a job that carries a message already due will still run by itself: waiting, active,
 * or delayed, and then promoted to run now. Such a job owns the first attempts planned into it,
 * so nothing else may take them (`claim`). Its delay was counted from the clock that planned
 * it, and a message's due time, not a delay in Redis, says when it goes (a clock moved ahead,
 * or one process's clock behind another's).
 */
export async function carriesDueMessage(
  queues: DeliverQueues,
  channel: Channel,
  jobId: string,
): Promise<boolean> {
  const job = await deliverQueue(queues, channel).getJob(jobId);
  if (!job) return false;
  const state = await job.getState();
  if (state !== 'delayed') return LIVE_STATES.has(state);
  try {
    await job.promote();
  } catch {
    // Promoted or taken by a worker meanwhile: it runs.
  }
  return true;
}
