import { gunzipSync } from 'node:zlib';
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  SimulatorInputError,
  startSimulator,
  v7Warning,
  type Simulator,
} from '../../src/simulator/index.js';
import { waitUntil } from '../support/wait.js';
import { get, getJson } from './support.js';

let sim: Simulator;

beforeEach(async () => {
  sim = await startSimulator();
  sim.setWarnings('101210101', [
    v7Warning({ locationId: '101210101', typeCode: '1003', level: '橙色', related: '' }),
  ]);
});
afterEach(async () => {
  await sim.close();
});

const nowUrl = (extra = '') => `${sim.url}/v7/warning/now?location=101210101${extra}`;

describe('gzip', () => {
  it('compresses by default and on gzip=y, sends plain on gzip=n', async () => {
    const zipped = await get(nowUrl());
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect((JSON.parse(gunzipSync(zipped.raw).toString()) as { code: string }).code).toBe('200');
    expect((await get(nowUrl('&gzip=y'))).headers['content-encoding']).toBe('gzip');
    const plain = await get(nowUrl('&gzip=n'));
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect((JSON.parse(plain.raw.toString()) as { code: string }).code).toBe('200');
  });

  it('can gzip when not asked, not gzip when asked, and send corrupt gzip or a gzip bomb', async () => {
    sim.addFault({ kind: 'forceGzip', operation: 'warningNow', times: 1 });
    expect((await get(nowUrl('&gzip=n'))).headers['content-encoding']).toBe('gzip');
    sim.addFault({ kind: 'noGzip', operation: 'warningNow', times: 1 });
    const plain = await get(nowUrl());
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect((JSON.parse(plain.raw.toString()) as { code: string }).code).toBe('200');
    sim.addFault({ kind: 'corruptGzip', times: 1 });
    const corrupt = await get(nowUrl());
    expect(corrupt.headers['content-encoding']).toBe('gzip');
    expect(corrupt.gzipError).toBe(true);
    expect(() => gunzipSync(corrupt.raw)).toThrow();
    sim.addFault({ kind: 'gzipBomb', times: 1 });
    const bomb = await get(nowUrl());
    expect(bomb.headers['content-encoding']).toBe('gzip');
    expect(bomb.raw.length).toBeLessThan(128 * 1024);
    expect(gunzipSync(bomb.raw).length).toBe(64 * 1024 * 1024);
  });
});

describe('faults', () => {
  it('answers old-style codes on HTTP 200, then recovers after `times`', async () => {
    sim.addFault({ kind: 'code', code: '500', operation: 'warningNow', times: 2 });
    for (let i = 0; i < 2; i++) {
      const res = await getJson(nowUrl());
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ code: '500' });
    }
    expect((await getJson(nowUrl())).body.code).toBe('200');
  });

  it('answers problem+json with the real status, and 403 Deprecated', async () => {
    sim.addFault({ kind: 'problem', status: 403, title: 'Invalid Host', times: 1 });
    const invalid = await getJson<{ error: { status: number; title: string; type: string } }>(
      nowUrl(),
    );
    expect(invalid.status).toBe(403);
    expect(invalid.headers['content-type']).toContain('application/problem+json');
    expect(invalid.body.error).toMatchObject({ status: 403, title: 'Invalid Host' });

    sim.addFault({ kind: 'deprecated', operation: ['warningNow', 'warningList'] });
    const deprecated = await getJson<{ error: { status: number; title: string } }>(nowUrl());
    expect(deprecated.status).toBe(403);
    expect(deprecated.body.error.title).toBe('Deprecated');
    expect((await getJson(`${sim.url}/v7/warning/list?range=cn`)).status).toBe(403);
    // Other operations are untouched.
    expect((await getJson(`${sim.url}/v2/city/top`)).status).toBe(200);
    sim.clearFaults();
    expect((await getJson(nowUrl())).status).toBe(200);
  });

  it('answers 429 with and without Retry-After, and 5xx', async () => {
    sim.addFault({ kind: 'rateLimit', retryAfterSeconds: 2, times: 1 });
    sim.addFault({ kind: 'rateLimit', times: 1 });
    sim.addFault({ kind: 'http', status: 502, body: '<html>Bad Gateway</html>', times: 1 });
    sim.addFault({ kind: 'problem', status: 503, times: 1 });
    const first = await get(nowUrl());
    expect(first.status).toBe(429);
    expect(first.headers['retry-after']).toBe('2');
    const second = await get(nowUrl());
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBeUndefined();
    const gateway = await get(nowUrl());
    expect(gateway.status).toBe(502);
    expect(gateway.text).toContain('Bad Gateway');
    const unavailable = await getJson<{ error: { status: number } }>(nowUrl());
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.error.status).toBe(503);
    expect((await get(nowUrl())).status).toBe(200);
  });

  it('matches a fault by location', async () => {
    sim.addFault({ kind: 'code', code: '429', operation: 'warningNow', location: '101010100' });
    expect((await getJson(nowUrl())).body.code).toBe('200');
    expect((await getJson(`${sim.url}/v7/warning/now?location=101010100`)).body).toEqual({
      code: '429',
    });
  });

  it('hangs until the client gives up, and delays', async () => {
    sim.addFault({ kind: 'hang', times: 1 });
    // The client gives up only once the server has taken the hang: a timer alone could fire
    // before a slow machine delivered the request, leaving the hang armed for the next one.
    const giveUp = new AbortController();
    const hung = get(nowUrl(), { signal: giveUp.signal });
    await waitUntil(() => sim.state().faults.length === 0, 'the hang taken', 60_000, 5);
    giveUp.abort();
    await expect(hung).rejects.toThrow();
    expect(sim.state().faults).toHaveLength(0);
    sim.addFault({ kind: 'delay', ms: 200, times: 1 });
    const started = Date.now();
    const delayed = await getJson(nowUrl());
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(delayed.body.code).toBe('200');
  });

  it('sends malformed JSON', async () => {
    sim.addFault({ kind: 'malformedJson', times: 1 });
    const res = await get(nowUrl());
    expect(res.status).toBe(200);
    expect(() => JSON.parse(res.text) as unknown).toThrow(SyntaxError);
    expect(res.text.startsWith('{"code":"200"')).toBe(true);
  });

  it('serves the sample quirks', async () => {
    sim.addFault({ kind: 'quirks' });
    const now = await getJson<{ status: string; warning: Array<Record<string, string>> }>(nowUrl());
    expect(now.body).not.toHaveProperty('code');
    expect(now.body.status).toBe('200');
    const record = now.body.warning[0]!;
    expect(record.type).toBe('暴雨');
    expect(record.status).toBe('预警中');
    expect(record.startTime).toBe('');
    expect(record.level).toBe('');
    expect(record.severityColor).toBe('Orange');
    for (const missing of ['sender', 'typeName', 'related'])
      expect(record).not.toHaveProperty(missing);

    const lookup = await getJson<{ status: string; location: Array<Record<string, string>> }>(
      `${sim.url}/v2/city/lookup?location=101210101`,
    );
    expect(lookup.body.status).toBe('200');
    expect(lookup.body.location[0]).toHaveProperty('cnty', '中国');
    expect(lookup.body.location[0]).not.toHaveProperty('country');
  });

  it('rejects a malformed fault', () => {
    expect(() => sim.addFault({ kind: 'explode' } as never)).toThrow(SimulatorInputError);
    expect(() => sim.addFault({ kind: 'code', code: 'abc' })).toThrow(SimulatorInputError);
  });
});

describe('request counts', () => {
  it('counts per operation, per location and in total; resettable', async () => {
    await get(nowUrl());
    await get(nowUrl());
    await get(`${sim.url}/v7/warning/now?location=101010100`);
    await get(`${sim.url}/v7/warning/list?range=cn`);
    await get(`${sim.url}/v2/city/lookup?location=beijing`);
    await get(`${sim.url}/v2/city/top`);
    await get(`${sim.url}/v2/poi/lookup?location=park&type=scenic`);
    await get(`${sim.url}/v2/poi/range?location=120.14,30.24&type=scenic`);
    await get(`${sim.url}/weatheralert/v1/current/30.25/120.21`);
    const counts = sim.requests();
    expect(counts.total).toBe(9);
    expect(counts.byOperation).toEqual({
      cityLookup: 1,
      cityTop: 1,
      poiLookup: 1,
      poiRange: 1,
      warningNow: 3,
      warningList: 1,
      weatherAlert: 1,
    });
    expect(counts.byOperationLocation.warningNow).toEqual({ '101210101': 2, '101010100': 1 });
    expect(counts.byLocation['30.25,120.21']).toBe(1);
    sim.resetRequests();
    expect(sim.requests().total).toBe(0);
  });
});

describe('auth', () => {
  it('checks the key in the query or the X-QW-Api-Key header', async () => {
    const keyed = await startSimulator({ apiKey: 'sim-test-key-123' });
    try {
      const url = `${keyed.url}/v7/warning/now?location=101210101`;
      expect((await getJson(url)).body).toEqual({ code: '401' });
      expect((await getJson(`${url}&key=wrong-key`)).body).toEqual({ code: '401' });
      expect((await getJson(`${url}&key=sim-test-key-123`)).body.code).toBe('200');
      expect(
        (await getJson(url, { headers: { 'X-QW-Api-Key': 'sim-test-key-123' } })).body.code,
      ).toBe('200');
      // v1 answers problem+json with the real status.
      const v1 = await getJson<{ error: { status: number } }>(
        `${keyed.url}/weatheralert/v1/current/30.25/120.21`,
      );
      expect(v1.status).toBe(401);
      expect(v1.body.error.status).toBe(401);
      // Rejected requests count too: QWeather may suspend accounts that keep failing.
      expect(keyed.requests().total).toBe(5);
    } finally {
      await keyed.close();
    }
  });

  it('verifies EdDSA bearer tokens with the public key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const other = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwtSim = await startSimulator({ jwtPublicKeyPem: await exportSPKI(publicKey) });
    const token = (key: CryptoKey, lifetime = 900, kid = 'KEY123') => {
      const iat = Math.floor(Date.now() / 1000) - 30;
      return new SignJWT({})
        .setProtectedHeader({ alg: 'EdDSA', kid })
        .setSubject('PROJECT1')
        .setIssuedAt(iat)
        .setExpirationTime(iat + lifetime)
        .sign(key);
    };
    try {
      const url = `${jwtSim.url}/v2/city/lookup?location=101210101`;
      const ok = await getJson(url, {
        headers: { Authorization: `Bearer ${await token(privateKey)}` },
      });
      expect(ok.body.code).toBe('200');
      const forged = await getJson(url, {
        headers: { Authorization: `Bearer ${await token(other.privateKey)}` },
      });
      expect(forged.body).toEqual({ code: '401' });
      const tooLong = await getJson(url, {
        headers: { Authorization: `Bearer ${await token(privateKey, 90_000)}` },
      });
      expect(tooLong.body).toEqual({ code: '401' });
      const expired = await getJson(url, {
        headers: { Authorization: `Bearer ${await token(privateKey, 10)}` },
      });
      expect(expired.body).toEqual({ code: '401' });
      expect((await getJson(url)).body).toEqual({ code: '401' });
    } finally {
      await jwtSim.close();
    }
  });
});

describe('the hostile upstream of README, promises', () => {
  it('serves a raw body, HTTP 200 and JSON by default, for one place', async () => {
    sim.addFault({
      kind: 'body',
      body: '{"code":"200"}',
      operation: 'warningNow',
      location: '101210101',
    });
    const raw = await get(nowUrl('&gzip=n'));
    expect(raw.status).toBe(200);
    expect(raw.headers['content-type']).toMatch(/^application\/json/);
    expect(raw.text).toBe('{"code":"200"}');
    // Another place is not touched.
    expect((await get(`${sim.url}/v7/warning/now?location=101010100&gzip=n`)).text).toContain(
      '"warning":[]',
    );
  });

  it('adds raw records beside the real ones, escapes and nesting as written', async () => {
    const deep = `{"id":"DEEP","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    sim.addFault({
      kind: 'extraRecords',
      operation: 'warningNow',
      records: ['{"id":"NUL","text":"a\\u0000b"}', deep],
    });
    const { text } = await get(nowUrl('&gzip=n'));
    expect(text).toContain('"text":"a\\u0000b"');
    expect(text).toContain(deep);
    const body = JSON.parse(text) as { warning: { id: string }[] };
    expect(body.warning.map((w) => w.id)).toEqual([expect.any(String), 'NUL', 'DEEP']);
  });

  it('drips the answer a byte at a time', async () => {
    sim.addFault({ kind: 'drip', intervalMs: 50, operation: 'warningNow', times: 1 });
    await expect(get(nowUrl(), { timeoutMs: 300 })).rejects.toThrow();
  });

  it('answers in English with lang=en, and in Chinese where no English was published', async () => {
    const { body: en } = await getJson<{
      warning: { title: string; typeName: string; sender: string }[];
    }>(nowUrl('&lang=en'));
    expect(en.warning[0]).toMatchObject({
      title: 'Hangzhou Meteorological Observatory issued Orange Rainstorm Warning',
      typeName: 'Rainstorm',
      sender: 'Hangzhou Meteorological Observatory',
    });
    const record = v7Warning({ locationId: '101210101', typeCode: '1003', level: '橙色' });
    sim.setWarnings('101210101', [{ ...record, en: false }]);
    const { body: zh } = await getJson<{ warning: Record<string, unknown>[] }>(nowUrl('&lang=en'));
    expect(zh.warning).toEqual([record]);
  });
});
