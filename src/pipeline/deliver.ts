import { randomUUID } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { EmailError, MAIL_POOL_CONNECTIONS } from '../channels/email.js';
import { attemptRobotMessage } from '../channels/robot-delivery.js';
import { describeRobot, robotCredential } from '../channels/robot-identity.js';
import { RobotError } from '../channels/robot.js';
import { unsubscribeUrl } from '../channels/unsubscribe-token.js';
import { WebhookError } from '../channels/webhook.js';
import { queryPrepared, queryRows } from '../db/client.js';
import type { EventType } from '../domain/detect.js';
import type { Message } from '../domain/message-render.js';
import type { Notification } from '../domain/render.js';
import { splitRobotMessage, type RobotVendor } from '../domain/robot-render.js';
import { JOIN_MARGIN_MS, type Hold } from '../domain/schedule.js';
import { MAX_DELIVERY_ATTEMPTS, retryDelayMs } from '../domain/retry.js';
import type { Warning } from '../domain/warning.js';
import { registerSecret, scrub, type Logger } from '../logger.js';
import type { PipelineContext } from './context.js';
import { deferredOwned, writeDeferredMessages } from './deferred-messages.js';
import {
  DELIVER_JOB,
  deliverQueue,
  enqueueMessage,
  type Channel,
  type DeliverPayload,
} from './deliver-queues.js';
import { carriedBy } from './ledger-lookups.js';
import { MESSAGE_LOCK } from './notification-ledger.js';
import { deliverJobId } from './queues.js';
import { Semaphore } from './semaphore.js';
import { SentRecorder } from './sent-recorder.js';

/**
 * Messages whose attempt is still owed or under way: pending and never tried, or claimed right
 * now. A pending message whose claim ran out (a crashed sender) belongs to the sweeper, not to
 * a wait; an open one is still collecting.
 */
export const ATTEMPT_UNDER_WAY = sql`status = 'pending' AND (attempts = 0 OR claimed_until > now())`;

/**
 * How long a sender holds a row. Longer than any single send (SMTP and webhook timeouts are
 * well under a minute), so only a crashed sender's claim ever runs out.
 */
const CLAIM_SECONDS = 120;

/**
 * A claimed row still waiting for a send slot after this long is handed back rather than sent:
 * its send must finish well inside the claim, or another sender could take the row as well.
 */
export const SEND_START_DEADLINE_MS = (CLAIM_SECONDS * 1000) / 3;

/** A deliver job may fire a moment before the row's time (clocks of app and database). */
const EARLY_TOLERANCE_SECONDS = 5;

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

/** A claimed message, with its subscriber. */
interface ClaimedMessage {
  id: string;
  attempts: number;
  channel: Channel;
  hold: Hold | null;
  subscriber_id: string;
  email: string | null;
  webhook_url: string | null;
  webhook_secret: string | null;
  robot_kind: RobotVendor | null;
  robot_url: string | null;
  robot_secret: string | null;
  lang: 'zh' | 'en';
  active: boolean;
  unsubscribed: boolean;
  disabled_reason: string | null;
  quiet_from: string | null;
  quiet_to: string | null;
}

/** A notification of a claimed message, as its rendering needs it. */
interface CarriedNotification {
  id: string;
  message_id: string;
  event_type: EventType;
  warning_id: string;
  place_id: string;
  event_id: string;
  record: Omit<Warning, 'raw'>;
  supersedes: string[];
  /** v1: `metadata.attributions` of the answer the event came from; null for v7. */
  attributions: string[] | null;
  detected_at: Date;
  place_name: string | null;
  place_tz: string | null;
}

/** A message ready to send: what it carries, rendered by the channel. */
interface Outgoing extends ClaimedMessage {
  notifications: CarriedNotification[];
  /** Its first attempt belongs to this job (read, not claimed): see `FIRST_ATTEMPT_OWNED`. */
  owned: boolean;
  /** Owned, and without a row in `messages` yet: see src/pipeline/deferred-messages.ts. */
  deferred: boolean;
}

/**
 * Whether the BullMQ run executing a deliver job still holds the job's lock. BullMQ runs a job
 * again when its lock lapses (a process stalled past it): that run owns the job's first attempts
 * too, and only one may send them.
 */
export type JobLease = () => Promise<boolean>;

const ATTRIBUTION = {
  zh: '天气数据来源：和风天气 QWeather',
  en: 'Weather data: QWeather',
} as const;

/** Longest last_error kept in the ledger: enough for an SMTP reply, bounded for a listing. */
const MAX_ERROR_LENGTH = 1000;

/** A carried notification as the read returns it: the event's columns only on its first row. */
type CarriedOnce = Omit<CarriedNotification, 'record' | 'supersedes' | 'attributions'> & {
  record: CarriedNotification['record'] | null;
  supersedes: string[] | null;
  attributions: string[] | null;
};

/**
 * A row of the take statement: a message, and one of its notifications when the job owns its
 * first attempt (`n_*`, null otherwise: a claimed message's are read after the claim).
 */
type TakenRow = ClaimedMessage & {
  owned: boolean;
  deferred: boolean;
  n_id: string | null;
  n_event_type: EventType | null;
  n_warning_id: string | null;
  n_place_id: string | null;
  n_event_id: string | null;
  n_record: CarriedNotification['record'] | null;
  n_supersedes: string[] | null;
  n_attributions: string[] | null;
  n_detected_at: Date | null;
  n_place_name: string | null;
  n_place_tz: string | null;
};

/**
 * The notifications of `messageIds`, each event's record on its first row only. A job's
 * notifications mostly share a place and one to three events: each event and place is looked up
 * once, not once per notification. Exported for the test that holds its generic plan to index
 * lookups (test/db/claim-plan.int.test.ts).
 */
export function carriedNotifications(messageIds: readonly string[]): SQL {
  return notificationsOf(sql`${sql.param(messageIds)}::uuid[]`);
}

/** `carriedNotifications` of the messages in `messageIds`, an SQL expression of type uuid[]. */
function notificationsOf(messageIds: SQL): SQL {
  return sql`WITH carried AS (
            SELECT d.id, d.message_id, d.event_type, d.warning_id, d.place_id, d.event_id,
                   row_number() OVER (PARTITION BY d.event_id) AS nth
            FROM deliveries d WHERE ${carriedBy(messageIds)}),
          -- Index lookups whatever the plan: a prepared statement soon runs a generic plan,
          -- which guessed hundreds of rows here and hashed every event (records and all) and
          -- every place for each job, 15 ms where the lookups take a tenth of one. OFFSET 0
          -- keeps the planner from flattening a lookup into such a join; the joins below are
          -- between the job's own few rows.
          carried_events AS (
            SELECT e.* FROM (SELECT DISTINCT event_id FROM carried) k
            CROSS JOIN LATERAL (
              SELECT e.id, e.record, e.supersedes, e.attributions, e.detected_at
              FROM events e WHERE e.id = k.event_id OFFSET 0) e),
          carried_places AS (
            SELECT p.* FROM (SELECT DISTINCT place_id FROM carried) k
            CROSS JOIN LATERAL (
              SELECT p.id, p.name, p.tz FROM places p WHERE p.id = k.place_id OFFSET 0) p)
          SELECT c.id, c.message_id, c.event_type, c.warning_id, c.place_id,
                 c.event_id::text AS event_id,
                 CASE WHEN c.nth = 1 THEN e.record END AS record,
                 CASE WHEN c.nth = 1 THEN e.supersedes END AS supersedes,
                 CASE WHEN c.nth = 1 THEN e.attributions END AS attributions,
                 e.detected_at, p.name AS place_name, p.tz AS place_tz
          FROM carried c
          JOIN carried_events e ON e.id = c.event_id
          LEFT JOIN carried_places p ON p.id = c.place_id
          ORDER BY c.message_id, e.detected_at, c.id`;
}

/**
 * A message whose first attempt its planned job owns (`first_job_id`): pending, never tried, and
 * not a robot's. That job sends it without a claim write: the BullMQ job's lock is the lease, and
 * no other job may claim the message while its first attempt is owned (see `claim`). The claim
 * write was a quarter of a storm's ledger row versions (issue 21). A message still collecting
 * ('open') is claimed as before: the claim's row lock is what orders it after the checks still
 * adding to it. A robot's is claimed too: its attempt count tells a post never tried from one
 * that may have reached the group, which decides whether a waiting post may join another.
 */
// "status = 'pending'" spelled as the claim below spells its statuses, so that it does not
// imply the due index's predicate (BENCHMARKS.md item 4).
const FIRST_ATTEMPT_OWNED = sql`status <> 'open' AND status <> 'retrying' AND status <> 'sent'
  AND status <> 'dead' AND attempts = 0 AND channel <> 'robot'`;

/**
 * The statement of `claim`: reads the messages among `ids` whose first attempt `jobId` owns,
 * claims the others that are due and free, and returns both with their subscribers. Exported for
 * the test that holds its generic plan to primary-key lookups (test/db/claim-plan.int.test.ts).
 */
export function takeMessages(ids: readonly string[], jobId: string | undefined): SQL {
  const ownedByJob =
    jobId === undefined ? sql`false` : sql`coalesce(first_job_id = ${jobId}, false)`;
  const deferred =
    jobId === undefined
      ? sql``
      : sql`UNION ALL SELECT *, true AS deferred
          FROM (${deferredOwned(sql`${sql.param(ids)}::uuid[]`, jobId)}) n`;
  return sql`WITH owned AS (
          SELECT id, attempts + 1 AS attempts, channel, hold, subscriber_id, false AS deferred
          FROM messages
          WHERE id = ANY(${sql.param(ids)}::uuid[]) AND ${ownedByJob} AND ${FIRST_ATTEMPT_OWNED}
            AND next_attempt_at <= now() + make_interval(secs => ${EARLY_TOLERANCE_SECONDS})
          ${deferred}),
        claimed AS (
          UPDATE messages SET
            status = CASE WHEN status = 'open' THEN 'pending' ELSE status END,
            attempts = attempts + 1,
            claimed_until = now() + make_interval(secs => ${CLAIM_SECONDS}),
            updated_at = now()
          WHERE id = ANY(${sql.param(ids)}::uuid[])
            -- Not "status IN ('open', 'pending', 'retrying')": that is the due index's
            -- predicate, and with it the planner may walk every due row to find these few.
            -- The CHECK constraint makes them equal.
            AND status <> 'sent' AND status <> 'dead'
            AND next_attempt_at <= now() + make_interval(secs => ${EARLY_TOLERANCE_SECONDS})
            AND (claimed_until IS NULL OR claimed_until < now())
            AND (attempts > 0 OR first_job_id IS NULL OR ${ownedByJob})
            AND NOT (${ownedByJob} AND ${FIRST_ATTEMPT_OWNED})
          RETURNING id, attempts, channel, hold, subscriber_id),
        taken AS (
          SELECT *, true AS owned FROM owned
          UNION ALL SELECT *, false AS deferred, false AS owned FROM claimed),
        -- An owned message waits for no lock, so its notifications come in this statement: a
        -- webhook batch takes one round trip, not two.
        owned_notifications AS (${notificationsOf(sql`ARRAY(SELECT id FROM owned)`)})
        SELECT c.id, c.attempts, c.channel, c.hold, c.subscriber_id, c.owned, c.deferred,
               s.email, s.webhook_url, s.webhook_secret, s.robot_kind, s.robot_url,
               s.robot_secret, s.lang, s.active, s.disabled_reason,
               s.unsubscribed_at IS NOT NULL AS unsubscribed, s.quiet_from, s.quiet_to,
               n.id AS n_id, n.event_type AS n_event_type, n.warning_id AS n_warning_id,
               n.place_id AS n_place_id, n.event_id AS n_event_id, n.record AS n_record,
               n.supersedes AS n_supersedes, n.attributions AS n_attributions,
               n.detected_at AS n_detected_at, n.place_name AS n_place_name,
               n.place_tz AS n_place_tz
        FROM taken c JOIN subscribers s ON s.id = c.subscriber_id
        LEFT JOIN owned_notifications n ON n.message_id = c.id
        ORDER BY c.id, n.detected_at, n.id`;
}

/**
 * The message of a taken row, without its notifications yet: the row less its notification's
 * columns. Named one by one: filtering the row's entries by name cost 5 µs a message, a storm's
 * largest self time in `claim`.
 */
function messageOfRow(r: TakenRow): Outgoing {
  return {
    id: r.id,
    attempts: r.attempts,
    channel: r.channel,
    hold: r.hold,
    subscriber_id: r.subscriber_id,
    email: r.email,
    webhook_url: r.webhook_url,
    webhook_secret: r.webhook_secret,
    robot_kind: r.robot_kind,
    robot_url: r.robot_url,
    robot_secret: r.robot_secret,
    lang: r.lang,
    active: r.active,
    unsubscribed: r.unsubscribed,
    disabled_reason: r.disabled_reason,
    quiet_from: r.quiet_from,
    quiet_to: r.quiet_to,
    owned: r.owned,
    deferred: r.deferred,
    notifications: [],
  };
}

/**
 * Takes the due messages among `ids` for this attempt; messages sent, dead, not due or held
 * elsewhere are left out. Those whose first attempt `jobId` owns are only read; the others are
 * claimed (`claimed_until`), and an open message that is due stops collecting here (it becomes
 * pending). A message whose first attempt another job owns is never claimed: that job may be
 * sending it right now (the sweeper hands a lost job's messages back first). An owned message's
 * notifications come with it; a claimed message's are read by a second statement: a check that
 * was adding one to it holds its row lock, which the claim waits for, and only a statement begun
 * after that wait sees what the check wrote.
 */
async function claim(
  ctx: PipelineContext,
  ids: readonly string[],
  jobId: string | undefined,
): Promise<Outgoing[]> {
  const taken = await queryPrepared<TakenRow>(ctx.db, takeMessages(ids, jobId));
  if (taken.length === 0) return [];
  const claimed = new Map<string, Outgoing>();
  const rows: CarriedOnce[] = [];
  for (const r of taken) {
    if (!claimed.has(r.id)) claimed.set(r.id, messageOfRow(r));
    if (r.n_id !== null) {
      rows.push({
        id: r.n_id,
        message_id: r.id,
        event_type: r.n_event_type!,
        warning_id: r.n_warning_id!,
        place_id: r.n_place_id!,
        event_id: r.n_event_id!,
        record: r.n_record,
        supersedes: r.n_supersedes,
        attributions: r.n_attributions,
        detected_at: r.n_detected_at!,
        place_name: r.n_place_name,
        place_tz: r.n_place_tz,
      });
    }
  }
  // A job's messages mostly carry notifications of one event: its record (a kilobyte or two of
  // JSON) is sent and parsed once, on the first of them, and given to the others here.
  const locked = [...claimed.values()].filter((m) => !m.owned).map((m) => m.id);
  if (locked.length > 0) {
    rows.push(...(await queryPrepared<CarriedOnce>(ctx.db, carriedNotifications(locked))));
  }
  const events = new Map<
    string,
    Pick<CarriedNotification, 'record' | 'supersedes' | 'attributions'>
  >();
  for (const row of rows) {
    if (row.record !== null) {
      events.set(row.event_id, {
        record: row.record,
        supersedes: row.supersedes ?? [],
        attributions: row.attributions,
      });
    }
  }
  for (const row of rows) {
    const event = events.get(row.event_id);
    // Every event has a first row; without one the statement above is wrong, not the data.
    if (!event) throw new Error(`claim: no record returned for event ${row.event_id}`);
    claimed.get(row.message_id)?.notifications.push({ ...row, ...event });
  }
  return [...claimed.values()];
}

export function notificationFor(row: CarriedNotification, lang: 'zh' | 'en'): Notification {
  return {
    deliveryId: row.id,
    eventType: row.event_type,
    occurredAt: new Date(row.detected_at),
    location: {
      id: row.place_id,
      name: row.place_name ?? row.place_id,
      tz: row.place_tz ?? 'Asia/Shanghai',
    },
    warning: { ...row.record, raw: null },
    supersedes: row.supersedes,
    attribution: ATTRIBUTION[lang],
    ...(row.attributions ? { attributions: row.attributions } : {}),
    lang,
  };
}

/** What the channels send: the message id and its notifications, rendered by the channel. */
export function contentOf(message: Outgoing): Message {
  return {
    id: message.id,
    hold: message.hold,
    notifications: message.notifications.map((n) => notificationFor(n, message.lang)),
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
    return { retryable: err.retryable, message: reply.slice(0, MAX_ERROR_LENGTH) };
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
  let messages = await claim(ctx, payload.messageIds, jobId);
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

/** Why nothing goes to a subscriber: unsubscribed, disabled (410 Gone, …) or paused by an admin. */
export function inactiveReason(subscriber: {
  unsubscribed: boolean;
  disabled_reason: string | null;
}): string {
  if (subscriber.unsubscribed) return 'subscriber unsubscribed';
  return subscriber.disabled_reason
    ? `subscriber is disabled: ${subscriber.disabled_reason}`
    : 'subscriber is paused (active = false)';
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
  if (message.channel === 'robot') await splitOversized(ctx, log, message);
  const send = async (): Promise<Failure | RobotWait | 'sent' | 'late'> => {
    if (ctx.now().getTime() - claimedAt > SEND_START_DEADLINE_MS) return 'late';
    const content = contentOf(message);
    try {
      if (message.channel === 'robot') {
        const robot = robotTarget(message);
        const result = await attemptRobotMessage(ctx.robots, robot, content);
        if (result.outcome === 'wait') return result;
      } else if (message.channel === 'email') {
        await ctx.mailer.send(message.email!, content, {
          unsubscribeUrl: unsubscribeUrl(ctx.config, {
            id: message.subscriber_id,
            email: message.email,
          }),
        });
      } else {
        await ctx.webhooks.send(
          { url: message.webhook_url!, secret: message.webhook_secret! },
          content,
        );
      }
      return 'sent';
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
  if (sent !== 'sent') return recordFailure(ctx, log, message, sent);
  await s.sent.markSent(message.id, new Date(), {
    ...(message.deferred ? { deferred: message.hold === 'cycle' ? 'cycle' : 'direct' } : {}),
  });
  // Per message at debug: at info a storm's 100,000 lines cost the workers 6 % more CPU
  // (BENCHMARKS.md item 49); the job's summary says it at info, the ledger message by message.
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
  const moved = await ctx.db.transaction(async (tx) => {
    // A quiet message's rest keeps its "while you were away" heading.
    await tx.execute(sql`
      INSERT INTO messages (id, subscriber_id, channel, status, hold, next_attempt_at)
      VALUES (${followUp}, ${message.subscriber_id}, ${message.channel}, 'pending',
              ${message.hold === 'quiet' ? 'quiet' : null}, now())`);
    const rows = await queryRows<{ id: string }>(
      tx,
      sql`UPDATE deliveries SET message_id = ${followUp}
          WHERE message_id = ${message.id} AND message_id <> id
            AND id = ANY(${sql.param([...ids])}::uuid[])
          RETURNING id`,
    );
    if (rows.length === 0) await tx.execute(sql`DELETE FROM messages WHERE id = ${followUp}`);
    return new Set(rows.map((r) => r.id));
  });
  message.notifications = message.notifications.filter((n) => !moved.has(n.id));
  if (moved.size === 0) return;
  await enqueueMessage(ctx.queues, { id: followUp, channel: message.channel }, 0);
  log.info(
    { messageId: message.id, followUp, moved: moved.size, kept: message.notifications.length },
    'robot message split: the rest follows in a message of its own',
  );
}

/** A waiting robot message joins one due at most this much later than its own wait. */
const JOIN_SLACK_MS = 5_000;

/** A robot message that could not be posted yet: the robot's rate limit, ours or the vendor's. */
interface RobotWait {
  outcome: 'wait';
  waitMs: number;
  reason: 'limit' | 'vendor';
}

/** The robot of a robot subscriber; its credential and secret are scrubbed from every log. */
function robotTarget(message: ClaimedMessage): {
  vendor: RobotVendor;
  url: string;
  secret: string | null;
} {
  registerSecret(robotCredential(message.robot_url!));
  registerSecret(message.robot_secret ?? undefined);
  return { vendor: message.robot_kind!, url: message.robot_url!, secret: message.robot_secret };
}

/**
 * A robot that cannot take the post yet (INTERFACE §7): the message is neither failed nor
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
  const outcome = await ctx.db.transaction(async (tx) => {
    await tx.execute(sql`
      SELECT pg_advisory_xact_lock(hashtextextended(${MESSAGE_LOCK}::text || ${message.subscriber_id}::text, 0))`);
    // Never posted, nor tried: not sent before a redelivery, no failed attempt that may have
    // reached the group after all (DingTalk's msgUuid is this id).
    const [own] = await queryRows<{ unseen: boolean }>(
      tx,
      sql`SELECT (sent_at IS NULL AND last_error IS NULL AND attempts = 1) AS unseen
          FROM messages WHERE id = ${message.id}`,
    );
    if (own?.unseen && message.hold !== 'quiet') {
      const [joined] = await queryRows<{ id: string }>(
        tx,
        sql`SELECT id FROM messages
            WHERE subscriber_id = ${message.subscriber_id} AND id <> ${message.id}
              AND status = 'open' AND hold = 'throttle'
              AND next_attempt_at >= now() + make_interval(secs => ${JOIN_MARGIN_MS / 1000})
              -- Not one that waits much longer (the hourly limit): this one would wait with it.
              AND next_attempt_at <= now() + make_interval(secs => ${(waitMs + JOIN_SLACK_MS) / 1000})
            ORDER BY next_attempt_at, id
            LIMIT 1
            FOR UPDATE`,
      );
      if (joined) {
        await tx.execute(
          sql`UPDATE deliveries d SET message_id = ${joined.id}
            WHERE ${carriedBy(sql`ARRAY[${message.id}]::uuid[]`)}`,
        );
        await tx.execute(sql`DELETE FROM messages WHERE id = ${message.id}`);
        return { joined: joined.id };
      }
    }
    const [row] = await queryRows<{ attempts: number }>(
      tx,
      sql`UPDATE messages SET status = 'open',
            hold = CASE WHEN hold = 'quiet' THEN 'quiet' ELSE 'throttle' END,
            attempts = attempts - 1, claimed_until = NULL, first_job_id = NULL,
            next_attempt_at = now() + make_interval(secs => ${waitMs / 1000}),
            last_error = ${why}, updated_at = now()
          WHERE id = ${message.id} AND status IN ('pending', 'retrying')
          RETURNING attempts`,
    );
    return row ? { attempts: row.attempts } : null;
  });
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
  await ctx.db.execute(sql`
    UPDATE messages m SET attempts = v.attempts, claimed_until = NULL, first_job_id = NULL,
      updated_at = now()
    FROM unnest(${sql.param(messages.map((m) => m.id))}::uuid[],
                ${sql.param(messages.map((m) => m.attempts - 1))}::int[]) AS v(id, attempts)
    WHERE m.id = v.id AND m.status IN ('pending', 'retrying')`);
  for (const m of messages) await enqueueMessage(ctx.queues, m, m.attempts - 1);
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
    await ctx.db.execute(sql`
      UPDATE messages SET status = 'dead', attempts = ${message.attempts}, claimed_until = NULL,
        last_error = ${lastError}, updated_at = now()
      WHERE id = ${message.id}`);
    log.warn(
      { channel: message.channel, attempt: message.attempts, error: failure.message },
      'message dead',
    );
    return 'dead';
  }

  const delayMs = retryDelayMs(message.attempts, ctx.random, failure.retryAfterMs);
  await ctx.db.execute(sql`
    UPDATE messages SET status = 'retrying', attempts = ${message.attempts},
      claimed_until = NULL, last_error = ${failure.message},
      next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}),
      updated_at = now()
    WHERE id = ${message.id}`);
  // Should this enqueue be lost (Redis down), the sweeper finds the due message without a job.
  await enqueueMessage(ctx.queues, message, message.attempts, delayMs);
  log.info(
    { channel: message.channel, attempt: message.attempts, delayMs, error: failure.message },
    'message will be retried',
  );
  return 'retrying';
}
