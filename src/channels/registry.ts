import {
  renderEmailMessage,
  renderWebhookMessage,
  type Message,
} from '../domain/message-render.js';
import { renderRobotBody, type RobotVendor } from '../domain/robot-render.js';
import { registerSecret, scrub } from '../logger.js';
import { EmailError, MAIL_POOL_CONNECTIONS, type Mailer } from './email.js';
import type { Channel } from './kinds.js';
import { attemptRobotMessage } from './robot-delivery.js';
import { describeRobot, robotCredential } from './robot-identity.js';
import type { RobotRateLimiter } from './robot-rate-limit.js';
import { RobotError, type RobotSender } from './robot.js';
import { unsubscribeUrl } from './unsubscribe-token.js';
import { WebhookError, type WebhookSender } from './webhook.js';

/**
 * The channels by name, each with its send and what its receiving end's "gone" means: the deliver
 * job's attempt and `qwn test-send`'s go through `sendThroughChannel`, and what a failure means
 * is `classify`'s. Their traits (batching, queues, grouping) are src/channels/kinds.ts.
 */

/** Where a subscriber is sent to: the columns of its one address, and its secrets. */
export interface ChannelAddress {
  subscriber_id: string;
  email: string | null;
  webhook_url: string | null;
  webhook_secret: string | null;
  robot_kind: RobotVendor | null;
  robot_url: string | null;
  robot_secret: string | null;
}

/** What the senders need of the runtime. */
export interface ChannelDeps {
  readonly config: Parameters<typeof unsubscribeUrl>[0];
  readonly mailer: Mailer;
  readonly webhooks: WebhookSender;
  readonly robots: { readonly limiter: RobotRateLimiter; readonly sender: RobotSender };
}

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
function robotTarget(to: ChannelAddress): {
  vendor: RobotVendor;
  url: string;
  secret: string | null;
} {
  registerSecret(robotCredential(to.robot_url!));
  registerSecret(to.robot_secret ?? undefined);
  return { vendor: to.robot_kind!, url: to.robot_url!, secret: to.robot_secret };
}

type Sent = { outcome: 'sent'; answer: string } | RobotWait;

interface ChannelSender {
  send(deps: ChannelDeps, to: ChannelAddress, content: Message): Promise<Sent>;
  /** Why the subscriber is disabled when its receiving end is gone (a 410, a removed robot). */
  goneReason(to: ChannelAddress, at: string, messageId: string, detail: string): string;
  /** The log line of a gone receiving end, and its fields. */
  goneLog(to: ChannelAddress): { fields: Record<string, string>; phrase: string };
  /** The message as the channel would carry it, for a terminal (`qwn preview`). */
  terminalView(to: ChannelAddress, content: Message): string;
}

const SENDERS: Readonly<Record<Channel, ChannelSender>> = {
  email: {
    async send(deps, to, content) {
      const sent = await deps.mailer.send(to.email!, content, {
        unsubscribeUrl: unsubscribeUrl(deps.config, { id: to.subscriber_id, email: to.email }),
      });
      return { outcome: 'sent', answer: `accepted by the SMTP server: ${sent.response}` };
    },
    // A mailbox is never "gone": an SMTP server's refusals are failures of their own.
    goneReason: (_to, at, messageId, detail) =>
      `mailbox gone at ${at} (message ${messageId}): ${detail}`,
    goneLog: () => ({ fields: {}, phrase: 'mailbox gone, subscriber disabled' }),
    terminalView(to, content) {
      const email = renderEmailMessage(content);
      return [`To: ${to.email}`, `Subject: ${email.subject}`, '', email.text].join('\n');
    },
  },
  webhook: {
    async send(deps, to, content) {
      const sent = await deps.webhooks.send(
        { url: to.webhook_url!, secret: to.webhook_secret! },
        content,
      );
      return { outcome: 'sent', answer: `the webhook answered ${sent.status}` };
    },
    goneReason: (_to, at, messageId) => `webhook answered 410 Gone at ${at} (message ${messageId})`,
    goneLog: () => ({ fields: {}, phrase: 'webhook gone, subscriber disabled' }),
    terminalView: (to, content) =>
      [`POST ${to.webhook_url}`, '', JSON.stringify(renderWebhookMessage(content), null, 2)].join(
        '\n',
      ),
  },
  robot: {
    async send(deps, to, content) {
      const result = await attemptRobotMessage(deps.robots, robotTarget(to), content);
      if (result.outcome === 'wait') return result;
      return { outcome: 'sent', answer: `the robot ${result.robot} took the post` };
    },
    goneReason: (_to, at, messageId, detail) =>
      `robot gone or its token invalid at ${at} (message ${messageId}): ${detail}`,
    goneLog: (to) => ({
      fields: { robot: describeRobot(to.robot_url!) },
      phrase: 'robot gone, subscriber disabled',
    }),
    terminalView: (to, content) =>
      JSON.stringify(renderRobotBody(to.robot_kind!, content.notifications, content.id), null, 2),
  },
};

/**
 * One send of `content` to a subscriber through their channel, the channel's errors thrown as it
 * classified them: the deliver job's attempt, and `qwn test-send`'s. `answer` is what the
 * receiving end said, for an operator.
 */
export function sendThroughChannel(
  deps: ChannelDeps,
  channel: Channel,
  to: ChannelAddress,
  content: Message,
): Promise<Sent> {
  return SENDERS[channel].send(deps, to, content);
}

/** `content` as the subscriber's channel would carry it, for a terminal. */
export function terminalView(channel: Channel, to: ChannelAddress, content: Message): string {
  return SENDERS[channel].terminalView(to, content);
}

/** What disabling a subscriber whose receiving end is gone says, and logs. */
export function goneReceiver(
  channel: Channel,
  to: ChannelAddress,
  at: string,
  messageId: string,
  detail: string,
): { reason: string; log: { fields: Record<string, string>; phrase: string } } {
  const sender = SENDERS[channel];
  return { reason: sender.goneReason(to, at, messageId, detail), log: sender.goneLog(to) };
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
