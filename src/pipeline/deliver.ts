import { kindOf } from '../channels/kinds.js';
import { describeRobot } from '../channels/robot-identity.js';
import type { Logger } from '../logger.js';
import { inactiveReason } from '../domain/subscriber-state.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  DELIVER_JOB,
  type Channel,
  type DeliverPayload,
  SentRecorder,
  CLAIM_SECONDS,
  claimMessages,
  type Outgoing,
} from '../ledger/index.js';
import { Semaphore } from '../runtime/semaphore.js';
import { runOn } from '../db/prepared.js';
import {
  classify,
  emailSendShare,
  sendThroughChannel,
  type Failure,
  type RobotWait,
} from '../channels/registry.js';
import {
  recordFailure,
  release,
  splitOversized,
  waitForChannel,
  waitForRobot,
  type DeliverOutcome,
} from './deliver-outcomes.js';
import { contentOf } from './message-content.js';
import { SubscriberChanges } from './subscriber-changes.js';

/**
 * A claimed row still waiting for a send slot after this long is handed back rather than sent:
 * its send must finish well inside the claim, or another sender could take the row as well.
 */
export const SEND_START_DEADLINE_MS = (CLAIM_SECONDS * 1000) / 3;

/** What a deliver job did with its rows; `skipped` rows were not due or already handled. */
export interface DeliverResult {
  sent: Record<Channel, number>;
  retrying: Record<Channel, number>;
  dead: Record<Channel, number>;
  /**
   * Taken but handed back unsent, each with a job of its own again: no send slot in time, or its
   * subscriber changed after the message read them (`SubscriberChanges`).
   */
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
  changes: SubscriberChanges;
}

const shared = new WeakMap<PipelineContext, DeliverShared>();

function sharedFor(ctx: PipelineContext): DeliverShared {
  let s = shared.get(ctx);
  if (!s) {
    s = {
      sends: new Semaphore(ctx.config.deliveryConcurrency),
      emailShare: new Semaphore(emailSendShare(ctx.config.deliveryConcurrency)),
      sent: new SentRecorder(runOn(ctx.db)),
      changes: new SubscriberChanges(runOn(ctx.db), () => ctx.now().getTime()),
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
  return sendTaken(ctx, log, payload.messageIds.length, messages);
}

/**
 * First attempts their check knows (`KnownBatch.known`), sent from its process under its
 * lease as `runDeliver` sends the messages it takes, without reading them back.
 */
export function deliverKnown(
  ctx: PipelineContext,
  jobId: string,
  known: readonly Outgoing[],
): Promise<DeliverResult> {
  const log = ctx.logger.child({ job: DELIVER_JOB, jobId });
  return sendTaken(ctx, log, known.length, known);
}

/** One attempt at each taken message of a job that named `named` messages; their next states. */
async function sendTaken(
  ctx: PipelineContext,
  log: Logger,
  named: number,
  messages: readonly Outgoing[],
): Promise<DeliverResult> {
  const claimedAt = ctx.now().getTime();
  const result: DeliverResult = {
    sent: byChannel(),
    retrying: byChannel(),
    dead: byChannel(),
    released: 0,
    waiting: 0,
    skipped: named - messages.length,
  };
  if (result.skipped > 0)
    log.debug({ skipped: result.skipped }, 'messages not due or already handled');

  const s = sharedFor(ctx);
  const late: Outgoing[] = [];
  const changed: Outgoing[] = [];
  const settled = await Promise.allSettled(
    messages.map(async (message) => {
      const outcome = await attempt(ctx, log, s, message, claimedAt);
      if (outcome === 'released') late.push(message);
      else if (outcome === 'changed') changed.push(message);
      else if (outcome === 'waiting') result.waiting += 1;
      else if (outcome !== 'skipped') result[outcome][message.channel] += 1;
    }),
  );
  if (late.length > 0 || changed.length > 0) {
    await release(ctx, [...late, ...changed]);
    result.released = late.length + changed.length;
  }
  if (late.length > 0) {
    log.warn({ released: late.length }, 'messages handed back: no send slot in time');
  }
  if (changed.length > 0) {
    log.info({ released: changed.length }, 'messages handed back: their subscriber changed');
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

/**
 * One message: send within the process's slots, then record the outcome. `changed`: handed back
 * unsent, its subscriber changed after the message read them.
 */
async function attempt(
  ctx: PipelineContext,
  log: Logger,
  s: DeliverShared,
  message: Outgoing,
  claimedAt: number,
): Promise<DeliverOutcome | 'changed'> {
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
  const kind = kindOf(message.channel);
  if (kind.pausable) {
    const pausedMs = ctx.emailPause.remainingMs();
    if (pausedMs > 0) {
      return waitForChannel(ctx, log, message, pausedMs, ctx.emailPause.snapshot().reason ?? '');
    }
  }
  if (kind.splitsOversized) await splitOversized(ctx, log, message);
  const send = async (): Promise<Failure | RobotWait | 'sent' | 'late' | 'changed'> => {
    if (ctx.now().getTime() - claimedAt > SEND_START_DEADLINE_MS) return 'late';
    // Asked once the send slot is held, the last moment before the send: the wait for a slot
    // is where a message spends its time. A read that fails fails the attempt unsent.
    const reading = s.changes.fresh();
    if (reading) await reading;
    if (s.changes.changedSince(message.subscriber_id, message.readAt)) return 'changed';
    try {
      const result = await sendThroughChannel(ctx, message.channel, message, contentOf(message));
      return result.outcome === 'wait' ? result : 'sent';
    } catch (err) {
      return classify(err);
    }
  };
  const sent = kind.pooled
    ? await s.emailShare.run(() => s.sends.run(send, { ahead: true }))
    : await s.sends.run(send);
  if (sent === 'late') return 'released';
  if (sent === 'changed') return 'changed';
  if (sent !== 'sent' && 'outcome' in sent) return waitForRobot(ctx, log, message, sent);
  if (sent !== 'sent' && sent.channelRefused && kind.pausable) {
    const pauseMs = ctx.emailPause.refused(sent.message);
    log.warn({ pauseMs, error: sent.message }, 'email channel paused: the SMTP server refused us');
    return waitForChannel(ctx, log, message, pauseMs, sent.message);
  }
  if (sent !== 'sent') return recordFailure(ctx, log, message, sent);
  if (kind.pausable && ctx.emailPause.accepted()) {
    log.warn('email channel open again: the SMTP server took the login');
  }
  await s.sent.markSent(message.id, ctx.now());
  // Per message at debug: at info a storm's 100,000 lines cost the workers 6 % more CPU
  // (docs/benchmarks-history.md item 49); the job's summary says it at info, the ledger message by
  // message.
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
