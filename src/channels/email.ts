import nodemailer from 'nodemailer';
import type { NodemailerError } from 'nodemailer/lib/errors';
import { renderEmailMessage, type Message } from '../domain/message-render.js';
import { registerSecret, scrub, type Logger } from '../logger.js';
import { startDeadline } from './deadline.js';
import { composeMime, MimeHeaderError, parseMailFrom } from './mime.js';

/**
 * Email deliveries (docs/messages.md) over pooled SMTP. SMTP replies are classified here
 *: 4xx means later, 5xx means never; a connection that fails or stalls means later.
 */

export class EmailError extends Error {
  override readonly name = 'EmailError';
  readonly retryable: boolean;
  readonly responseCode?: number;
  /** The server's reply, kept for the ledger. */
  readonly response?: string;
  /** The server refused us, not this message (the login): the channel pauses (channel-pause.ts). */
  readonly channelRefused: boolean;

  constructor(
    message: string,
    o: {
      retryable: boolean;
      responseCode?: number;
      response?: string;
      cause?: unknown;
      channelRefused?: boolean;
    },
  ) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.retryable = o.retryable;
    this.channelRefused = o.channelRefused ?? false;
    if (o.responseCode !== undefined) this.responseCode = o.responseCode;
    if (o.response !== undefined) this.response = o.response;
  }
}

export interface EmailSendOptions {
  /**
   * The subscriber's one-click unsubscribe URL (`unsubscribeUrl()` in unsubscribe-token.ts).
   * With it the email carries `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058);
   * without it neither: a header naming a mailbox nobody reads would promise an unsubscribe
   * that never happens.
   */
  unsubscribeUrl?: string | undefined;
}

export interface Mailer {
  /** Sends one message; its id makes the `Message-ID`, the same on every retry and redelivery. */
  send(
    to: string,
    m: Message,
    options?: EmailSendOptions,
  ): Promise<{ messageId: string; response: string }>;
  close(): Promise<void>;
}

export interface MailerOptions {
  smtpUrl: string | undefined;
  from: string | undefined;
  logger: Logger;
  /** Bound on one send, queueing in the pool included (default 60 s, well inside a job lock). */
  sendTimeoutMs?: number;
}

// Short enough that a dead SMTP server fails the attempt long before the job's lock runs out.
const CONNECTION_TIMEOUT_MS = 10_000;
const GREETING_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 20_000;
const DEFAULT_SEND_TIMEOUT_MS = 60_000;

/** Errors without an SMTP reply that no retry can fix: the message or the setup is wrong. */
const PERMANENT_CODES = new Set(['ECONFIG', 'EENVELOPE', 'EMAXRECIPIENTS']);

/**
 * The login refused (535 bad credentials, 534 a stronger mechanism wanted, 530 authentication
 * required; nodemailer's EAUTH and ENOAUTH): true of every email until the operator fixes the
 * credentials, so the channel pauses instead of each email dying.
 */
const LOGIN_REFUSED_REPLIES = new Set([530, 534, 535]);
const LOGIN_REFUSED_CODES = new Set(['EAUTH', 'ENOAUTH']);

/** The stable Message-ID of a message: a consumer can drop a rare duplicate by it. */
export function messageIdFor(id: string): string {
  return `<${id}@qwn>`;
}

export function classifySmtpError(err: unknown): EmailError {
  if (err instanceof MimeHeaderError) {
    return new EmailError(`email could not be composed: ${err.message}`, {
      retryable: false,
      cause: err,
    });
  }
  const e = (err ?? {}) as NodemailerError;
  const response = typeof e.response === 'string' ? scrub(e.response) : undefined;
  if (
    (typeof e.code === 'string' && LOGIN_REFUSED_CODES.has(e.code)) ||
    (typeof e.responseCode === 'number' && LOGIN_REFUSED_REPLIES.has(e.responseCode))
  ) {
    return new EmailError(
      `SMTP server refused the login${e.responseCode ? ` (${e.responseCode})` : ''}: ` +
        `${response ?? (err instanceof Error ? scrub(err.message) : String(err))}; check the ` +
        'user and password of SMTP_URL',
      {
        retryable: true,
        channelRefused: true,
        ...(typeof e.responseCode === 'number' ? { responseCode: e.responseCode } : {}),
        ...(response === undefined ? {} : { response }),
        cause: err,
      },
    );
  }
  if (typeof e.responseCode === 'number') {
    // RFC 5321: 5yz is a permanent rejection, 4yz transient. 503 (bad sequence) says the
    // session was in the wrong state, not that the message was refused: try again.
    const permanent = e.responseCode >= 500 && e.responseCode !== 503;
    return new EmailError(
      `SMTP server ${permanent ? 'rejected' : 'deferred'} the message: ${response ?? e.responseCode}`,
      {
        retryable: !permanent,
        responseCode: e.responseCode,
        ...(response === undefined ? {} : { response }),
        cause: err,
      },
    );
  }
  const code = typeof e.code === 'string' ? e.code : undefined;
  const detail = err instanceof Error ? scrub(err.message) : String(err);
  if (code !== undefined && PERMANENT_CODES.has(code)) {
    return new EmailError(`email could not be sent (${code}): ${detail}`, {
      retryable: false,
      cause: err,
    });
  }
  return new EmailError(`SMTP connection failed (${code ?? 'error'}): ${detail}`, {
    retryable: true,
    cause: err,
  });
}

/** RFC 8058: the one URL between angle brackets, and the one-click marker beside it. */
function withUnsubscribe(
  headers: Readonly<Record<string, string>>,
  url: string | undefined,
): Readonly<Record<string, string>> {
  if (url === undefined) return headers;
  if (!/^https?:\/\/[^\s<>,]+$/.test(url)) {
    throw new MimeHeaderError('the unsubscribe URL must be an http(s) URL without spaces');
  }
  return {
    ...headers,
    'List-Unsubscribe': `<${url}>`,
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  };
}

function unconfigured(problem: string): Mailer {
  return {
    send() {
      return Promise.reject(
        new EmailError(`${problem}; email deliveries cannot be sent`, { retryable: false }),
      );
    },
    close: () => Promise.resolve(),
  };
}

/**
 * SMTP connections per process; the deliver job keeps about twice as many sends queued. Under
 * load 10 connections sent a storm's email about a quarter faster (a send is two round trips),
 * but every message on the wire when a process dies is sent again after the restart: with 10,
 * a worker killed mid-storm resent 18 of 753 notifications, over the fault suite's bound of
 * max(5, 2 %) (docs/benchmarks-history.md, item 12).
 */
export const MAIL_POOL_CONNECTIONS = 5;

export function createMailer(o: MailerOptions): Mailer {
  if (!o.smtpUrl) return unconfigured('SMTP_URL is not set');
  if (!o.from) return unconfigured('MAIL_FROM is not set');
  const from = parseMailFrom(o.from);
  if (!from) return unconfigured('MAIL_FROM has no email address');

  try {
    registerSecret(decodeURIComponent(new URL(o.smtpUrl).password));
  } catch {
    // An unparseable URL fails in nodemailer below with a clearer message.
  }

  const transport = nodemailer.createTransport({
    url: o.smtpUrl,
    pool: true,
    maxConnections: MAIL_POOL_CONNECTIONS,
    connectionTimeout: CONNECTION_TIMEOUT_MS,
    greetingTimeout: GREETING_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    dnsTimeout: CONNECTION_TIMEOUT_MS,
    logger: false,
  });
  // An 'error' event without a listener would take the whole worker down; sends report their
  // own failures, so this is only a log line.
  transport.on('error', (err: Error) => {
    o.logger.warn({ err }, 'smtp transport error');
  });
  const sendTimeoutMs = o.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
  const headers: Record<string, string> = {
    // Tells vacation responders and the like not to answer an automated message (RFC 3834).
    'Auto-Submitted': 'auto-generated',
  };

  return {
    async send(to, m, options = {}) {
      const { subject, text, html } = renderEmailMessage(m, {
        ...(options.unsubscribeUrl ? { unsubscribeUrl: options.unsubscribeUrl } : {}),
      });
      const messageId = messageIdFor(m.id);
      const deadline = startDeadline(sendTimeoutMs);
      try {
        const raw = composeMime({
          from,
          to,
          subject,
          messageId,
          date: new Date(),
          headers: withUnsubscribe(headers, options.unsubscribeUrl),
          text,
          html,
          boundary: `qwn-alt-${m.id}`,
        });
        const info = await transport.sendMail({
          envelope: { from: from.address, to: [to] },
          raw,
          // The Message-ID is in `raw` already; naming it spares nodemailer inventing one.
          messageId,
          signal: deadline.signal,
        });
        o.logger.debug({ messageId: m.id, response: info.response }, 'email sent');
        return { messageId, response: info.response };
      } catch (err) {
        const failure = classifySmtpError(err);
        o.logger.debug(
          {
            messageId: m.id,
            retryable: failure.retryable,
            responseCode: failure.responseCode,
          },
          'email failed',
        );
        throw failure;
      } finally {
        deadline.clear();
      }
    },
    close() {
      transport.close();
      return Promise.resolve();
    },
  };
}
