import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { EmailError } from '../channels/email.js';
import { WebhookError } from '../channels/webhook.js';
import { queryRows } from '../db/client.js';
import type { EventType } from '../domain/detect.js';
import type { Notification } from '../domain/render.js';
import { MAX_DELIVERY_ATTEMPTS, retryDelayMs } from '../domain/retry.js';
import type { Warning } from '../domain/warning.js';
import { scrub } from '../logger.js';
import type { PipelineContext } from './context.js';
import { deliverJobId, type Queues } from './queues.js';

export const DELIVER_JOB = 'deliver';

export const deliverPayload = z.object({ deliveryId: z.string().uuid() });
export type DeliverPayload = z.infer<typeof deliverPayload>;

/**
 * How long a sender holds a row. Longer than any single send (SMTP and webhook timeouts are
 * well under a minute), so only a crashed sender's claim ever runs out.
 */
const CLAIM_SECONDS = 120;

/** A deliver job may fire a moment before the row's time (clocks of app and database). */
const EARLY_TOLERANCE_SECONDS = 5;

export type DeliverOutcome = 'sent' | 'retrying' | 'dead' | 'skipped';

interface ClaimedRow {
  id: string;
  attempts: number;
  channel: 'email' | 'webhook';
  event_type: EventType;
  warning_id: string;
  place_id: string;
  subscriber_id: string;
  email: string | null;
  webhook_url: string | null;
  webhook_secret: string | null;
  lang: 'zh' | 'en';
  active: boolean;
  disabled_reason: string | null;
  record: Omit<Warning, 'raw'>;
  supersedes: string[];
  /** v1: `metadata.attributions` of the answer the event came from; null for v7. */
  attributions: string[] | null;
  detected_at: Date;
  place_name: string | null;
  place_tz: string | null;
}

const ATTRIBUTION = {
  zh: '天气数据来源：和风天气 QWeather',
  en: 'Weather data: QWeather',
} as const;

/** Longest last_error kept in the ledger: enough for an SMTP reply, bounded for a listing. */
const MAX_ERROR_LENGTH = 1000;

/** BullMQ states in which a job still runs by itself: an enqueue with its id would be ignored. */
const LIVE_STATES = new Set(['waiting', 'active', 'prioritized', 'waiting-children']);

/**
 * Adds the deliver job for a row's next attempt, `deliverJobId(id, attempts)`. A finished or
 * delayed job can already hold that id when the row was redelivered (its attempts start again
 * from 0); BullMQ would silently drop the new job, so the old one is removed first. A live job
 * with the id is left alone: it runs the attempt. Returns whether a job was added.
 */
export async function enqueueDelivery(
  queues: Pick<Queues, 'deliver'>,
  deliveryId: string,
  attempts: number,
  delayMs = 0,
): Promise<boolean> {
  const jobId = deliverJobId(deliveryId, attempts);
  const existing = await queues.deliver.getJob(jobId);
  if (existing) {
    if (LIVE_STATES.has(await existing.getState())) return false;
    try {
      await existing.remove();
    } catch {
      // Taken by a worker a moment ago: that job makes the attempt.
      return false;
    }
  }
  await queues.deliver.add(
    DELIVER_JOB,
    { deliveryId },
    { jobId, ...(delayMs > 0 ? { delay: delayMs } : {}) },
  );
  return true;
}

/** First attempts of rows a check just committed (job id = row id and attempt 0). */
export async function enqueueFirstAttempts(
  queues: Pick<Queues, 'deliver'>,
  deliveryIds: readonly string[],
): Promise<void> {
  if (deliveryIds.length === 0) return;
  await queues.deliver.addBulk(
    deliveryIds.map((deliveryId) => ({
      name: DELIVER_JOB,
      data: { deliveryId },
      opts: { jobId: deliverJobId(deliveryId, 0) },
    })),
  );
}

/** Claims a due row for this attempt; null when it is sent, dead, not due, or held elsewhere. */
async function claim(ctx: PipelineContext, deliveryId: string): Promise<ClaimedRow | null> {
  const [row] = await queryRows<ClaimedRow>(
    ctx.db,
    sql`WITH claimed AS (
          UPDATE deliveries SET
            attempts = attempts + 1,
            claimed_until = now() + make_interval(secs => ${CLAIM_SECONDS}),
            updated_at = now()
          WHERE id = ${deliveryId}
            AND status IN ('pending', 'retrying')
            AND next_attempt_at <= now() + make_interval(secs => ${EARLY_TOLERANCE_SECONDS})
            AND (claimed_until IS NULL OR claimed_until < now())
          RETURNING *)
        SELECT c.id, c.attempts, c.channel, c.event_type, c.warning_id, c.place_id, c.subscriber_id,
               s.email, s.webhook_url, s.webhook_secret, s.lang, s.active, s.disabled_reason,
               e.record, e.supersedes, e.attributions, e.detected_at,
               p.name AS place_name, p.tz AS place_tz
        FROM claimed c
        JOIN subscribers s ON s.id = c.subscriber_id
        JOIN events e ON e.id = c.event_id
        LEFT JOIN places p ON p.id = c.place_id`,
  );
  return row ?? null;
}

export function notificationFor(row: ClaimedRow): Notification {
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
    attribution: ATTRIBUTION[row.lang],
    ...(row.attributions ? { attributions: row.attributions } : {}),
    lang: row.lang,
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

/** The deliver job: one attempt at one delivery row, then the row's next state. */
export async function runDeliver(
  ctx: PipelineContext,
  payload: DeliverPayload,
): Promise<DeliverOutcome> {
  const log = ctx.logger.child({ job: DELIVER_JOB, deliveryId: payload.deliveryId });
  const row = await claim(ctx, payload.deliveryId);
  if (!row) {
    log.debug('delivery not due or already handled');
    return 'skipped';
  }

  let failure: Failure | null = null;
  if (!row.active) {
    const why = row.disabled_reason ? `subscriber is disabled: ${row.disabled_reason}` : null;
    failure = { retryable: false, message: why ?? 'subscriber is paused (active = false)' };
  } else {
    const notification = notificationFor(row);
    try {
      if (row.channel === 'email') {
        await ctx.mailer.send(row.email!, notification);
      } else {
        await ctx.webhooks.send(
          { url: row.webhook_url!, secret: row.webhook_secret! },
          notification,
        );
      }
    } catch (err) {
      failure = classify(err);
    }
  }

  if (!failure) {
    await ctx.db.execute(sql`
      UPDATE deliveries SET status = 'sent', sent_at = now(), claimed_until = NULL,
        last_error = NULL, updated_at = now()
      WHERE id = ${row.id}`);
    log.info({ channel: row.channel, attempt: row.attempts }, 'notification delivered');
    return 'sent';
  }

  if (failure.gone) {
    const reason = `webhook answered 410 Gone at ${ctx.now().toISOString()} (delivery ${row.id})`;
    await ctx.db.execute(sql`
      UPDATE subscribers SET active = false, updated_at = now(), disabled_reason = ${reason}
      WHERE id = ${row.subscriber_id}`);
    log.warn({ subscriberId: row.subscriber_id }, 'webhook gone, subscriber disabled');
  }

  if (!failure.retryable || row.attempts >= MAX_DELIVERY_ATTEMPTS) {
    const lastError = failure.retryable
      ? `gave up after ${row.attempts} attempts: ${failure.message}`.slice(0, MAX_ERROR_LENGTH)
      : failure.message;
    await ctx.db.execute(sql`
      UPDATE deliveries SET status = 'dead', claimed_until = NULL, last_error = ${lastError},
        updated_at = now()
      WHERE id = ${row.id}`);
    log.warn(
      { channel: row.channel, attempt: row.attempts, error: failure.message },
      'delivery dead',
    );
    return 'dead';
  }

  const delayMs = retryDelayMs(row.attempts, ctx.random, failure.retryAfterMs);
  await ctx.db.execute(sql`
    UPDATE deliveries SET status = 'retrying', claimed_until = NULL,
      last_error = ${failure.message},
      next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}),
      updated_at = now()
    WHERE id = ${row.id}`);
  // Should this enqueue be lost (Redis down), the sweeper finds the due row without a job.
  await enqueueDelivery(ctx.queues, row.id, row.attempts, delayMs);
  log.info(
    { channel: row.channel, attempt: row.attempts, delayMs, error: failure.message },
    'delivery will be retried',
  );
  return 'retrying';
}
