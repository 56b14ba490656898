import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import { createLogger, scrub, type Logger } from '../logger.js';
import { createAuthenticator, type QWeatherAuth } from './auth.js';
import { BodyDecodeError } from './decode.js';
import {
  AuthError,
  MalformedResponseError,
  NetworkError,
  ParameterError,
  QWeatherError,
  RateLimitError,
  TimeoutError,
  type QWeatherOperation,
} from './errors.js';
import { checkGzip } from './params.js';
import { interpretResponse, type CallResult } from './response.js';

/**
 * The client's HTTP half: one GET of an operation, signed (key or JWT), with its timeouts, a
 * bounded body, gzip, and retries with jittered backoff (Retry-After honoured) for what the
 * answer or the failure says may pass. What the operations make of an answer is the client's.
 */

export interface TransportOptions {
  /** Base of /v7 and /weatheralert/v1. */
  apiUrl: string;
  /** Base of /v2 (defaults to apiUrl). */
  geoUrl?: string;
  auth: QWeatherAuth;
  /**
   * The deadline of one attempt, from the request to the last byte of its body (default 10 s):
   * an answer that drips in byte by byte is a timeout, not a check that never ends.
   */
  timeoutMs?: number;
  /** Total attempts for retryable failures (default 3). */
  maxAttempts?: number;
  /** Send gzip=y (default true). */
  gzip?: boolean;
  logger?: Logger;
  /** A shared dispatcher; by default the transport owns an Agent with the timeouts above. */
  dispatcher?: Dispatcher;
  /** Milliseconds since the epoch; for JWT iat/exp. */
  now?: () => number;
  /** First backoff step (default 250 ms); later steps double, each fully jittered. */
  retryBaseDelayMs?: number;
  /** Upper bound on any wait between attempts, Retry-After included (default 30 s). */
  maxRetryDelayMs?: number;
}

export interface QWeatherTransport {
  /** One operation's answer, after the retries its failures allow. */
  call(spec: CallSpec): Promise<CallResult>;
  /** Text with the key, the JWT and every other secret taken out, for errors and logs. */
  redact(text: string): string;
  close(): Promise<void>;
}

// Far above any real answer (a full city list is ~100 kB); stops a broken upstream from
// filling memory.
const MAX_BODY_BYTES = 8 * 1024 * 1024;

type Query = Record<string, string | number | undefined>;

export interface CallSpec {
  operation: QWeatherOperation;
  base: 'api' | 'geo';
  path: string;
  query: Query;
  /** Geo search answers `{"code":"404"}` for "no match": an empty list, not an error. */
  emptyOn404?: boolean;
  /** v1 takes no `gzip` parameter. */
  sendGzip?: boolean;
}

function baseUrl(value: string, name: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('protocol');
  } catch {
    throw new ParameterError(name, 'must be an absolute http(s) URL');
  }
  return value.replace(/\/+$/, '');
}

export function createTransport(options: TransportOptions): QWeatherTransport {
  const apiUrl = baseUrl(options.apiUrl, 'apiUrl');
  const geoUrl = options.geoUrl ? baseUrl(options.geoUrl, 'geoUrl') : apiUrl;
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new ParameterError('timeoutMs', 'must be a positive whole number of milliseconds');
  }
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new ParameterError('maxAttempts', 'must be a whole number of at least 1');
  }
  const gzip = checkGzip(options.gzip ?? true);
  const now = options.now ?? Date.now;
  const retryBaseDelayMs = options.retryBaseDelayMs ?? 250;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
  const logger = options.logger ?? createLogger('silent');
  const auth = createAuthenticator(options.auth, now);
  const ownsDispatcher = options.dispatcher === undefined;
  const dispatcher: Dispatcher =
    options.dispatcher ??
    new Agent({
      connect: { timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });

  /** scrub() knows registered secrets of 6+ characters; this also covers shorter keys and tokens. */
  const redact = (text: string): string => {
    let out = scrub(text);
    for (const secret of auth.secrets) if (secret) out = out.split(secret).join('[redacted]');
    return out;
  };

  function transportError(op: QWeatherOperation, err: unknown): QWeatherError {
    if (err instanceof QWeatherError) return err;
    const code = (err as { code?: unknown } | null)?.code;
    const message = redact(err instanceof Error ? err.message : String(err));
    const stage = deadlineHit.get(err as object);
    if (stage) {
      return new TimeoutError(
        `${op}: no whole answer within ${timeoutMs} ms (still waiting for the ${stage})`,
        { operation: op, cause: err },
        stage,
      );
    }
    const phase =
      code === 'UND_ERR_CONNECT_TIMEOUT'
        ? 'connect'
        : code === 'UND_ERR_HEADERS_TIMEOUT'
          ? 'headers'
          : code === 'UND_ERR_BODY_TIMEOUT'
            ? 'body'
            : undefined;
    if (phase) {
      return new TimeoutError(
        `${op}: timed out waiting for the ${phase} (${timeoutMs} ms)`,
        {
          operation: op,
          cause: err,
        },
        phase,
      );
    }
    const suffix = typeof code === 'string' ? ` [${code}]` : '';
    return new NetworkError(`${op}: network error: ${message}${suffix}`, {
      operation: op,
      cause: err,
    });
  }

  async function readBody(body: Dispatcher.ResponseData['body']): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      size += buf.length;
      if (size > MAX_BODY_BYTES) {
        body.destroy();
        throw new BodyDecodeError(`body larger than ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(buf);
    }
    return Buffer.concat(chunks);
  }

  /** The abort reasons of attempts whose deadline passed, with where each attempt was. */
  const deadlineHit = new WeakMap<object, 'headers' | 'body'>();

  async function once(spec: CallSpec): Promise<CallResult> {
    const op = spec.operation;
    let authParts;
    try {
      authParts = await auth.parts();
    } catch (err) {
      throw new AuthError(
        redact(`${op}: cannot sign the JWT: ${err instanceof Error ? err.message : String(err)}`),
        { operation: op, cause: err },
      );
    }
    const url = new URL(`${spec.base === 'geo' ? geoUrl : apiUrl}${spec.path}`);
    for (const [name, value] of Object.entries(spec.query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    if (spec.sendGzip !== false) url.searchParams.set('gzip', gzip);
    for (const [name, value] of Object.entries(authParts.query)) url.searchParams.set(name, value);

    let status: number;
    let headers: Record<string, string | string[] | undefined>;
    let bytes: Buffer;
    // The idle timeouts below restart with every chunk; this one does not (README, promises).
    const deadline = new AbortController();
    let stage: 'headers' | 'body' = 'headers';
    const timer = setTimeout(() => {
      const reason = new Error(`deadline of ${timeoutMs} ms passed`);
      deadlineHit.set(reason, stage);
      deadline.abort(reason);
    }, timeoutMs);
    try {
      const response = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: {
          accept: 'application/json',
          'accept-encoding': 'gzip, deflate, br',
          'user-agent': 'qwn',
          ...authParts.headers,
        },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: deadline.signal,
      });
      status = response.statusCode;
      headers = response.headers;
      stage = 'body';
      bytes = await readBody(response.body);
    } catch (err) {
      if (err instanceof BodyDecodeError) {
        throw new MalformedResponseError(redact(`${op}: ${err.message}`), { operation: op }, '');
      }
      // Whatever undici rejected with once the deadline passed, the deadline is the story.
      throw transportError(op, deadline.signal.aborted ? (deadline.signal.reason as unknown) : err);
    } finally {
      clearTimeout(timer);
    }

    return interpretResponse(
      { status, headers, bytes },
      { operation: op, emptyOn404: spec.emptyOn404 === true, redact },
    );
  }

  function backoff(attempt: number): number {
    const ceiling = Math.min(maxRetryDelayMs, retryBaseDelayMs * 2 ** (attempt - 1));
    return Math.round(Math.random() * ceiling);
  }

  async function call(spec: CallSpec): Promise<CallResult> {
    const log = logger.child({
      op: spec.operation,
      path: spec.path,
      ...(spec.query.location !== undefined ? { location: spec.query.location } : {}),
    });
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const result = await once(spec);
        log.debug(
          { attempt, ms: Math.round(performance.now() - started), empty: result.kind === 'empty' },
          'qweather call succeeded',
        );
        return result;
      } catch (err) {
        const error = err instanceof QWeatherError ? err : transportError(spec.operation, err);
        if (error instanceof AuthError) auth.invalidate();
        const facts = {
          attempt,
          error: error.name,
          httpStatus: error.httpStatus,
          code: error.code,
          detail: error.message,
          ...(error instanceof MalformedResponseError ? { excerpt: error.excerpt } : {}),
        };
        if (!error.retryable || attempt >= maxAttempts) {
          log.warn(facts, 'qweather call failed');
          throw error;
        }
        const delayMs =
          error instanceof RateLimitError && error.retryAfterMs !== null
            ? Math.min(error.retryAfterMs, maxRetryDelayMs)
            : backoff(attempt);
        log.info({ ...facts, delayMs }, 'qweather call retrying');
        await sleep(delayMs);
      }
    }
  }

  return {
    call,
    redact,
    async close() {
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}
