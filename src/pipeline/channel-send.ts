import { EmailError, MAIL_POOL_CONNECTIONS } from '../channels/email.js';
import { attemptRobotMessage } from '../channels/robot-delivery.js';
import { robotCredential } from '../channels/robot-identity.js';
import { RobotError } from '../channels/robot.js';
import { unsubscribeUrl } from '../channels/unsubscribe-token.js';
import { WebhookError } from '../channels/webhook.js';
import type { Message } from '../domain/message-render.js';
import type { RobotVendor } from '../domain/robot-render.js';
import type { Channel, SubscriberAddress } from '../ledger/index.js';
import { registerSecret, scrub } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';

/**
 * One send through a subscriber's channel, and what its failure means: the deliver job's attempt
 * and `qwn test-send`'s.
 */

/** Longest last_error kept in the ledger: enough for an SMTP reply, bounded for a listing. */
export const MAX_ERROR_LENGTH = 1000;

/** A failed send as the ledger records it. */
export interface Failure {
  retryable: boolean;
  message: string;
  retryAfterMs?: number;
  gone?: boolean;
  /** The channel refused us, not this message: it pauses (src/channels/channel-pause.ts). */
  channelRefused?: boolean;
}

/** What a channel's error means for the message: retry, give up, disable, or pause. */
export function classify(err: unknown): Failure {
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

/** A robot message that could not be posted yet: the robot's rate limit, ours or the vendor's. */
export interface RobotWait {
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
