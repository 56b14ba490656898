import type dns from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { errorChain } from '../error-chain.js';
import { AddressRefusedError, createGuardedConnector, refusalReason } from './address-guard.js';

/**
 * What every channel that POSTs to an address a subscriber gave (webhooks, chat robots)
 * shares: the Agent that connects only where the SSRF guard allows, the POST itself within one
 * deadline, and the reading of a failed request. Each channel turns the reading into its own
 * typed error.
 */

/** An Agent whose connections go through the address guard, every phase bounded by `timeoutMs`. */
export function createGuardedAgent(o: {
  allowPrivate: boolean;
  timeoutMs: number;
  lookup?: typeof dns.lookup | undefined;
}): Agent {
  return new Agent({
    connect: createGuardedConnector({
      allowPrivate: o.allowPrivate,
      connectTimeoutMs: o.timeoutMs,
      ...(o.lookup ? { lookup: o.lookup } : {}),
    }),
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
  });
}

/**
 * The refusal of a URL whose host is an IP literal the guard forbids: no lookup happens for a
 * literal, so the connector never sees it. URL parsing already turned 2130706433, 0x7f.1 and
 * friends into dotted quads.
 */
export function refusedLiteral(url: URL, allowPrivate: boolean): AddressRefusedError | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const category = isIP(host) ? refusalReason(host, allowPrivate) : undefined;
  return category ? new AddressRefusedError(host, host, category) : undefined;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** Why a request failed before any answer: refused by the guard, timed out, or another error. */
export interface TransportFailure {
  refused?: AddressRefusedError;
  timedOut: boolean;
  /** The first `code` in the error's cause chain (ECONNREFUSED, UND_ERR_…). */
  code?: string;
}

export function readTransportFailure(err: unknown): TransportFailure {
  const chain = errorChain(err);
  const refused = chain.find((e): e is AddressRefusedError => e instanceof AddressRefusedError);
  if (refused) return { refused, timedOut: false };
  const code = chain.map((e) => e.code).find((c): c is string => typeof c === 'string');
  return {
    timedOut: err instanceof DeadlineError || (code !== undefined && TIMEOUT_CODES.has(code)),
    ...(code === undefined ? {} : { code }),
  };
}

/** A POST that outlived its deadline; `cause` is what undici reported on being stopped, if anything. */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/** What came back: the final status, its headers and as much of the body as was asked for. */
export interface PostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** Empty unless `answer` is 'body'; at most one chunk past `maxAnswerBytes`. */
  body: Buffer;
}

export interface PostOptions {
  /** Bound on the whole exchange: the wait for a connection, the request and the answer. */
  timeoutMs: number;
  maxAnswerBytes: number;
  /**
   * 'status': the status is the answer (a webhook). The body is drained so that the connection
   * can be reused, up to `maxAnswerBytes`, and whatever happens to it after the status came
   * (the deadline, the limit, a reset) changes nothing. 'body': the body is the answer (a chat
   * robot's verdict). It must arrive whole, or be cut at `maxAnswerBytes`; the deadline or an
   * error before its end fails the POST.
   */
  answer: 'status' | 'body';
}

/**
 * One POST through `dispatcher`'s handler interface rather than `request`: `request` with a
 * stream for the answer, an abort signal for the deadline and per-request timeouts cost the
 * sender 45 µs of CPU a POST against 25 µs here, for the same bounds (docs/benchmarks-history.md
 * item 56). Undici's own timeouts (the Agent's, one phase each) stay as they were; the deadline
 * bounds all phases together. Rejects with the transport's error, or a `DeadlineError`, when no answer
 * came; a status other than 2xx is an answer, for the caller to judge.
 */
export function postOnce(
  dispatcher: Dispatcher,
  request: { origin: string; path: string; headers: Record<string, string>; body: string | Buffer },
  o: PostOptions,
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | null = null;
    let finished = false;
    let expired = false;
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    let received = 0;
    const chunks: Buffer[] = [];
    const overdue = (cause?: Error | null) =>
      new DeadlineError(`no answer within ${o.timeoutMs} ms`, cause ? { cause } : undefined);
    const finish = (err: Error | null) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      const whole = err === null || received > o.maxAnswerBytes;
      if (status !== 0 && (whole || o.answer === 'status')) {
        resolve({ status, headers, body: o.answer === 'body' ? Buffer.concat(chunks) : EMPTY });
      } else if (expired && !(err instanceof DeadlineError)) {
        reject(overdue(err));
      } else {
        reject(err ?? new Error('the answer ended before its status'));
      }
    };
    const timer = setTimeout(() => {
      expired = true;
      const reason = overdue();
      // Not started yet (still connecting): it is stopped when it starts, and fails now.
      if (controller) controller.abort(reason);
      else finish(reason);
    }, o.timeoutMs);
    // A pending deadline alone never keeps the process alive.
    timer.unref();
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (finished) c.abort(overdue());
      },
      onResponseStart(_c, statusCode, answerHeaders) {
        // 1xx answers are informational: the final one follows.
        if (statusCode < 200) return;
        status = statusCode;
        headers = answerHeaders;
      },
      onResponseData(c, chunk) {
        received += chunk.length;
        if (o.answer === 'body') chunks.push(chunk);
        if (received > o.maxAnswerBytes) {
          finish(null);
          c.abort(new Error(`answer longer than ${o.maxAnswerBytes} bytes`));
        }
      },
      onResponseEnd() {
        finish(null);
      },
      onResponseError(_c, err) {
        finish(err);
      },
    };
    try {
      dispatcher.dispatch({ ...request, method: 'POST' }, handler);
    } catch (err) {
      finish(err instanceof Error ? err : new Error(String(err)));
    }
  });
}

const EMPTY = Buffer.alloc(0);
