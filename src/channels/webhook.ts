import { createHmac } from 'node:crypto';
import type dns from 'node:dns';
import { createRequire } from 'node:module';
import type { Dispatcher } from 'undici';
import { renderWebhookMessage, type Message } from '../domain/message-render.js';
import { parseRetryAfter } from '../domain/retry.js';
import type { Logger } from '../logger.js';
import {
  createGuardedAgent,
  postOnce,
  readTransportFailure,
  refusedLiteral,
  type PostAnswer,
} from './outbound.js';
import { Recent } from './recent.js';
import { decodeWebhookKey, SECRET_MIN_BYTES, WEBHOOK_SECRET_PREFIX } from './webhook-secret.js';

/**
 * Webhook deliveries (docs/messages.md): one signed POST per attempt, classified on the spot
 *. 2xx is success; 410 means the endpoint is gone; everything else, a timeout or a
 * refused connection is worth another attempt later. Redirects are never followed: the signed
 * body must not travel to a place the subscriber did not register.
 */

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
export const USER_AGENT = `qwn/${version}`;

/** We only drain the answer so the connection can be reused; nobody reads more than this. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export type WebhookFailureKind =
  | 'refused-address'
  | 'invalid-target'
  | 'timeout'
  | 'connection'
  | 'redirect'
  | 'gone'
  | 'http-status';

export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  readonly kind: WebhookFailureKind;
  readonly retryable: boolean;
  /** 410 Gone: the subscriber's endpoint should be disabled. */
  readonly gone: boolean;
  readonly status?: number;
  /** The receiver's Retry-After, in milliseconds from the failed attempt. */
  readonly retryAfterMs?: number;

  constructor(
    message: string,
    o: {
      kind: WebhookFailureKind;
      retryable: boolean;
      gone?: boolean;
      status?: number;
      retryAfterMs?: number;
      cause?: unknown;
    },
  ) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.kind = o.kind;
    this.retryable = o.retryable;
    this.gone = o.gone ?? false;
    if (o.status !== undefined) this.status = o.status;
    if (o.retryAfterMs !== undefined) this.retryAfterMs = o.retryAfterMs;
  }
}

export interface WebhookTarget {
  url: string;
  /** `whsec_` + base64 key (Standard Webhooks). */
  secret: string;
}

export interface WebhookSender {
  /** POSTs one message; its id is the `webhook-id`, the same on every retry and redelivery. */
  send(target: WebhookTarget, m: Message): Promise<{ status: number; webhookId: string }>;
  close(): Promise<void>;
}

export interface WebhookSenderOptions {
  allowPrivate: boolean;
  /** Bound on one attempt, connecting and reading the answer included. */
  timeoutMs: number;
  logger: Logger;
  /**
   * A dispatcher to send through instead of the sender's own guarded Agent. The caller then owns
   * its lifecycle, its address policy and its timeouts per phase; IP literal targets are still
   * checked here, and `timeoutMs` still bounds the whole attempt.
   */
  dispatcher?: Dispatcher;
  /** Replaces dns.lookup in the sender's own Agent (tests point hostnames at chosen addresses). */
  lookup?: typeof dns.lookup;
  /** Signing time; defaults to the wall clock. */
  now?: () => Date;
}

function parseTarget(url: string, allowPrivate: boolean): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new WebhookError('webhook URL is not a valid absolute URL', {
      kind: 'invalid-target',
      retryable: false,
      cause,
    });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new WebhookError(`webhook URL must be http or https, not ${parsed.protocol}`, {
      kind: 'invalid-target',
      retryable: false,
    });
  }
  const refused = refusedLiteral(parsed, allowPrivate);
  if (refused) {
    throw new WebhookError(refused.message, {
      kind: 'refused-address',
      retryable: false,
      cause: refused,
    });
  }
  return parsed;
}

/**
 * The Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256, keyed by the secret's
 * base64 key, of `id.timestamp.body`. node:crypto rather than standardwebhooks' `sign`: the
 * library hashes in JavaScript, which was a measurable part of a storm's worker profile. The
 * tests verify these signatures with the library.
 */
export function signWebhook(secret: string, id: string, at: Date, body: string): string {
  return signWithKey(signingKey(secret), id, at, Buffer.from(body));
}

/** The HMAC key a `whsec_` secret encodes, or a WebhookError that names only the problem. */
function signingKey(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX)
    ? secret.slice(WEBHOOK_SECRET_PREFIX.length)
    : secret;
  const decoded = decodeWebhookKey(encoded);
  if ('problem' in decoded || decoded.key.length < SECRET_MIN_BYTES) {
    // Names only the problem: a message quoting the secret would end up in the ledger.
    throw new WebhookError('webhook secret is not a valid whsec_ base64 key', {
      kind: 'invalid-target',
      retryable: false,
    });
  }
  return decoded.key;
}

/**
 * The signed content's parts hashed one after the other: the body is the same bytes for every
 * subscriber of an event, and `id.timestamp.body` as one string was a copy of it, then its UTF-8
 * encoding, at every send.
 */
function signWithKey(key: Buffer, id: string, at: Date, body: Buffer): string {
  const timestamp = Math.floor(at.getTime() / 1000);
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/**
 * `text` in UTF-8, in memory of its own: a small `Buffer.from` is a slice of Node's shared 8 KB
 * pool, and a body kept in the cache would keep its whole slab alive.
 */
function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/**
 * Decoded keys kept, per generation of `Recent`: the desks that get most of a storm's webhooks,
 * with room to spare.
 */
const SIGNING_KEYS_KEPT = 5000;
/** Bodies kept, per generation: a storm's events in both languages, as the checks commit them. */
const BODIES_KEPT = 2048;

function statusFailure(status: number, headers: Dispatcher.ResponseData['headers'], at: Date) {
  if (status === 410) {
    return new WebhookError('webhook endpoint answered 410 Gone', {
      kind: 'gone',
      retryable: false,
      gone: true,
      status,
    });
  }
  const retryAfterMs = parseRetryAfter(headers['retry-after'], at);
  if (status >= 300 && status < 400) {
    return new WebhookError(`webhook endpoint answered ${status}; redirects are not followed`, {
      kind: 'redirect',
      retryable: true,
      status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  return new WebhookError(`webhook endpoint answered ${status}`, {
    kind: 'http-status',
    retryable: true,
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

function transportFailure(err: unknown, host: string): WebhookError {
  const failure = readTransportFailure(err);
  if (failure.refused) {
    return new WebhookError(failure.refused.message, {
      kind: 'refused-address',
      retryable: false,
      cause: failure.refused,
    });
  }
  if (failure.timedOut) {
    return new WebhookError(`webhook to ${host} timed out`, {
      kind: 'timeout',
      retryable: true,
      cause: err,
    });
  }
  return new WebhookError(`webhook to ${host} failed: ${failure.code ?? 'connection error'}`, {
    kind: 'connection',
    retryable: true,
    cause: err,
  });
}

export function createWebhookSender(o: WebhookSenderOptions): WebhookSender {
  const ownAgent = o.dispatcher ? undefined : createGuardedAgent(o);
  const dispatcher: Dispatcher = o.dispatcher ?? ownAgent!;
  const now = o.now ?? (() => new Date());
  const keys = new Recent<Buffer>(SIGNING_KEYS_KEPT);
  // Rendered and encoded once per event, language and kind of telling, not once per subscriber:
  // undici writes the bytes as they are, and the signature hashes them.
  const bodies = new Recent<Buffer>(BODIES_KEPT);
  const render = (m: Message) => ownBytes(JSON.stringify(renderWebhookMessage(m)));

  return {
    async send(target, m) {
      const url = parseTarget(target.url, o.allowPrivate);
      const body =
        m.webhookBodyKey === undefined ? render(m) : bodies.get(m.webhookBodyKey, () => render(m));
      const at = now();
      const signature = signWithKey(keys.get(target.secret, signingKey), m.id, at, body);
      // Plain fields, not a child logger: a child per send was measurable in a storm's profile.
      const ids = { messageId: m.id, host: url.host };
      let response: PostAnswer;
      try {
        response = await postOnce(
          dispatcher,
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            headers: {
              'content-type': 'application/json',
              'user-agent': USER_AGENT,
              'webhook-id': m.id,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': signature,
            },
            body,
          },
          // The status is what counts: the answer is drained, so the connection can be reused.
          { timeoutMs: o.timeoutMs, maxAnswerBytes: MAX_RESPONSE_BYTES, answer: 'status' },
        );
      } catch (err) {
        const failure = transportFailure(err, url.host);
        o.logger.debug({ ...ids, kind: failure.kind }, 'webhook failed');
        throw failure;
      }

      if (response.status >= 200 && response.status < 300) {
        o.logger.debug({ ...ids, status: response.status }, 'webhook delivered');
        return { status: response.status, webhookId: m.id };
      }
      const failure = statusFailure(response.status, response.headers, now());
      o.logger.debug({ ...ids, status: response.status, kind: failure.kind }, 'webhook failed');
      throw failure;
    },

    async close() {
      await ownAgent?.close();
    },
  };
}
