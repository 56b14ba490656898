import type dns from 'node:dns';
import type { Dispatcher } from 'undici';
import type { Notification } from '../domain/render.js';
import { renderRobotBody, type RobotBody, type RobotVendor } from '../domain/robot-render.js';
import { parseRetryAfter } from '../domain/retry.js';
import { scrub, type Logger } from '../logger.js';
import {
  createGuardedAgent,
  postOnce,
  readTransportFailure,
  refusedLiteral,
  type PostAnswer,
} from './outbound.js';
import { dingtalk } from './dingtalk.js';
import { feishu } from './feishu.js';
import { describeRobot, robotCredential } from './robot-identity.js';
import type { RobotFailure, RobotFailureKind, RobotVendorAdapter } from './robot-vendor.js';
import { USER_AGENT } from './webhook.js';
import { wecom } from './wecom.js';

/**
 * Chat-robot deliveries (docs/messages.md): one POST per attempt of one message, classified on the
 * spot. Success is code 0 in an HTTP 200 body and nothing else. Like webhooks, posts
 * go through the SSRF guard and never follow redirects. The robot URL is a secret: errors and
 * log lines name the robot by host and fingerprint (`describeRobot`), never by its URL.
 */

export type { RobotFailureKind } from './robot-vendor.js';

const ADAPTERS: Record<RobotVendor, RobotVendorAdapter> = { wecom, dingtalk, feishu };

/** Answers are a few hundred bytes; nobody reads more than this. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** A vendor's message is kept for the ledger, not for a novel. */
const MAX_VENDOR_MESSAGE = 300;

export class RobotError extends Error {
  override readonly name = 'RobotError';
  readonly kind: RobotFailureKind;
  readonly vendor: RobotVendor;
  /** Worth another attempt later (rate-limited and retryable). */
  readonly retryable: boolean;
  /** The robot is gone or its token invalid: disable the subscriber, as with a webhook's 410. */
  readonly gone: boolean;
  /** For rate-limited: how long the robot is locked, from the failed attempt. */
  readonly retryAfterMs?: number;
  readonly status?: number;
  readonly vendorCode?: number;
  /** The vendor's own words, scrubbed and clipped; what a dead letter should show. */
  readonly vendorMessage?: string;

  constructor(
    message: string,
    o: {
      kind: RobotFailureKind;
      vendor: RobotVendor;
      retryAfterMs?: number;
      status?: number;
      vendorCode?: number;
      vendorMessage?: string;
      cause?: unknown;
    },
  ) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.kind = o.kind;
    this.vendor = o.vendor;
    this.retryable = o.kind === 'rate-limited' || o.kind === 'retryable';
    this.gone = o.kind === 'gone';
    if (o.retryAfterMs !== undefined) this.retryAfterMs = o.retryAfterMs;
    if (o.status !== undefined) this.status = o.status;
    if (o.vendorCode !== undefined) this.vendorCode = o.vendorCode;
    if (o.vendorMessage !== undefined) this.vendorMessage = o.vendorMessage;
  }
}

export interface RobotTarget {
  vendor: RobotVendor;
  /** The robot's webhook URL: identity and credential at once. */
  url: string;
  /** DingTalk / Feishu signing secret; absent when the robot uses keywords or an IP list. */
  secret?: string | null;
}

export interface RobotMessage {
  /** The message id: DingTalk's `msgUuid`, stable across retries and redeliveries. */
  id: string;
  /** 1..N notifications of one subscriber. */
  notifications: readonly Notification[];
}

export interface RobotSender {
  /** Renders and posts one message; resolves on success, throws RobotError otherwise. */
  send(target: RobotTarget, message: RobotMessage): Promise<{ messageId: string; robot: string }>;
  /** Posts an already rendered body (what `send` does after rendering). */
  post(
    target: RobotTarget,
    messageId: string,
    body: RobotBody,
  ): Promise<{ messageId: string; robot: string }>;
  close(): Promise<void>;
}

export interface RobotSenderOptions {
  allowPrivate: boolean;
  /** Bound on one attempt, connecting and reading the answer included. */
  timeoutMs: number;
  logger: Logger;
  /** A dispatcher to send through instead of the sender's own guarded Agent (caller owns it). */
  dispatcher?: Dispatcher;
  /** Replaces dns.lookup in the sender's own Agent (tests point hostnames at chosen addresses). */
  lookup?: typeof dns.lookup;
  /** Signing time; defaults to the wall clock. */
  now?: () => Date;
}

/** Text from outside (a vendor's message) with the robot's credential and secret taken out. */
function cleaned(text: string, target: RobotTarget): string {
  let out = scrub(text);
  for (const secret of [robotCredential(target.url), target.secret]) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out.length > MAX_VENDOR_MESSAGE ? `${out.slice(0, MAX_VENDOR_MESSAGE)}…` : out;
}

function parseTarget(target: RobotTarget, allowPrivate: boolean, robot: string): URL {
  let url: URL;
  try {
    url = new URL(target.url.trim());
  } catch {
    throw new RobotError(`${target.vendor} robot ${robot}: URL is not a valid absolute URL`, {
      kind: 'refused',
      vendor: target.vendor,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RobotError(`${target.vendor} robot ${robot}: URL must be http or https`, {
      kind: 'refused',
      vendor: target.vendor,
    });
  }
  const refused = refusedLiteral(url, allowPrivate);
  if (refused) {
    throw new RobotError(refused.message, {
      kind: 'refused',
      vendor: target.vendor,
    });
  }
  return url;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The verdict on an answer with no usable vendor code: by HTTP status alone. */
function statusVerdict(
  status: number,
  headers: Dispatcher.ResponseData['headers'],
  at: Date,
  lockMs: number,
): RobotFailure {
  if (status === 410) return { ok: false, kind: 'gone' };
  if (status === 429) {
    return {
      ok: false,
      kind: 'rate-limited',
      retryAfterMs: parseRetryAfter(headers['retry-after'], at) ?? lockMs,
    };
  }
  // 3xx: redirects are not followed (the post must not go elsewhere); 408/425: try again.
  if (status < 400 || status >= 500 || status === 408 || status === 425) {
    return { ok: false, kind: 'retryable' };
  }
  // Any other 4xx says the request itself is wrong: the same request will not do better.
  return { ok: false, kind: 'refused' };
}

export function createRobotSender(o: RobotSenderOptions): RobotSender {
  const ownAgent = o.dispatcher ? undefined : createGuardedAgent(o);
  const dispatcher: Dispatcher = o.dispatcher ?? ownAgent!;
  const now = o.now ?? (() => new Date());

  async function post(target: RobotTarget, messageId: string, body: RobotBody) {
    const vendor = target.vendor;
    const adapter = ADAPTERS[vendor];
    const robot = describeRobot(target.url);
    const ids = { messageId, vendor, robot };
    const fail = (verdict: RobotFailure, status: number | undefined, cause?: unknown): never => {
      const vendorMessage =
        verdict.vendorMessage === undefined ? undefined : cleaned(verdict.vendorMessage, target);
      const what =
        verdict.code !== undefined
          ? `answered code ${verdict.code}${vendorMessage ? ` (${vendorMessage})` : ''}`
          : status !== undefined
            ? `answered HTTP ${status}${vendorMessage ? ` (${vendorMessage})` : ''}`
            : (vendorMessage ?? 'failed');
      const error = new RobotError(`${vendor} robot ${robot} ${what}`, {
        kind: verdict.kind,
        vendor,
        ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
        ...(status === undefined ? {} : { status }),
        ...(verdict.code === undefined ? {} : { vendorCode: verdict.code }),
        ...(vendorMessage === undefined ? {} : { vendorMessage }),
        ...(cause === undefined ? {} : { cause }),
      });
      o.logger.debug(
        { ...ids, kind: error.kind, status, code: verdict.code },
        'robot delivery failed',
      );
      throw error;
    };

    const url = parseTarget(target, o.allowPrivate, robot);
    const request = adapter.request(url, body, target.secret ?? undefined, now());
    let response: PostAnswer;
    try {
      response = await postOnce(
        dispatcher,
        {
          origin: request.url.origin,
          path: `${request.url.pathname}${request.url.search}`,
          headers: { 'content-type': 'application/json; charset=utf-8', 'user-agent': USER_AGENT },
          body: request.body,
        },
        { timeoutMs: o.timeoutMs, maxAnswerBytes: MAX_ANSWER_BYTES, answer: 'body' },
      );
    } catch (err) {
      const failure = readTransportFailure(err);
      if (failure.refused) {
        return fail(
          { ok: false, kind: 'refused', vendorMessage: failure.refused.message },
          undefined,
        );
      }
      const { code, timedOut } = failure;
      // The cause stays off the error: undici's errors may carry the request, URL and all.
      return fail(
        {
          ok: false,
          kind: 'retryable',
          vendorMessage: timedOut ? 'timed out' : `connection failed: ${code ?? 'error'}`,
        },
        undefined,
      );
    }

    const answer = parseJson(response.body.toString('utf8'));
    const verdict =
      response.status === 200 && answer !== undefined ? adapter.classify(answer) : undefined;
    if (verdict?.ok) {
      o.logger.debug(ids, 'robot delivered');
      return { messageId, robot };
    }
    if (verdict) return fail(verdict, response.status);
    // Not a 200, or not JSON: a vendor code in the body still decides (Feishu's 9499 comes with
    // HTTP 400), except that nothing but a 200 is ever a success.
    const coded = answer === undefined ? undefined : adapter.classify(answer);
    if (coded && !coded.ok && coded.code !== undefined) return fail(coded, response.status);
    if (response.status === 200) {
      return fail(
        { ok: false, kind: 'refused', vendorMessage: 'answer is not JSON' },
        response.status,
      );
    }
    return fail(
      statusVerdict(response.status, response.headers, now(), adapter.rateLimitLockMs),
      response.status,
    );
  }

  return {
    async send(target, message) {
      return post(
        target,
        message.id,
        renderRobotBody(target.vendor, message.notifications, message.id),
      );
    },
    post,
    async close() {
      await ownAgent?.close();
    },
  };
}
