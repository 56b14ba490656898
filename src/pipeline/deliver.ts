import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { EmailError, MAIL_POOL_CONNECTIONS } from '../channels/email.js';
import { attemptRobotMessage } from '../channels/robot-delivery.js';
import { describeRobot, robotCredential } from '../channels/robot-identity.js';
import { RobotError } from '../channels/robot.js';
import { unsubscribeUrl } from '../channels/unsubscribe-token.js';
import { WebhookError } from '../channels/webhook.js';
import { queryPrepared } from '../db/client.js';
import type { Message } from '../domain/message-render.js';
import { inEnglish } from '../domain/english.js';
import { ATTRIBUTION, type Notification } from '../domain/render.js';
import { splitRobotMessage, type RobotVendor } from '../domain/robot-render.js';
import { MAX_DELIVERY_ATTEMPTS, retryDelayMs } from '../domain/retry.js';
import { registerSecret, scrub, type Logger } from '../logger.js';
import { inactiveReason } from '../domain/subscriber-state.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  giveBack,
  markChannelWait,
  markDead,
  markRetrying,
  splitIntoFollowUp,
  waitForRobotSlot,
  writeDeferredMessages,
  DELIVER_JOB,
  deliverQueue,
  enqueueMessage,
  type Channel,
  type DeliverPayload,
  SentRecorder,
  CLAIM_SECONDS,
  claimMessages,
  type CarriedNotification,
  type Outgoing,
  type SubscriberAddress,
} from '../ledger/index.js';
import { deliverJobId } from '../runtime/queues.js';
import { Semaphore } from '../runtime/semaphore.js';

/**
 * A claimed row still waiting for a send slot after this long is handed back rather than sent:
 * its send must finish well inside the claim, or another sender could take the row as well.
 */
export const SEND_START_DEADLINE_MS = (CLAIM_SECONDS * 1000) / 3;

export type DeliverOutcome = 'sent' | 'retrying' | 'dead' | 'skipped' | 'released' | 'waiting';

/** What a deliver job did with its rows; `skipped` rows were not due or already handled. */
export interface DeliverResult {
  sent: Record<Channel, number>;
  retrying: Record<Channel, number>;
  dead: Record<Channel, number>;
  /** Claimed but handed back unsent (no send slot in time); each has a job of its own again. */
  released: number;
  /** Robot messages set back to collect until the robot's rate limit lets them go. */
  waiting: number;
  skipped: number;
}

/**
 * Whether the BullMQ run executing a deliver job still holds the job's lock. BullMQ runs a job
 * again when its lock lapses (a process stalled past it): that run owns the job's first attempts
 * too, and only one may send them.
 */
export type JobLease = () => Promise<boolean>;

/** Longest last_error kept in the ledger: enough for an SMTP reply, bounded for a listing. */
const MAX_ERROR_LENGTH = 1000;

/**
 * A carried notification as its reader sees it: in their language, its times in `timeZone` (the
 * subscriber's own zone) or, without one, in its place's.
 */
export function notificationFor(
  row: CarriedNotification,
  lang: 'zh' | 'en',
  timeZone: string | null,
): Notification {
  const record = { ...row.record, raw: null };
  // An English subscriber reads the upstream's English, else English names and the original
  // text marked as Chinese (README, promises).
  const shown = lang === 'en' ? inEnglish(record) : { warning: record, textInChinese: false };
  const placeName = (lang === 'en' ? row.place_name_en : null) ?? row.place_name;
  return {
    deliveryId: row.id,
    eventType: row.event_type,
    occurredAt: new Date(row.detected_at),
    location: {
      id: row.place_id,
      name: placeName ?? row.place_id,
      tz: timeZone ?? row.place_tz ?? 'Asia/Shanghai',
    },
    warning: shown.warning,
    ...(shown.textInChinese ? { textInChinese: true } : {}),
    // An update told as a subscriber's first news of a warning (src/ledger/told.ts) replaces
    // nothing they know of.
    supersedes: row.event_type === 'update' || row.event_type === 'cancel' ? row.supersedes : [],
    attribution: ATTRIBUTION[lang],
    ...(row.attributions ? { attributions: row.attributions } : {}),
    lang,
    ...(row.in_force ? { inForceWhenSubscribed: true } : {}),
  };
}

/** What the channels send: the message id and its notifications, rendered by the channel. */
export function contentOf(message: Outgoing): Message {
  return {
    id: message.id,
    hold: message.hold,
    notifications: message.notifications.map((n) =>
      notificationFor(n, message.lang, message.timezone),
    ),
    // What a "while you were away" heading names.
    ...(message.quiet_from && message.quiet_to
      ? { quietHours: { from: message.quiet_from, to: message.quiet_to } }
      : {}),
  };
}

interface Failure {
  retryable: boolean;
  message: string;
  retryAfterMs?: number;
  gone?: boolean;
  /** The channel refused us, not this message: it pauses (src/channels/channel-pause.ts). */
  channelRefused?: boolean;
}

function classify(err: unknown): Failure {
  const message = scrub(err instanceof Error ? err.message : String(err)).slice(
    0,
    MAX_ERROR_LENGTH,
  );
  if (err instanceof WebhookError) {
    return {
      retryable: err.retryable,
      message,
      gone: err.gone,
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    };
  }
  if (err instanceof RobotError) {
    // Its message names the robot by host and fingerprint and quotes the vendor's answer.
    return { retryable: err.retryable, message, gone: err.gone };
  }
  if (err instanceof EmailError) {
    // The server's reply is what an admin needs to see; the channel's message usually quotes it.
    const response = err.response === undefined ? undefined : scrub(err.response);
    const reply =
      response === undefined || message.includes(response) ? message : `${message} (${response})`;
    return {
      retryable: err.retryable,
      message: reply.slice(0, MAX_ERROR_LENGTH),
      ...(err.channelRefused ? { channelRefused: true } : {}),
    };
  }
  // Anything unexpected in a send is treated as passing: the schedule bounds the retries.
  return { retryable: true, message };
}

/** Email deliver jobs per process: twice the pool, so a connection finds its next rows claimed. */
export const EMAIL_DELIVER_JOBS = MAIL_POOL_CONNECTIONS * 2;

/**
 * Of a process's DELIVERY_CONCURRENCY sends, how many may be emails: the mail pool's
 * connections, and always one fewer than the whole, so that a mail server that stalls every
 * send still leaves webhooks a slot.
 */
export function emailSendShare(deliveryConcurrency: number): number {
  return Math.max(1, Math.min(MAIL_POOL_CONNECTIONS, deliveryConcurrency - 1));
}

/**
 * What one process shares between its deliver jobs: its send slots and the sent marks. Every
 * send holds one of `sends` (DELIVERY_CONCURRENCY), whatever its channel: the sends on the wire
 * when a process dies are what it sends again after a restart, so their number stays the one
 * configured even though each channel has its own queue (the fault suite's killed worker
 * resent up to 18 of 753 when each channel had its own slots, at most 8 with one budget). An
 * email first takes one of `emailShare`, so email never holds all of them, and then the next
 * free send slot ahead of the webhooks waiting for one: a storm queues hundreds of webhook
 * sends per process, and in arrival order every email waited for all of them.
 */
interface DeliverShared {
  sends: Semaphore;
  emailShare: Semaphore;
  sent: SentRecorder;
}

const shared = new WeakMap<PipelineContext, DeliverShared>();

function sharedFor(ctx: PipelineContext): DeliverShared {
  let s = shared.get(ctx);
  if (!s) {
    s = {
      sends: new Semaphore(ctx.config.deliveryConcurrency),
      emailShare: new Semaphore(emailSendShare(ctx.config.deliveryConcurrency)),
      sent: new SentRecorder({ execute: (query) => queryPrepared(ctx.db, query) }),
    };
    shared.set(ctx, s);
  }
  return s;
}

const byChannel = (): Record<Channel, number> => ({ email: 0, webhook: 0, robot: 0 });

/**
 * The deliver job (`jobId`, when BullMQ runs it): one attempt at each of its messages, then each
 * message's next state. The messages are taken in one statement and sent concurrently, within the process's send slots
 * (email within its share); successes are recorded together (`SentRecorder`), failures one by
 * one.
 */
export async function runDeliver(
  ctx: PipelineContext,
  payload: DeliverPayload,
  jobId?: string,
  lease?: JobLease,
): Promise<DeliverResult> {
  const log = ctx.logger.child({ job: DELIVER_JOB, ...(jobId ? { jobId } : {}) });
  let messages = await claimMessages(ctx, payload.messageIds, jobId);
  if (lease && messages.some((m) => m.owned) && !(await leaseHeld(lease, log))) {
    // Another run of this job owns these first attempts now and sends them; a claimed message
    // is this run's by its claim, whatever became of the job's lock.
    const kept = messages.filter((m) => !m.owned);
    log.warn({ left: messages.length - kept.length }, 'job lock lost, first attempts left');
    messages = kept;
  }
  const claimedAt = ctx.now().getTime();
  const result: DeliverResult = {
    sent: byChannel(),
    retrying: byChannel(),
    dead: byChannel(),
    released: 0,
    waiting: 0,
    skipped: payload.messageIds.length - messages.length,
  };
  if (result.skipped > 0)
    log.debug({ skipped: result.skipped }, 'messages not due or already handled');

  const s = sharedFor(ctx);
  const released: Outgoing[] = [];
  const settled = await Promise.allSettled(
    messages.map(async (message) => {
      const outcome = await attempt(ctx, log, s, message, claimedAt);
      if (outcome === 'released') released.push(message);
      else if (outcome === 'waiting') result.waiting += 1;
      else if (outcome !== 'skipped') result[outcome][message.channel] += 1;
    }),
  );
  if (released.length > 0) {
    await release(ctx, released);
    result.released = released.length;
    log.warn({ released: released.length }, 'messages handed back: no send slot in time');
  }
  // A failed ledger write fails the job; its messages' claims run out and the sweeper retries.
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  if (messages.length > 0) {
    log.info(
      {
        sent: countOf(result.sent),
        retrying: countOf(result.retrying),
        dead: countOf(result.dead),
        ...(result.released > 0 ? { released: result.released } : {}),
        ...(result.waiting > 0 ? { waiting: result.waiting } : {}),
      },
      'deliver job done',
    );
  }
  return result;
}

/** The messages of a result's counts, all channels together. */
const countOf = (byChannel: Record<Channel, number>): number =>
  Object.values(byChannel).reduce((a, b) => a + b, 0);

/**
 * A lease that cannot be confirmed (Redis unreachable) counts as lost: the first attempts wait
 * for the job's next run, or for the sweeper once the job is gone, rather than risk a second
 * sender.
 */
async function leaseHeld(lease: JobLease, log: Logger): Promise<boolean> {
  try {
    return await lease();
  } catch (err) {
    log.warn({ err }, 'job lock not confirmed');
    return false;
  }
}

/** One message: send within the process's slots, then record the outcome. */
async function attempt(
  ctx: PipelineContext,
  log: Logger,
  s: DeliverShared,
  message: Outgoing,
  claimedAt: number,
): Promise<DeliverOutcome> {
  if (!message.active || message.unsubscribed) {
    return recordFailure(ctx, log, message, {
      retryable: false,
      message: inactiveReason(message),
    });
  }
  if (message.notifications.length === 0) {
    // Its notifications were deleted with their subscriber or event: nothing is left to say.
    return recordFailure(ctx, log, message, {
      retryable: false,
      message: 'the message carries no notification any more',
    });
  }
  if (message.channel === 'email') {
    const pausedMs = ctx.emailPause.remainingMs();
    if (pausedMs > 0) {
      return waitForChannel(ctx, log, message, pausedMs, ctx.emailPause.snapshot().reason ?? '');
    }
  }
  if (message.channel === 'robot') await splitOversized(ctx, log, message);
  const send = async (): Promise<Failure | RobotWait | 'sent' | 'late'> => {
    if (ctx.now().getTime() - claimedAt > SEND_START_DEADLINE_MS) return 'late';
    try {
      const result = await sendThroughChannel(ctx, message.channel, message, contentOf(message));
      return result.outcome === 'wait' ? result : 'sent';
    } catch (err) {
      return classify(err);
    }
  };
  const sent =
    message.channel === 'email'
      ? await s.emailShare.run(() => s.sends.run(send, { ahead: true }))
      : await s.sends.run(send);
  if (sent === 'late') return 'released';
  if (sent !== 'sent' && 'outcome' in sent) return waitForRobot(ctx, log, message, sent);
  if (sent !== 'sent' && sent.channelRefused && message.channel === 'email') {
    const pauseMs = ctx.emailPause.refused(sent.message);
    log.warn({ pauseMs, error: sent.message }, 'email channel paused: the SMTP server refused us');
    return waitForChannel(ctx, log, message, pauseMs, sent.message);
  }
  if (sent !== 'sent') return recordFailure(ctx, log, message, sent);
  if (message.channel === 'email' && ctx.emailPause.accepted()) {
    log.warn('email channel open again: the SMTP server took the login');
  }
  await s.sent.markSent(message.id, new Date(), {
    ...(message.deferred ? { deferred: message.hold === 'cycle' ? 'cycle' : 'direct' } : {}),
  });
  // Per message at debug: at info a storm's 100,000 lines cost the workers 6 % more CPU
  // (docs/benchmarks-history.md item 49); the job's summary says it at info, the ledger message by message.
  log.debug(
    {
      messageId: message.id,
      channel: message.channel,
      ...(message.robot_url ? { robot: describeRobot(message.robot_url) } : {}),
      attempt: message.attempts,
      notifications: message.notifications.length,
    },
    'message delivered',
  );
  return 'sent';
}

/**
 * A robot message larger than one post (the vendor's size limit): the chains that fit go now,
 * and the others move to a message of their own, due at once (the robot's rate limit spaces the
 * posts), instead of a line saying they were left out (invariant 9: nothing held is dropped).
 * The move is one transaction; a crash after it leaves the new message to the sweeper, and one
 * before the post sends the smaller message again under its id.
 */
async function splitOversized(ctx: PipelineContext, log: Logger, message: Outgoing): Promise<void> {
  const { later } = splitRobotMessage(
    message.robot_kind!,
    contentOf(message).notifications,
    message.id,
  );
  if (later.length === 0) return;
  const ids = new Set(later.map((n) => n.deliveryId));
  const followUp = randomUUID();
  // A quiet message's rest keeps its "while you were away" heading.
  const moved = await splitIntoFollowUp(
    ctx.db,
    {
      id: message.id,
      subscriberId: message.subscriber_id,
      channel: message.channel,
      hold: message.hold,
    },
    followUp,
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

/** A robot message that could not be posted yet: the robot's rate limit, ours or the vendor's. */
interface RobotWait {
  outcome: 'wait';
  waitMs: number;
  reason: 'limit' | 'vendor';
}

/** The robot of a robot subscriber; its credential and secret are scrubbed from every log. */
function robotTarget(to: SubscriberAddress): {
  vendor: RobotVendor;
  url: string;
  secret: string | null;
} {
  registerSecret(robotCredential(to.robot_url!));
  registerSecret(to.robot_secret ?? undefined);
  return { vendor: to.robot_kind!, url: to.robot_url!, secret: to.robot_secret };
}

/**
 * One send of `content` to a subscriber through their channel, the channel's errors thrown as it
 * classified them: the deliver job's attempt, and `qwn test-send`'s. `answer` is what the
 * receiving end said, for an operator.
 */
export async function sendThroughChannel(
  ctx: Pick<PipelineContext, 'config' | 'mailer' | 'webhooks' | 'robots'>,
  channel: Channel,
  to: SubscriberAddress,
  content: Message,
): Promise<{ outcome: 'sent'; answer: string } | RobotWait> {
  if (channel === 'robot') {
    const result = await attemptRobotMessage(ctx.robots, robotTarget(to), content);
    if (result.outcome === 'wait') return result;
    return { outcome: 'sent', answer: `the robot ${result.robot} took the post` };
  }
  if (channel === 'email') {
    const sent = await ctx.mailer.send(to.email!, content, {
      unsubscribeUrl: unsubscribeUrl(ctx.config, { id: to.subscriber_id, email: to.email }),
    });
    return { outcome: 'sent', answer: `accepted by the SMTP server: ${sent.response}` };
  }
  const sent = await ctx.webhooks.send(
    { url: to.webhook_url!, secret: to.webhook_secret! },
    content,
  );
  return { outcome: 'sent', answer: `the webhook answered ${sent.status}` };
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
async function waitForRobot(
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
async function release(ctx: PipelineContext, messages: readonly Outgoing[]): Promise<void> {
  await writeDeferredMessages(
    ctx.db,
    messages.filter((m) => m.deferred).map((m) => m.id),
  );
  await giveBack(
    ctx.db,
    messages.map((m) => ({ id: m.id, attempts: m.attempts - 1 })),
  );
  for (const m of messages) await enqueueMessage(ctx.queues, m, m.attempts - 1);
}

/**
 * A message of a paused channel: it waits for the pause to end, retrying, its attempt not
 * counted (the server refused us, not it), under a job id of its own (the job running now may
 * hold the attempt's usual one). Should that job be lost, the sweeper finds the due message.
 */
async function waitForChannel(
  ctx: PipelineContext,
  jobLog: Logger,
  message: Outgoing,
  waitMs: number,
  reason: string,
): Promise<DeliverOutcome> {
  if (message.deferred) await writeDeferredMessages(ctx.db, [message.id]);
  const attempts = message.attempts - 1;
  const lastError = `channel paused, not counted as an attempt: ${reason}`.slice(
    0,
    MAX_ERROR_LENGTH,
  );
  await markChannelWait(ctx.db, message.id, attempts, lastError, waitMs);
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

async function recordFailure(
  ctx: PipelineContext,
  jobLog: Logger,
  message: Outgoing,
  failure: Failure,
): Promise<DeliverOutcome> {
  const log = jobLog.child({ messageId: message.id });
  if (message.deferred) await writeDeferredMessages(ctx.db, [message.id]);
  if (failure.gone) {
    const at = ctx.now().toISOString();
    const reason =
      message.channel === 'robot'
        ? `robot gone or its token invalid at ${at} (message ${message.id}): ${failure.message}`
        : `webhook answered 410 Gone at ${at} (message ${message.id})`;
    await ctx.db.execute(sql`
      UPDATE subscribers SET active = false, updated_at = now(),
        disabled_reason = ${reason.slice(0, MAX_ERROR_LENGTH)}
      WHERE id = ${message.subscriber_id}`);
    if (message.channel === 'robot') {
      log.warn(
        { subscriberId: message.subscriber_id, robot: describeRobot(message.robot_url!) },
        'robot gone, subscriber disabled',
      );
    } else {
      log.warn({ subscriberId: message.subscriber_id }, 'webhook gone, subscriber disabled');
    }
  }

  if (!failure.retryable || message.attempts >= MAX_DELIVERY_ATTEMPTS) {
    const lastError = failure.retryable
      ? `gave up after ${message.attempts} attempts: ${failure.message}`.slice(0, MAX_ERROR_LENGTH)
      : failure.message;
    await markDead(ctx.db, message.id, message.attempts, lastError);
    log.warn(
      { channel: message.channel, attempt: message.attempts, error: failure.message },
      'message dead',
    );
    return 'dead';
  }

  const delayMs = retryDelayMs(message.attempts, ctx.random, failure.retryAfterMs);
  await markRetrying(ctx.db, message.id, message.attempts, failure.message, delayMs);
  // Should this enqueue be lost (Redis down), the sweeper finds the due message without a job.
  await enqueueMessage(ctx.queues, message, message.attempts, delayMs);
  log.info(
    { channel: message.channel, attempt: message.attempts, delayMs, error: failure.message },
    'message will be retried',
  );
  return 'retrying';
}
