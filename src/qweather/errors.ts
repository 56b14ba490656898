/**
 * Every way an upstream call can fail, classified where it happens: callers decide
 * on `retryable` and on the class, never on a message. Messages are built from scrubbed text
 * only, so no key or token can leak through an error (docs/design.md, invariant 7).
 */

export type QWeatherOperation =
  | 'lookupCity'
  | 'topCities'
  | 'lookupPoi'
  | 'poiRange'
  | 'warningNow'
  | 'warningList'
  | 'weatherAlert';

export interface QWeatherErrorDetails {
  operation: QWeatherOperation | null;
  httpStatus?: number | null;
  /** The upstream's own status code (old-style `code` or problem+json `error.status`). */
  code?: string | null;
  cause?: unknown;
}

export class QWeatherError extends Error {
  override name = 'QWeatherError';
  readonly retryable: boolean = false;
  readonly operation: QWeatherOperation | null;
  readonly httpStatus: number | null;
  readonly code: string | null;

  constructor(message: string, details: QWeatherErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.operation = details.operation;
    this.httpStatus = details.httpStatus ?? null;
    this.code = details.code ?? null;
  }
}

/** A parameter broke one of the spec's rules; raised before any request is sent. */
export class ParameterError extends QWeatherError {
  override name = 'ParameterError';
  constructor(
    readonly parameter: string,
    readonly rule: string,
    operation: QWeatherOperation | null = null,
  ) {
    super(`${parameter}: ${rule}`, { operation });
  }
}

/** 401, or 403 for any reason but retirement: retrying only risks account suspension. */
export class AuthError extends QWeatherError {
  override name = 'AuthError';
}

/** The endpoint was retired (403 problem+json "Deprecated"); v7 warnings end in 2026. */
export class DeprecatedEndpointError extends QWeatherError {
  override name = 'DeprecatedEndpointError';
  readonly hint =
    'set QWEATHER_ALERT_SOURCE=v1 to use the Weather Alert v1 API (auto, the default, switches by itself)';
}

export class RateLimitError extends QWeatherError {
  override name = 'RateLimitError';
  override readonly retryable = true;
  constructor(
    message: string,
    details: QWeatherErrorDetails,
    /** From Retry-After; null when the upstream gave no usable hint. */
    readonly retryAfterMs: number | null,
  ) {
    super(message, details);
  }
}

export class UpstreamServerError extends QWeatherError {
  override name = 'UpstreamServerError';
  override readonly retryable = true;
}

/** 400, 402, 404 and other client-side refusals: the same request will fail the same way. */
export class BadRequestError extends QWeatherError {
  override name = 'BadRequestError';
  readonly invalidParams: readonly string[];
  constructor(
    message: string,
    details: QWeatherErrorDetails,
    invalidParams: readonly string[] = [],
    /** The answer was QWeather's own problem+json, not a proxy's or a server's HTML page. */
    readonly problemJson = false,
  ) {
    super(message, details);
    this.invalidParams = invalidParams;
  }
}

/** Bad JSON, a corrupt compressed body, or a shape the schemas do not accept. */
export class MalformedResponseError extends QWeatherError {
  override name = 'MalformedResponseError';
  override readonly retryable = true;
  constructor(
    message: string,
    details: QWeatherErrorDetails,
    /** At most ~200 characters of the body, already scrubbed of secrets. */
    readonly excerpt: string,
  ) {
    super(message, details);
  }
}

export class NetworkError extends QWeatherError {
  override name = 'NetworkError';
  override readonly retryable = true;
}

export class TimeoutError extends QWeatherError {
  override name = 'TimeoutError';
  override readonly retryable = true;
  constructor(
    message: string,
    details: QWeatherErrorDetails,
    /** Where the attempt was when its time ran out; a dripping answer runs out in `body`. */
    readonly phase: 'connect' | 'headers' | 'body',
  ) {
    super(message, details);
  }
}

/**
 * A v7 warning call answered that the endpoint is gone: 403 "Deprecated", or a real HTTP 404
 * with QWeather's problem+json body. An HTML 404 is a proxy or a wrong base URL, and an
 * old-style `{"code":"404"}` in a 200 answer is "no such location": neither is retirement.
 */
export function isRetiredEndpoint(err: unknown): boolean {
  return (
    err instanceof DeprecatedEndpointError ||
    (err instanceof BadRequestError && err.httpStatus === 404 && err.problemJson)
  );
}
