import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  MalformedResponseError,
  RateLimitError,
  UpstreamServerError,
} from '../../src/qweather/errors.js';
import { interpretResponse, parseRetryAfter, type Headers } from '../../src/qweather/response.js';
import { cityLookupBody, weatherAlertBody } from './fixtures.js';

const SECRET = 'sekret-key-1234567890';
const ctx = (emptyOn404 = false) => ({
  operation: 'warningNow' as const,
  emptyOn404,
  redact: (text: string) => text.split(SECRET).join('[redacted]'),
});

const json = (body: unknown, status = 200, headers: Headers = {}) => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  bytes: Buffer.from(JSON.stringify(body)),
});

const problem = (status: number, title: string, type = 'https://dev.qweather.com/docs/error') => ({
  error: { status, type, title, detail: `detail for ${title}`, invalidParams: ['location'] },
});

describe('success shapes', () => {
  it('accepts `status` in place of `code`', async () => {
    const result = await interpretResponse(json(cityLookupBody), ctx());
    expect(result).toMatchObject({ kind: 'data', body: cityLookupBody });
  });

  it('accepts a v1 body without any code', async () => {
    const result = await interpretResponse(json(weatherAlertBody([])), ctx());
    expect(result.kind).toBe('data');
  });

  it('reads code 204 and HTTP 204 as empty success', async () => {
    expect(await interpretResponse(json({ code: '204' }), ctx())).toEqual({ kind: 'empty' });
    expect(
      await interpretResponse({ status: 204, headers: {}, bytes: Buffer.alloc(0) }, ctx()),
    ).toEqual({ kind: 'empty' });
  });

  it('reads code 404 as "no match" only for the geo search', async () => {
    expect(await interpretResponse(json({ code: '404' }), ctx(true))).toEqual({ kind: 'empty' });
    await expect(interpretResponse(json({ code: '404' }), ctx(false))).rejects.toBeInstanceOf(
      BadRequestError,
    );
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('decodes a %s body', async (encoding, compress) => {
    const result = await interpretResponse(
      {
        status: 200,
        headers: { 'content-encoding': encoding },
        bytes: compress(Buffer.from(JSON.stringify(cityLookupBody))),
      },
      ctx(),
    );
    expect(result).toMatchObject({ kind: 'data', body: cityLookupBody });
  });

  it('decodes a gzip body that came without a Content-Encoding header', async () => {
    const result = await interpretResponse(
      { status: 200, headers: {}, bytes: gzipSync(JSON.stringify(cityLookupBody)) },
      ctx(),
    );
    expect(result).toMatchObject({ kind: 'data', body: cityLookupBody });
  });
});

describe('old-style errors (HTTP 200 with a code)', () => {
  it.each([
    ['400', BadRequestError, false],
    ['401', AuthError, false],
    ['402', BadRequestError, false],
    ['403', AuthError, false],
    ['404', BadRequestError, false],
    ['429', RateLimitError, true],
    ['500', UpstreamServerError, true],
  ])('code %s → %o (retryable %s)', async (code, type, retryable) => {
    const error = await interpretResponse(json({ code }), ctx()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect(error).toMatchObject({ retryable, code, httpStatus: 200, operation: 'warningNow' });
  });

  it('treats an unknown code as a malformed answer', async () => {
    const error = await interpretResponse(json({ code: 'weird' }), ctx()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedResponseError);
  });
});

describe('problem+json errors with a real status', () => {
  it.each([
    [400, 'Invalid Parameters', BadRequestError, false],
    [401, 'Unauthorized', AuthError, false],
    [402, 'Overdue', BadRequestError, false],
    [403, 'Invalid Host', AuthError, false],
    [404, 'Not Found', BadRequestError, false],
    [429, 'Too Many Requests', RateLimitError, true],
    [500, 'Internal Error', UpstreamServerError, true],
    [503, 'Unavailable', UpstreamServerError, true],
  ])('HTTP %d %s → %o', async (status, title, type, retryable) => {
    const error = await interpretResponse(json(problem(status, title), status), ctx()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect(error).toMatchObject({ retryable, httpStatus: status, code: String(status) });
    expect((error as Error).message).toContain(title);
  });

  it('names the invalid parameters of a 400', async () => {
    const error = await interpretResponse(json(problem(400, 'Bad'), 400), ctx()).catch(
      (e: unknown) => e,
    );
    expect((error as BadRequestError).invalidParams).toEqual(['location']);
  });

  it.each([
    ['Deprecated', 'https://dev.qweather.com/docs/error#deprecated'],
    ['DEPRECATED', 'about:blank'],
    ['Gone', 'https://example.com/errors/endpoint-deprecation'],
  ])('403 with title %s / type %s is a retired endpoint', async (title, type) => {
    const error = await interpretResponse(json(problem(403, title, type), 403), ctx()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DeprecatedEndpointError);
    expect(error).toMatchObject({ retryable: false });
    expect((error as Error).message).toContain('QWEATHER_ALERT_SOURCE=v1');
  });

  it('maps a real error status even when the body is not JSON', async () => {
    const error = await interpretResponse(
      { status: 502, headers: {}, bytes: Buffer.from('<html>Bad Gateway</html>') },
      ctx(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamServerError);
  });

  it('reads Retry-After', async () => {
    const error = await interpretResponse(
      json(problem(429, 'Too Many Requests'), 429, { 'retry-after': '3' }),
      ctx(),
    ).catch((e: unknown) => e);
    expect((error as RateLimitError).retryAfterMs).toBe(3000);
  });
});

describe('malformed answers', () => {
  it('bad JSON carries a short, scrubbed excerpt', async () => {
    const body = `{"code":"200","warning":[ ${SECRET} ${'x'.repeat(500)}`;
    const error = await interpretResponse(
      { status: 200, headers: {}, bytes: Buffer.from(body) },
      ctx(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedResponseError);
    const { excerpt, retryable } = error as MalformedResponseError;
    expect(retryable).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(201);
    expect(excerpt).toContain('[redacted]');
    expect(excerpt).not.toContain(SECRET);
  });

  it('corrupt gzip', async () => {
    const bytes = gzipSync(JSON.stringify(cityLookupBody)).subarray(0, 20);
    const error = await interpretResponse(
      { status: 200, headers: { 'content-encoding': 'gzip' }, bytes },
      ctx(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedResponseError);
  });

  it('a JSON array instead of an object', async () => {
    await expect(interpretResponse(json([1, 2]), ctx())).rejects.toBeInstanceOf(
      MalformedResponseError,
    );
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores garbage', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', Date.UTC(2026, 0, 1))).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});
