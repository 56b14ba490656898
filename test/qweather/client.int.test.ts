import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { decodeProtectedHeader, exportPKCS8, generateKeyPair, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import {
  createClientFromConfig,
  createQWeatherClient,
  type QWeatherClient,
  type QWeatherClientOptions,
} from '../../src/qweather/client.js';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  MalformedResponseError,
  NetworkError,
  QWeatherError,
  RateLimitError,
  TimeoutError,
  UpstreamServerError,
} from '../../src/qweather/errors.js';
import { closedPort } from '../support/net.js';
import {
  cityLookupBody,
  poiBody,
  topCitiesBody,
  v1Alert,
  v7NewWarning,
  v7OldWarning,
  v7SampleWarning,
  warningListBody,
  warningNowBody,
  weatherAlertBody,
} from './fixtures.js';

const KEY = 'test-KEY-5f3c9a1e7b2d';

interface Seen {
  method: string;
  pathname: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
}

type Handler = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void;

let server: Server;
let baseUrl: string;
let handler: Handler;
let seen: Seen[] = [];
const clients: QWeatherClient[] = [];

const sendJson = (res: ServerResponse, body: unknown, status = 200, gzip = false) => {
  const raw = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (gzip) headers['content-encoding'] = 'gzip';
  res.writeHead(status, headers).end(gzip ? gzipSync(raw) : raw);
};

/** Answers like QWeather does: gzip when `gzip` is not `n`. */
const answer =
  (body: unknown, status = 200): Handler =>
  (_req, res, s) =>
    sendJson(res, body, status, s.query.get('gzip') !== 'n');

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const s = {
      method: req.method ?? '',
      pathname: url.pathname,
      query: url.searchParams,
      headers: req.headers,
    };
    seen.push(s);
    handler(req, res, s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  server.closeAllConnections();
  seen = [];
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
});

function client(options: Partial<QWeatherClientOptions> = {}): QWeatherClient {
  const c = createQWeatherClient({
    apiUrl: baseUrl,
    auth: { kind: 'key', key: KEY, transport: 'query' },
    retryBaseDelayMs: 5,
    ...options,
  });
  clients.push(c);
  return c;
}

async function failure(promise: Promise<unknown>): Promise<QWeatherError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(QWeatherError);
  expect((error as Error).message).not.toContain(KEY);
  return error as QWeatherError;
}

describe('every operation over HTTP', () => {
  it('city lookup: sends the parameters, reads a gzip body with `status` for `code`', async () => {
    handler = answer(cityLookupBody);
    const places = await client().lookupCity({
      location: '杭州',
      adm: '浙江',
      range: 'CN',
      number: 5,
      lang: 'en',
    });
    expect(places).toEqual([expect.objectContaining({ id: '101210101', lat: 30.28746 })]);
    const [req] = seen;
    expect(req?.pathname).toBe('/v2/city/lookup');
    expect(Object.fromEntries(req?.query ?? [])).toEqual({
      location: '杭州',
      adm: '浙江',
      range: 'cn',
      number: '5',
      lang: 'en',
      gzip: 'y',
      key: KEY,
    });
    expect(req?.headers['accept-encoding']).toContain('gzip');
  });

  it('geo operations use geoUrl, with its path prefix', async () => {
    handler = answer(topCitiesBody);
    const top = await client({ geoUrl: `${baseUrl}/geo/` }).topCities({ range: 'world' });
    expect(top.map((p) => p.country)).toEqual(['中国', 'United States of America']);
    expect(seen[0]?.pathname).toBe('/geo/v2/city/top');
  });

  it('POI by name and by range', async () => {
    handler = answer(poiBody);
    const c = client();
    const byName = await c.lookupPoi({ location: '西湖', type: 'scenic', city: '杭州' });
    const byRange = await c.poiRange({ location: '120.14,30.24', type: 'scenic', radius: 10 });
    expect(byName[0]?.type).toBe('scenic');
    expect(byRange).toEqual(byName);
    expect(seen.map((s) => s.pathname)).toEqual(['/v2/poi/lookup', '/v2/poi/range']);
    expect(seen[1]?.query.get('radius')).toBe('10');
    expect(seen[0]?.query.get('city')).toBe('杭州');
  });

  it('code 404 from a location search is an empty list', async () => {
    handler = answer({ code: '404' });
    expect(await client().lookupCity({ location: 'Atlantis' })).toEqual([]);
  });

  it('warning now: normalized warnings, plain body when gzip=n', async () => {
    handler = answer(warningNowBody([v7SampleWarning, v7NewWarning]));
    const now = await client({ gzip: false }).warningNow({ location: '101210101' });
    expect(seen[0]?.query.get('gzip')).toBe('n');
    expect(now.updateTime).toBe('2025-08-01T12:05+08:00');
    expect(now.refer.sources).toEqual(['12379']);
    expect(now.warnings.map((w) => [w.level, w.typeName, w.status])).toEqual([
      ['黄色', '高温', 'active'],
      ['蓝色', '大风', 'active'],
    ]);
  });

  it('warning now: code 204 and an empty array both mean no warnings', async () => {
    handler = answer({ code: '204' });
    expect((await client().warningNow({ location: '101010100' })).warnings).toEqual([]);
    handler = answer(warningNowBody([]));
    expect((await client().warningNow({ location: '116.41,39.92' })).warnings).toEqual([]);
  });

  it('gzip comes back even when not asked: decoded by Content-Encoding', async () => {
    handler = (_req, res) => sendJson(res, warningListBody, 200, true);
    const list = await client({ gzip: false }).warningList({ range: 'cn' });
    expect(list.locationIds).toEqual(['101210101', '101010100']);
    expect(seen[0]?.query.has('lang')).toBe(false);
  });

  it('weather alert v1: latitude first, 2 decimals, no gzip parameter', async () => {
    handler = answer(weatherAlertBody([v1Alert, { ...v1Alert, id: 'b', expireTime: undefined }]));
    const alerts = await client().weatherAlert({ lat: 31.23456, lon: 121.4737, localTime: true });
    expect(seen[0]?.pathname).toBe('/weatheralert/v1/current/31.23/121.47');
    expect(seen[0]?.query.get('localTime')).toBe('true');
    expect(seen[0]?.query.has('gzip')).toBe(false);
    expect(alerts).toMatchObject({ tag: '2b1a5c0e', zeroResult: false });
    expect(alerts.alerts.map((a) => [a.source, a.level, a.status])).toEqual([
      ['v1', '蓝色', 'update'],
      ['v1', '蓝色', 'update'],
    ]);
  });
});

describe('errors and retries', () => {
  it('401 (old style): AuthError after exactly one request', async () => {
    handler = answer({ code: '401' });
    const error = await failure(client().warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(AuthError);
    expect(error.retryable).toBe(false);
    expect(seen).toHaveLength(1);
  });

  it('400 problem+json echoing the URL: one request, key scrubbed from the message', async () => {
    handler = (req, res) =>
      sendJson(
        res,
        { error: { status: 400, title: 'Invalid Parameters', detail: `bad url ${req.url}` } },
        400,
      );
    const error = await failure(client().lookupCity({ location: '杭州' }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toContain('bad url');
    expect(seen).toHaveLength(1);
  });

  it('403 Deprecated: its own error with the v1 hint, one request', async () => {
    handler = (_req, res) =>
      sendJson(
        res,
        {
          error: {
            status: 403,
            type: 'https://dev.qweather.com/docs/resource/error-code/#deprecated',
            title: 'Deprecated',
            detail: 'This API has been deprecated.',
          },
        },
        403,
      );
    const error = await failure(client().warningList({ range: 'cn' }));
    expect(error).toBeInstanceOf(DeprecatedEndpointError);
    expect(error.message).toContain('QWEATHER_ALERT_SOURCE=v1');
    expect(seen).toHaveLength(1);
  });

  it('429 with Retry-After, then success: one answer after two requests', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls += 1;
      if (calls === 1) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: { status: 429, title: 'Too Many Requests' } }));
      } else {
        sendJson(res, warningListBody);
      }
    };
    const started = Date.now();
    const list = await client().warningList({ range: 'cn' });
    expect(list.locationIds).toHaveLength(2);
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('429 without end: RateLimitError after maxAttempts requests, Retry-After bounded', async () => {
    handler = (_req, res) => {
      res.writeHead(429, { 'retry-after': '3600' }).end('{"code":"429"}');
    };
    const started = Date.now();
    const error = await failure(
      client({ maxAttempts: 2, maxRetryDelayMs: 50 }).warningList({ range: 'cn' }),
    );
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(3_600_000);
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('5xx is retried with backoff, then succeeds', async () => {
    let calls = 0;
    handler = (req, res, s) => {
      calls += 1;
      if (calls < 3) res.writeHead(503).end('Service Unavailable');
      else answer(warningNowBody([]))(req, res, s);
    };
    const now = await client({ maxAttempts: 3 }).warningNow({ location: '101210101' });
    expect(now.warnings).toEqual([]);
    expect(seen).toHaveLength(3);
  });

  it('old-style code 500 gives up after maxAttempts', async () => {
    handler = answer({ code: '500' });
    const error = await failure(client({ maxAttempts: 2 }).warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(UpstreamServerError);
    expect(error.retryable).toBe(true);
    expect(seen).toHaveLength(2);
  });

  it('a hang beyond the timeout is a TimeoutError', async () => {
    handler = () => {
      // Never answer.
    };
    const error = await failure(
      client({ timeoutMs: 200, maxAttempts: 1 }).warningNow({ location: '101210101' }),
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).phase).toBe('headers');
    expect(error.retryable).toBe(true);
  });

  it('a body that stalls is a TimeoutError too', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"code":"200",');
    };
    const error = await failure(
      client({ timeoutMs: 200, maxAttempts: 1 }).warningNow({ location: '101210101' }),
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).phase).toBe('body');
  });

  it('malformed JSON: MalformedResponseError with an excerpt, retried', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"code":"200","warning":[ oops ${req.url}`);
    };
    const error = await failure(client({ maxAttempts: 2 }).warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(MalformedResponseError);
    const { excerpt } = error as MalformedResponseError;
    expect(excerpt).toContain('oops');
    expect(excerpt).not.toContain(KEY);
    expect(seen).toHaveLength(2);
  });

  it('corrupt gzip: MalformedResponseError', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(JSON.stringify(warningListBody)).subarray(0, 25));
    };
    const error = await failure(client({ maxAttempts: 1 }).warningList({ range: 'cn' }));
    expect(error).toBeInstanceOf(MalformedResponseError);
  });

  it('a record of an unexpected shape is skipped, naming the field; the others are read', async () => {
    handler = answer(warningNowBody([{ title: 'no id' }, v7NewWarning]));
    const now = await client({ maxAttempts: 1 }).warningNow({ location: '101210101' });
    expect(now.warnings.map((w) => w.id)).toEqual([v7NewWarning.id]);
    expect(now.skipped).toEqual([
      { index: 0, id: null, reason: expect.stringContaining('id:') as unknown },
    ]);
  });

  it('a refused connection is a NetworkError', async () => {
    const port = await closedPort();
    const error = await failure(
      client({ apiUrl: `http://127.0.0.1:${port}`, maxAttempts: 1 }).warningList({ range: 'cn' }),
    );
    expect(error).toBeInstanceOf(NetworkError);
  });

  it('never logs the key', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    handler = (req, res) => sendJson(res, { code: '500', echo: req.url }, 200);
    await failure(
      client({ maxAttempts: 2, logger: createLogger('trace', sink) }).warningNow({
        location: '101210101',
      }),
    );
    expect(lines.join('')).toContain('qweather call failed');
    expect(lines.join('')).toContain('qweather call retrying');
    expect(lines.join('')).not.toContain(KEY);
  });
});

describe('auth', () => {
  it('key in the query string', async () => {
    handler = answer(warningListBody);
    await client().warningList({ range: 'cn' });
    expect(seen[0]?.query.get('key')).toBe(KEY);
    expect(seen[0]?.headers['x-qw-api-key']).toBeUndefined();
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });

  it('key in the X-QW-Api-Key header, and not in the query', async () => {
    handler = answer(warningListBody);
    await client({ auth: { kind: 'key', key: KEY, transport: 'header' } }).warningList({
      range: 'cn',
    });
    expect(seen[0]?.headers['x-qw-api-key']).toBe(KEY);
    expect(seen[0]?.query.has('key')).toBe(false);
  });

  it('JWT: verifiable EdDSA token, reused, re-signed after expiry', async () => {
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { extractable: true });
    const privateKeyPem = await exportPKCS8(privateKey);
    let clock = Date.UTC(2026, 0, 1, 0, 0, 0);
    handler = answer(warningListBody);
    const c = client({
      auth: { kind: 'jwt', keyId: 'KID123', projectId: 'PROJ456', privateKeyPem },
      now: () => clock,
    });

    const tokenOf = (i: number): string => {
      const header = seen[i]?.headers.authorization ?? '';
      expect(header).toMatch(/^Bearer /);
      return header.slice('Bearer '.length);
    };

    await c.warningList({ range: 'cn' });
    const first = tokenOf(0);
    expect(decodeProtectedHeader(first)).toEqual({ alg: 'EdDSA', kid: 'KID123' });
    const { payload } = await jwtVerify(first, publicKey, {
      currentDate: new Date(clock),
      algorithms: ['EdDSA'],
    });
    const nowSeconds = clock / 1000;
    expect(payload).toEqual({ sub: 'PROJ456', iat: nowSeconds - 30, exp: nowSeconds - 30 + 900 });
    expect(seen[0]?.query.has('key')).toBe(false);

    clock += 5 * 60_000;
    await c.warningList({ range: 'cn' });
    expect(tokenOf(1)).toBe(first);

    // Within a minute of expiry the token is renewed.
    clock = (payload.exp! - 30) * 1000;
    await c.warningList({ range: 'cn' });
    const renewed = tokenOf(2);
    expect(renewed).not.toBe(first);
    const again = await jwtVerify(renewed, publicKey, { currentDate: new Date(clock) });
    expect(again.payload.iat).toBe(clock / 1000 - 30);
  });

  it('JWT: an unusable private key is an AuthError before any request', async () => {
    handler = answer(warningListBody);
    const error = await failure(
      client({
        auth: { kind: 'jwt', keyId: 'k', projectId: 'p', privateKeyPem: 'not a pem' },
      }).warningList({ range: 'cn' }),
    );
    expect(error).toBeInstanceOf(AuthError);
    expect(seen).toHaveLength(0);
  });
});

describe('createClientFromConfig', () => {
  it('uses the key from the environment, in the header when asked', async () => {
    handler = answer(warningListBody);
    const c = createClientFromConfig(
      loadConfig({
        QWEATHER_API_URL: baseUrl,
        QWEATHER_API_KEY: KEY,
        QWEATHER_KEY_TRANSPORT: 'header',
      }),
    );
    clients.push(c);
    await c.warningList({ range: 'cn' });
    expect(seen[0]?.headers['x-qw-api-key']).toBe(KEY);
  });

  it('prefers JWT credentials, and sends geo calls to QWEATHER_GEO_URL', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { extractable: true });
    handler = answer(cityLookupBody);
    const c = createClientFromConfig(
      loadConfig({
        QWEATHER_API_URL: baseUrl,
        QWEATHER_GEO_URL: `${baseUrl}/geo`,
        QWEATHER_API_KEY: KEY,
        QWEATHER_JWT_KEY_ID: 'kid',
        QWEATHER_JWT_PROJECT_ID: 'project',
        QWEATHER_JWT_PRIVATE_KEY: await exportPKCS8(privateKey),
      }),
    );
    clients.push(c);
    await c.lookupCity({ location: '杭州' });
    expect(seen[0]?.pathname).toBe('/geo/v2/city/lookup');
    expect(seen[0]?.headers.authorization).toMatch(/^Bearer /);
    expect(seen[0]?.query.has('key')).toBe(false);
  });

  it('names QWEATHER_API_URL when it is missing', () => {
    expect(() => createClientFromConfig(loadConfig({}))).toThrow(ConfigError);
    expect(() => createClientFromConfig(loadConfig({}))).toThrow(/QWEATHER_API_URL/);
  });
});

/** Raw JSON text: what JSON.stringify cannot write (lone surrogates survive it, deep nests do not). */
const sendText =
  (text: string): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
  };

describe('README, promises: only a well-formed answer, and one bad record hides nothing', () => {
  it.each([
    ['{}', '{}'],
    ['code 200 without its array', '{"code":"200"}'],
    ['a null array', '{"code":"200","warning":null}'],
  ])('warning now: %s is a failed call, never "no warnings"', async (_what, body) => {
    handler = sendText(body);
    const error = await failure(client({ maxAttempts: 1 }).warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(MalformedResponseError);
    expect((error as MalformedResponseError).excerpt).toBe(body);
  });

  it('warning list: code 200 without warningLocList is a failed call', async () => {
    handler = sendText('{"code":"200","updateTime":"2025-08-01T04:05+00:00"}');
    const error = await failure(client({ maxAttempts: 1 }).warningList({ range: 'cn' }));
    expect(error).toBeInstanceOf(MalformedResponseError);
  });

  it('v1: {} and a zeroResult false without alerts fail; zeroResult true without them is none', async () => {
    const c = client({ maxAttempts: 1 });
    handler = sendText('{}');
    expect(await failure(c.weatherAlert({ lat: 30.27, lon: 120.16 }))).toBeInstanceOf(
      MalformedResponseError,
    );
    handler = sendText('{"metadata":{"zeroResult":false,"tag":"x"}}');
    expect(await failure(c.weatherAlert({ lat: 30.27, lon: 120.16 }))).toBeInstanceOf(
      MalformedResponseError,
    );
    handler = sendText('{"metadata":{"zeroResult":true,"tag":"x"}}');
    expect(await c.weatherAlert({ lat: 30.27, lon: 120.16 })).toMatchObject({
      zeroResult: true,
      alerts: [],
      skipped: [],
    });
  });

  it('repairs NUL and lone surrogates in a record, keeping it and its neighbours', async () => {
    const poisoned = { ...v7NewWarning, id: 'A1', text: 'x', title: 'y' };
    const body = JSON.stringify(warningNowBody([poisoned, v7OldWarning]))
      .replace('"text":"x"', '"text":"before\\u0000after"')
      .replace('"title":"y"', '"title":"lone \\ud800 surrogate"');
    handler = sendText(body);
    const now = await client({ maxAttempts: 1 }).warningNow({ location: '101210101' });
    expect(now.warnings.map((w) => w.id)).toEqual(['A1', v7OldWarning.id]);
    expect(now.warnings[0]?.text).toBe('beforeafter');
    expect(now.warnings[0]?.title).toBe('lone  surrogate');
    expect(JSON.stringify(now.warnings[0]?.raw)).not.toMatch(/\\u0000|\\ud800/);
    expect(now).toMatchObject({ skipped: [], repaired: 1 });
  });

  it('skips a record nested 6000 deep before reading it, and reads the rest', async () => {
    const deep = `${'['.repeat(6000)}${']'.repeat(6000)}`;
    const body = JSON.stringify(
      warningNowBody([{ id: 'DEEP', extra: 'HOLE' }, v7NewWarning]),
    ).replace('"HOLE"', deep);
    handler = sendText(body);
    const now = await client({ maxAttempts: 1 }).warningNow({ location: '101210101' });
    expect(now.warnings.map((w) => w.id)).toEqual([v7NewWarning.id]);
    expect(now.skipped).toEqual([
      { index: 0, id: 'DEEP', reason: expect.stringContaining('nested deeper') as unknown },
    ]);
  });

  it('ignores unneeded fields of another shape: v7 urgency, v1 icon, as objects', async () => {
    handler = answer(warningNowBody([{ ...v7NewWarning, urgency: { code: 'Immediate' } }]));
    const now = await client({ maxAttempts: 1 }).warningNow({ location: '101210101' });
    expect(now.warnings.map((w) => w.id)).toEqual([v7NewWarning.id]);
    handler = answer(weatherAlertBody([{ ...v1Alert, icon: { code: '1006' }, urgency: {} }]));
    const alerts = await client({ maxAttempts: 1 }).weatherAlert({ lat: 31.23, lon: 121.47 });
    expect(alerts.alerts.map((a) => a.id)).toEqual([v1Alert.id]);
    expect(alerts.skipped).toEqual([]);
  });

  it('ends a body that drips in at the deadline, from request to last byte', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const bytes = Buffer.from(JSON.stringify(warningNowBody([v7NewWarning])));
      let i = 0;
      const drip = setInterval(() => {
        if (i >= bytes.length || res.destroyed) return clearInterval(drip);
        res.write(bytes.subarray(i, i + 1));
        i += 1;
      }, 20);
      res.once('close', () => clearInterval(drip));
    };
    const started = Date.now();
    const error = await failure(
      client({ timeoutMs: 400, maxAttempts: 2 }).warningNow({ location: '101210101' }),
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).phase).toBe('body');
    // Two attempts of 400 ms and a short backoff: a per-chunk timeout alone never ends it.
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
