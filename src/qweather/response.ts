import { BodyDecodeError, decodeBody } from './decode.js';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  MalformedResponseError,
  RateLimitError,
  UpstreamServerError,
  type QWeatherError,
  type QWeatherOperation,
} from './errors.js';
import { envelopeSchema } from './schemas.js';

/**
 * One HTTP answer → data, "empty", or a typed error. Both error shapes map here: the old style
 * (HTTP 200 with `code` ≠ 200) and problem+json (`{"error":{…}}` with a real HTTP status).
 */

export type Headers = Record<string, string | string[] | undefined>;

export interface RawResponse {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

export interface InterpretContext {
  operation: QWeatherOperation;
  /** Geo search answers `{"code":"404"}` for "no match": an empty list, not an error. */
  emptyOn404: boolean;
  /** Removes secrets from any text that goes into an error. */
  redact: (text: string) => string;
}

export type CallResult = { kind: 'data'; body: object; text: string } | { kind: 'empty' };

interface Problem {
  status?: string | undefined;
  type?: string | undefined;
  title?: string | undefined;
  detail?: string | undefined;
  invalidParams?: unknown;
}

const EXCERPT_CHARS = 200;

/** At most ~200 characters of a body, with secrets removed before it is cut. */
export function excerptOf(text: string, redact: (text: string) => string): string {
  const clean = redact(text).replace(/\s+/g, ' ').trim();
  return clean.length > EXCERPT_CHARS ? `${clean.slice(0, EXCERPT_CHARS)}…` : clean;
}

/** Retry-After as seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  now = Date.now(),
): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isFinite(date) ? Math.max(0, date - now) : null;
}

function invalidParamNames(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .map((p: unknown) => {
      if (typeof p === 'string') return p;
      if (p && typeof p === 'object' && 'name' in p) return String(p.name);
      return '';
    })
    .filter((p) => p !== '');
}

/**
 * `status` is the HTTP status for a real error status, or the old-style `code` carried inside
 * an HTTP 200.
 */
function classify(
  ctx: InterpretContext,
  httpStatus: number,
  status: number,
  upstreamCode: string | undefined,
  problem: Problem | undefined,
  headers: Headers,
  text: string,
): QWeatherError {
  const op = ctx.operation;
  const details = { operation: op, httpStatus, code: upstreamCode ?? null };
  const said = [problem?.title, problem?.detail].filter(Boolean).join(': ');
  const where =
    `HTTP ${httpStatus}` +
    (upstreamCode !== undefined && upstreamCode !== String(httpStatus)
      ? `, code ${upstreamCode}`
      : '');
  const describe = (what: string) =>
    ctx.redact(`${op}: ${what} (${where})${said ? `: ${said}` : ''}`);

  // The facts note warns that title/type spellings vary, so match loosely and only on a 403.
  const deprecated =
    problem !== undefined &&
    (/^deprecated$/i.test(problem.title?.trim() ?? '') || /deprecat/i.test(problem.type ?? ''));
  if (deprecated && (status === 403 || status === 410)) {
    return new DeprecatedEndpointError(
      describe('the endpoint is retired; set QWEATHER_ALERT_SOURCE=v1 to use Weather Alert v1'),
      details,
    );
  }
  if (status === 401 || status === 403) {
    return new AuthError(describe('the upstream refused the credentials or this host'), details);
  }
  if (status === 429) {
    return new RateLimitError(
      describe('rate limited'),
      details,
      parseRetryAfter(headers['retry-after']),
    );
  }
  if (status >= 500 && status <= 599) {
    return new UpstreamServerError(describe('upstream server error'), details);
  }
  // 3xx too: redirects are not followed, and one here means a wrong base URL.
  if (status >= 300 && status <= 499) {
    return new BadRequestError(
      describe('the upstream refused the request'),
      details,
      invalidParamNames(problem?.invalidParams),
      problem !== undefined,
    );
  }
  return new MalformedResponseError(
    describe(`unexpected status code ${status}`),
    details,
    excerptOf(text, ctx.redact),
  );
}

export async function interpretResponse(
  response: RawResponse,
  ctx: InterpretContext,
): Promise<CallResult> {
  const { status, headers, bytes } = response;
  const op = ctx.operation;
  if (status === 204) return { kind: 'empty' };

  let text = '';
  let decodeFailure: BodyDecodeError | undefined;
  try {
    text = (await decodeBody(bytes, headers['content-encoding'])).toString('utf8');
  } catch (err) {
    if (!(err instanceof BodyDecodeError)) throw err;
    decodeFailure = err;
  }
  let body: unknown;
  let jsonFailure = false;
  if (decodeFailure === undefined) {
    try {
      body = text.trim() === '' ? undefined : JSON.parse(text);
    } catch {
      jsonFailure = true;
    }
  }
  const envelope = envelopeSchema.safeParse(body);
  const problem = envelope.success ? (envelope.data.error ?? undefined) : undefined;
  const upstreamCode = problem?.status ?? (envelope.success ? envelope.data.code : undefined);

  if (status < 200 || status > 299) {
    // A real HTTP status is the authority; the body only adds detail.
    throw classify(ctx, status, status, upstreamCode, problem, headers, text);
  }
  if (decodeFailure) {
    throw new MalformedResponseError(
      ctx.redact(`${op}: ${decodeFailure.message}`),
      { operation: op, httpStatus: status },
      excerptOf(bytes.subarray(0, EXCERPT_CHARS).toString('latin1'), ctx.redact),
    );
  }
  if (jsonFailure || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new MalformedResponseError(
      `${op}: the body is not a JSON object (HTTP ${status})`,
      { operation: op, httpStatus: status },
      excerptOf(text, ctx.redact),
    );
  }
  if (problem) {
    const code = problem.status && /^\d+$/.test(problem.status) ? Number(problem.status) : 500;
    throw classify(ctx, status, code, upstreamCode, problem, headers, text);
  }
  // `code` in the spec, `status` in some samples; v1 bodies carry neither.
  const codeText = envelope.success
    ? (envelope.data.code ?? envelope.data.status)?.trim()
    : undefined;
  if (codeText === undefined || codeText === '200') return { kind: 'data', body, text };
  if (codeText === '204') return { kind: 'empty' };
  if (codeText === '404' && ctx.emptyOn404) return { kind: 'empty' };
  const code = /^\d+$/.test(codeText) ? Number(codeText) : -1;
  throw classify(ctx, status, code, codeText, undefined, headers, text);
}
