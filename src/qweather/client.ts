import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { ConfigError, type Config } from '../config.js';
import type { Warning } from '../domain/warning.js';
import { createLogger, scrub, type Logger } from '../logger.js';
import { createAuthenticator, type QWeatherAuth } from './auth.js';
import { BodyDecodeError } from './decode.js';
import { excerptOf, interpretResponse, type CallResult } from './response.js';
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
import {
  normalizePlace,
  normalizeV1Alert,
  normalizeV7Warning,
  type Place,
  type Poi,
} from './normalize.js';
import {
  checkCoordinates,
  checkCountry,
  checkGzip,
  checkLang,
  checkLat,
  checkLon,
  checkLookupLocation,
  checkNumber,
  checkPoiType,
  checkRadius,
  checkRange,
  checkSearchText,
  checkText,
  checkWarningLocation,
  roundCoordinate,
} from './params.js';
import {
  cityLookupSchema,
  poiSchema,
  topCitiesSchema,
  v1AlertSchema,
  v7WarningSchema,
  warningListSchema,
  warningNowSchema,
  weatherAlertSchema,
} from './schemas.js';

export type { Place, Poi } from './normalize.js';
export type { QWeatherAuth } from './auth.js';

export interface QWeatherClientOptions {
  /** Base of /v7 and /weatheralert/v1. */
  apiUrl: string;
  /** Base of /v2 (defaults to apiUrl). */
  geoUrl?: string;
  auth: QWeatherAuth;
  /** Applies to connect, headers and body separately (default 10 s). */
  timeoutMs?: number;
  /** Total attempts for retryable failures (default 3). */
  maxAttempts?: number;
  /** Send gzip=y (default true). */
  gzip?: boolean;
  /** Default language; omitted means the upstream's default (Chinese). */
  lang?: string;
  logger?: Logger;
  /** A shared dispatcher; by default the client owns an Agent with the timeouts above. */
  dispatcher?: Dispatcher;
  /** Milliseconds since the epoch; for JWT iat/exp. */
  now?: () => number;
  /** First backoff step (default 250 ms); later steps double, each fully jittered. */
  retryBaseDelayMs?: number;
  /** Upper bound on any wait between attempts, Retry-After included (default 30 s). */
  maxRetryDelayMs?: number;
}

export interface Refer {
  sources: string[];
  license: string[];
}

export interface WarningNow {
  /** Null when the upstream answered code 204 (no data). */
  updateTime: string | null;
  fxLink: string | null;
  warnings: Warning[];
  refer: Refer;
}

export interface WarningList {
  updateTime: string | null;
  locationIds: string[];
  refer: Refer;
}

export interface WeatherAlerts {
  tag: string | null;
  zeroResult: boolean;
  attributions: string[];
  alerts: Warning[];
}

export interface QWeatherClient {
  lookupCity(p: {
    location: string;
    adm?: string;
    range?: string;
    number?: number;
    lang?: string;
  }): Promise<Place[]>;
  topCities(p?: { range?: string; number?: number; lang?: string }): Promise<Place[]>;
  lookupPoi(p: {
    location: string;
    type: 'scenic';
    city?: string;
    number?: number;
    lang?: string;
  }): Promise<Poi[]>;
  poiRange(p: {
    location: string;
    type: 'scenic';
    radius?: number;
    number?: number;
    lang?: string;
  }): Promise<Poi[]>;
  warningNow(p: { location: string; lang?: string }): Promise<WarningNow>;
  warningList(p: { range: string }): Promise<WarningList>;
  weatherAlert(p: {
    lat: number;
    lon: number;
    localTime?: boolean;
    lang?: string;
  }): Promise<WeatherAlerts>;
  close(): Promise<void>;
}

// Far above any real answer (a full city list is ~100 kB); stops a broken upstream from
// filling memory.
const MAX_BODY_BYTES = 8 * 1024 * 1024;

type Query = Record<string, string | number | undefined>;

interface CallSpec {
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

export function createQWeatherClient(options: QWeatherClientOptions): QWeatherClient {
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
  const defaultLang = options.lang === undefined ? undefined : checkLang(options.lang);
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
      });
      status = response.statusCode;
      headers = response.headers;
      bytes = await readBody(response.body);
    } catch (err) {
      if (err instanceof BodyDecodeError) {
        throw new MalformedResponseError(redact(`${op}: ${err.message}`), { operation: op }, '');
      }
      throw transportError(op, err);
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

  function shape<S extends z.ZodType>(
    op: QWeatherOperation,
    schema: S,
    result: { body: unknown; text: string },
  ): z.output<S> {
    const parsed = schema.safeParse(result.body);
    if (!parsed.success) throw mismatch(op, parsed.error, result.text);
    return parsed.data;
  }

  function mismatch(
    op: QWeatherOperation,
    error: z.ZodError,
    text: string,
    at = '',
  ): QWeatherError {
    const issues = error.issues
      .slice(0, 3)
      .map(
        (i) => `${[at, ...i.path.map(String)].filter(Boolean).join('.') || '(root)'}: ${i.message}`,
      )
      .join('; ');
    return new MalformedResponseError(
      redact(`${op}: unexpected response shape: ${issues}`),
      { operation: op, httpStatus: 200 },
      excerptOf(text, redact),
    );
  }

  const langOf = (lang: string | undefined, op: QWeatherOperation): string | undefined =>
    lang === undefined ? defaultLang : checkLang(lang, op);

  async function places(
    spec: CallSpec,
    schema: typeof cityLookupSchema | typeof topCitiesSchema | typeof poiSchema,
    field: 'location' | 'topCityList' | 'poi',
  ): Promise<Place[]> {
    const result = await call(spec);
    if (result.kind === 'empty') return [];
    const data = shape(spec.operation, schema, result) as Record<string, unknown>;
    const list = (data[field] ?? []) as Parameters<typeof normalizePlace>[0][];
    return list.map(normalizePlace);
  }

  return {
    lookupCity(p) {
      const op = 'lookupCity';
      return Promise.resolve().then(() =>
        places(
          {
            operation: op,
            base: 'geo',
            path: '/v2/city/lookup',
            emptyOn404: true,
            query: {
              location: checkLookupLocation(p.location, op),
              adm: p.adm === undefined ? undefined : checkText(p.adm, 'adm', op),
              range: p.range === undefined ? undefined : checkRange(p.range, op),
              number: p.number === undefined ? undefined : checkNumber(p.number, op),
              lang: langOf(p.lang, op),
            },
          },
          cityLookupSchema,
          'location',
        ),
      );
    },

    topCities(p = {}) {
      const op = 'topCities';
      return Promise.resolve().then(() =>
        places(
          {
            operation: op,
            base: 'geo',
            path: '/v2/city/top',
            emptyOn404: true,
            query: {
              range: p.range === undefined ? undefined : checkRange(p.range, op),
              number: p.number === undefined ? undefined : checkNumber(p.number, op),
              lang: langOf(p.lang, op),
            },
          },
          topCitiesSchema,
          'topCityList',
        ),
      );
    },

    lookupPoi(p) {
      const op = 'lookupPoi';
      return Promise.resolve().then(() =>
        places(
          {
            operation: op,
            base: 'geo',
            path: '/v2/poi/lookup',
            emptyOn404: true,
            query: {
              location: checkSearchText(p.location, 'location', op, 'letters'),
              type: checkPoiType(p.type, op),
              city: p.city === undefined ? undefined : checkText(p.city, 'city', op),
              number: p.number === undefined ? undefined : checkNumber(p.number, op),
              lang: langOf(p.lang, op),
            },
          },
          poiSchema,
          'poi',
        ),
      );
    },

    poiRange(p) {
      const op = 'poiRange';
      return Promise.resolve().then(() =>
        places(
          {
            operation: op,
            base: 'geo',
            path: '/v2/poi/range',
            emptyOn404: true,
            query: {
              location: checkCoordinates(p.location, 'location', op),
              type: checkPoiType(p.type, op),
              radius: p.radius === undefined ? undefined : checkRadius(p.radius, op),
              number: p.number === undefined ? undefined : checkNumber(p.number, op),
              lang: langOf(p.lang, op),
            },
          },
          poiSchema,
          'poi',
        ),
      );
    },

    async warningNow(p) {
      const op = 'warningNow';
      const result = await call({
        operation: op,
        base: 'api',
        path: '/v7/warning/now',
        query: { location: checkWarningLocation(p.location, op), lang: langOf(p.lang, op) },
      });
      if (result.kind === 'empty') {
        return {
          updateTime: null,
          fxLink: null,
          warnings: [],
          refer: { sources: [], license: [] },
        };
      }
      const data = shape(op, warningNowSchema, result);
      const warnings = (data.warning ?? []).map((record, index) => {
        const parsed = v7WarningSchema.safeParse(record);
        if (!parsed.success) throw mismatch(op, parsed.error, result.text, `warning.${index}`);
        return normalizeV7Warning(parsed.data, record);
      });
      return {
        updateTime: data.updateTime?.trim() || null,
        fxLink: data.fxLink?.trim() || null,
        warnings,
        refer: data.refer,
      };
    },

    async warningList(p) {
      const op = 'warningList';
      const result = await call({
        operation: op,
        base: 'api',
        path: '/v7/warning/list',
        query: { range: checkCountry(p.range, op) },
      });
      if (result.kind === 'empty') {
        return { updateTime: null, locationIds: [], refer: { sources: [], license: [] } };
      }
      const data = shape(op, warningListSchema, result);
      return {
        updateTime: data.updateTime?.trim() || null,
        locationIds: [...new Set((data.warningLocList ?? []).map((e) => e.locationId))],
        refer: data.refer,
      };
    },

    async weatherAlert(p) {
      const op = 'weatherAlert';
      checkLat(p.lat, 'lat', op);
      checkLon(p.lon, 'lon', op);
      if (p.localTime !== undefined && typeof p.localTime !== 'boolean') {
        throw new ParameterError('localTime', 'must be true or false', op);
      }
      const lat = roundCoordinate(p.lat);
      const lon = roundCoordinate(p.lon);
      const result = await call({
        operation: op,
        base: 'api',
        // Latitude first, unlike every other operation.
        path: `/weatheralert/v1/current/${lat}/${lon}`,
        sendGzip: false,
        query: {
          localTime: p.localTime === undefined ? undefined : String(p.localTime),
          lang: langOf(p.lang, op),
        },
      });
      if (result.kind === 'empty') {
        return { tag: null, zeroResult: true, attributions: [], alerts: [] };
      }
      const data = shape(op, weatherAlertSchema, result);
      const alerts = (data.alerts ?? []).map((record, index) => {
        const parsed = v1AlertSchema.safeParse(record);
        if (!parsed.success) throw mismatch(op, parsed.error, result.text, `alerts.${index}`);
        return normalizeV1Alert(parsed.data, record, p.localTime ?? false);
      });
      return {
        tag: data.metadata?.tag?.trim() || null,
        zeroResult: data.metadata?.zeroResult ?? alerts.length === 0,
        attributions: data.metadata?.attributions ?? [],
        alerts,
      };
    },

    async close() {
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}

/**
 * The client as configured (INTERFACE §2): JWT when its three variables are set, else the key,
 * else no credentials (a simulator that does not check them).
 */
export function createClientFromConfig(config: Config, logger?: Logger): QWeatherClient {
  const q = config.qweather;
  if (!q.apiUrl) {
    throw new ConfigError([
      'QWEATHER_API_URL: is required (your QWeather API host, or a `qwn simulate` URL)',
    ]);
  }
  const auth: QWeatherAuth = q.jwt
    ? { kind: 'jwt', ...q.jwt }
    : q.apiKey
      ? { kind: 'key', key: q.apiKey, transport: q.keyTransport }
      : { kind: 'none' };
  return createQWeatherClient({
    apiUrl: q.apiUrl,
    ...(q.geoUrl ? { geoUrl: q.geoUrl } : {}),
    auth,
    timeoutMs: q.timeoutMs,
    ...(logger ? { logger } : {}),
  });
}
