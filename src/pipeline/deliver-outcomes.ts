import { sql } from 'drizzle-orm';
import { describeRobot } from '../channels/robot-identity.js';
import { splitRobotMessage } from '../domain/robot-render.js';
import { MAX_DELIVERY_ATTEMPTS, retryDelayMs } from '../domain/retry.js';
import {
  DELIVER_JOB,
  deliverQueue,
  enqueueMessage,
  giveBack,
  markChannelWait,
  markDead,
  markRetrying,
  splitIntoFollowUp,
  waitForRobotSlot,
  type DeliverPayload,
  type Outgoing,
} from '../ledger/index.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';
import { deliverJobId } from '../runtime/queues.js';
import {
  goneReceiver,
  MAX_ERROR_LENGTH,
  type Failure,
  type RobotWait,
} from '../channels/registry.js';
import { contentOf } from './message-content.js';

/**
 * How the deliver job ends an attempt that did not send (src/pipeline/deliver.ts): retrying or
 * dead, waiting for its channel or its robot, handed back, or split; the ledger's part of each is
 * in src/ledger/settle.ts, the jobs that carry the next attempt are enqueued here.
 */

export type DeliverOutcome = 'sent' | 'retrying' | 'dead' | 'skipped' | 'released' | 'waiting';

/**
 * A robot message larger than one post (the vendor's size limit): the chains that fit go now,
 * and the others move to a message of their own, due at once (the robot's rate limit spaces the
 * posts), instead of a line saying they were left out (invariant 9: nothing held is dropped).
 * The move is one transaction; a crash after it leaves the new message to the sweeper, and one
 * before the post sends the smaller message again under its id.
 */
export async function splitOversized(
  ctx: PipelineContext,
  log: Logger,
  message: Outgoing,
): Promise<void> {
  const { later } = splitRobotMessage(
    message.robot_kind!,
    contentOf(message).notifications,
    message.id,
  );
  if (later.length === 0) return;
  const ids = new Set(later.map((n) => n.deliveryId));
  // A quiet message's rest keeps its "while you were away" heading.
  const { followUp, moved } = await splitIntoFollowUp(
    ctx.db,
    ctx.now(),
    {
      id: message.id,
      subscriberId: message.subscriber_id,
      channel: message.channel,
      hold: message.hold,
    },
    [...ids],
  );
  message.notifications = message.notifications.filter((n) => !moved.has(n.id));
  if (moved.size === 0) return;
  await enqueueMessage(ctx.queues, { id: followUp, channel: message.channel }, 0);
  log.info(
    { messageId: message.id, followUp, moved: moved.size, kept: message.notifications.length },
    'robot message split: the rest follows in a message of its own',
  );
}

/**
 * A robot that cannot take the post yet (docs/messages.md): the message is neither failed nor
 * dropped. It goes back to collecting ('open', hold 'throttle') until the robot can take it,
 * the attempt not counted, so what the subscriber is owed meanwhile joins it (the scheduler
 * joins a waiting 'throttle' message whatever the grouping) and goes out in the same post. When
 * the subscriber already has a message waiting so, a message never posted nor tried joins that
 * one instead (its id was never seen), under the scheduler's lock of the subscriber's messages. A message held by the quiet hours keeps that hold and its id: its
 * "while you were away" heading is owed. Its delayed job has an id of its own: the job running
 * now may hold the attempt's usual id.
 */
export async function waitForRobot(
  ctx: PipelineContext,
  jobLog: Logger,
  message: Outgoing,
  wait: RobotWait,
): Promise<DeliverOutcome> {
  const waitMs = Math.max(1, Math.ceil(wait.waitMs));
  const why =
    wait.reason === 'vendor'
      ? `the robot answered rate-limited; waiting ${Math.ceil(waitMs / 1000)} s`
      : `the robot's rate limit is reached; waiting ${Math.ceil(waitMs / 1000)} s`;
  const outcome = await waitForRobotSlot(
    ctx.db,
    ctx.now(),
    { id: message.id, subscriberId: message.subscriber_id, hold: message.hold },
    waitMs,
    why,
  );
  if (!outcome) return 'skipped';
  const log = {
    messageId: message.id,
    robot: describeRobot(message.robot_url!),
    reason: wait.reason,
    waitMs,
    notifications: message.notifications.length,
  };
  if ('joined' in outcome) {
    jobLog.info({ ...log, joined: outcome.joined }, 'robot message joins the one waiting');
    return 'waiting';
  }
  await deliverQueue(ctx.queues, message.channel).add(
    DELIVER_JOB,
    { messageIds: [message.id] } satisfies DeliverPayload,
    {
      jobId: `${deliverJobId(message.id, outcome.attempts)}_w${ctx.now().getTime()}`,
      delay: waitMs,
    },
  );
  jobLog.info(log, 'robot message waits for the rate limit');
  return 'waiting';
}

/**
 * Messages taken but not sent: the attempt is given back and each gets a job of its own, which
 * claims it (no job owns its first attempt any more).
 */
export async function release(ctx: PipelineContext, messages: readonly Outgoing[]): Promise<void> {
  await giveBack(
    ctx.db,
    ctx.now(),
    messages.map((m) => ({ id: m.id, attempts: m.attempts - 1 })),
  );
  for (const m of messages) await enqueueMessage(ctx.queues, m, m.attempts - 1);
}

/**
 * A message of a paused channel: it waits for the pause to end, retrying, its attempt not
 * counted (the server refused us, not it), under a job id of its own (the job running now may
 * hold the attempt's usual one). Should that job be lost, the sweeper finds the due message.
 */
export async function waitForChannel(
  ctx: PipelineContext,
  jobLog: Logger,
  message: Outgoing,
  waitMs: number,
  reason: string,
): Promise<DeliverOutcome> {
  const attempts = message.attempts - 1;
  const lastError = `channel paused, not counted as an attempt: ${reason}`.slice(
    0,
    MAX_ERROR_LENGTH,
  );
  await markChannelWait(ctx.db, ctx.now(), message.id, attempts, lastError, waitMs);
  await deliverQueue(ctx.queues, message.channel).add(
    DELIVER_JOB,
    { messageIds: [message.id] } satisfies DeliverPayload,
    { jobId: `${deliverJobId(message.id, attempts)}_p${ctx.now().getTime()}`, delay: waitMs },
  );
  jobLog.debug(
    { messageId: message.id, channel: message.channel, waitMs },
    'message waits for its channel',
  );
  return 'waiting';
}

export async function recordFailure(
  ctx: PipelineContext,
  jobLog: Logger,
  message: Outgoing,
  failure: Failure,
): Promise<DeliverOutcome> {
  const log = jobLog.child({ messageId: message.id });
  if (failure.gone) {
    const gone = goneReceiver(
      message.channel,
      message,
      ctx.now().toISOString(),
      message.id,
      failure.message,
    );
    await ctx.db.execute(sql`
      UPDATE subscribers SET active = false, updated_at = ${ctx.now()},
        disabled_reason = ${gone.reason.slice(0, MAX_ERROR_LENGTH)}
      WHERE id = ${message.subscriber_id}`);
    log.warn({ subscriberId: message.subscriber_id, ...gone.log.fields }, gone.log.phrase);
  }

  if (!failure.retryable || message.attempts >= MAX_DELIVERY_ATTEMPTS) {
    const lastError = failure.retryable
      ? `gave up after ${message.attempts} attempts: ${failure.message}`.slice(0, MAX_ERROR_LENGTH)
      : failure.message;
    await markDead(ctx.db, ctx.now(), message.id, message.attempts, lastError);
    log.warn(
      { channel: message.channel, attempt: message.attempts, error: failure.message },
      'message dead',
    );
    return 'dead';
  }

  const delayMs = retryDelayMs(message.attempts, ctx.random, failure.retryAfterMs);
  await markRetrying(ctx.db, ctx.now(), message.id, message.attempts, failure.message, delayMs);
  // Should this enqueue be lost (Redis down), the sweeper finds the due message without a job.
  await enqueueMessage(ctx.queues, message, message.attempts, delayMs);
  log.info(
    { channel: message.channel, attempt: message.attempts, delayMs, error: failure.message },
    'message will be retried',
  );
  return 'retrying';
}
