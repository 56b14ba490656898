import { exportPKCS8, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createQWeatherClient, type QWeatherClient } from '../../src/qweather/client.js';
import {
  AuthError,
  DeprecatedEndpointError,
  MalformedResponseError,
  QWeatherError,
  TimeoutError,
  UpstreamServerError,
} from '../../src/qweather/errors.js';
import { startSimulator, v1Alert, v7Warning, type Simulator } from '../../src/simulator/index.js';

const KEY = 'sim-key-8d1f0c2b9a';

let sim: Simulator;
let client: QWeatherClient;

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY });
  client = createQWeatherClient({
    apiUrl: sim.url,
    auth: { kind: 'key', key: KEY, transport: 'query' },
    timeoutMs: 1000,
    retryBaseDelayMs: 5,
  });
});

afterEach(() => {
  sim.clearFaults();
  sim.clearWarnings();
  sim.setAlerts([]);
  sim.resetRequests();
});

afterAll(async () => {
  await client.close();
  await sim.close();
});

async function failure(promise: Promise<unknown>): Promise<QWeatherError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(QWeatherError);
  expect((error as Error).message).not.toContain(KEY);
  return error as QWeatherError;
}

describe('client against the simulator: happy paths', () => {
  it('city lookup finds Hangzhou first', async () => {
    const places = await client.lookupCity({ location: '杭州', number: 3 });
    expect(places[0]).toMatchObject({ id: '101210101', name: '杭州', adm1: '浙江省' });
    expect(places.length).toBeLessThanOrEqual(3);
  });

  it('a name that matches nothing is an empty list', async () => {
    expect(await client.lookupCity({ location: 'Zzyzxqq' })).toEqual([]);
  });

  it('popular cities carry a country (sent as cnty)', async () => {
    const top = await client.topCities({ range: 'cn', number: 5 });
    expect(top).toHaveLength(5);
    for (const place of top) expect(place.country).not.toBe('');
  });

  it('POI by name and by range', async () => {
    const byName = await client.lookupPoi({ location: '西湖', type: 'scenic' });
    expect(byName.some((p) => p.type === 'scenic')).toBe(true);
    const near = await client.poiRange({ location: '120.14,30.24', type: 'scenic', radius: 5 });
    expect(near.length).toBeGreaterThan(0);
  });

  it('warning now and warning list', async () => {
    sim.setWarnings('101210101', [
      v7Warning({ locationId: '101210101', typeCode: '1003', level: '橙色' }),
      v7Warning({
        locationId: '101210101',
        seq: 2,
        typeCode: '1006',
        level: '蓝色',
        quirks: ['typeNameInType', 'localizedStatus', 'noSender', 'emptyStartTime', 'severityOnly'],
      }),
    ]);
    const list = await client.warningList({ range: 'cn' });
    expect(list.locationIds).toEqual(['101210101']);
    const now = await client.warningNow({ location: '101210101' });
    expect(now.warnings.map((w) => [w.level, w.typeName, w.status])).toEqual([
      ['橙色', '暴雨', 'active'],
      ['蓝色', '大风', 'active'],
    ]);
    expect(now.warnings[1]).toMatchObject({ typeCode: null, sender: null, startTime: null });
  });

  it('no warnings is an empty list', async () => {
    expect((await client.warningNow({ location: '101010100' })).warnings).toEqual([]);
  });

  it('v1 alerts at a point, with expiredTime and null supersedes', async () => {
    sim.setAlerts([
      v1Alert({
        area: { lat: 30.25, lon: 120.2, radiusKm: 50 },
        typeCode: '1006',
        level: '黄色',
        messageType: 'update',
        supersedes: null,
        quirks: ['expiredTime', 'nullSupersedes'],
      }),
    ]);
    const result = await client.weatherAlert({ lat: 30.246, lon: 120.2108 });
    expect(result.zeroResult).toBe(false);
    expect(result.alerts).toHaveLength(1);
    expect(result.alerts[0]).toMatchObject({
      source: 'v1',
      level: '黄色',
      status: 'update',
      related: [],
    });
    expect(result.alerts[0]?.endTime).not.toBeNull();
    const empty = await client.weatherAlert({ lat: -33.87, lon: 151.21 });
    expect(empty).toMatchObject({ zeroResult: true, alerts: [] });
  });
});

describe('client against the simulator: faults', () => {
  it('all sample quirks at once are accepted', async () => {
    sim.setWarnings('101210101', [
      v7Warning({ locationId: '101210101', typeCode: '1003', level: '红色' }),
    ]);
    sim.addFault({ kind: 'quirks' });
    const places = await client.topCities({ number: 2 });
    expect(places[0]?.country).not.toBe('');
    const now = await client.warningNow({ location: '101210101' });
    expect(now.warnings[0]).toMatchObject({ typeName: '暴雨', status: 'active' });
  });

  it('a wrong key: AuthError after exactly one request', async () => {
    const wrong = createQWeatherClient({
      apiUrl: sim.url,
      auth: { kind: 'key', key: 'wrong-key-0000', transport: 'header' },
    });
    try {
      const error = await failure(wrong.warningNow({ location: '101210101' }));
      expect(error).toBeInstanceOf(AuthError);
      expect(sim.requests().byOperation.warningNow).toBe(1);
    } finally {
      await wrong.close();
    }
  });

  it('403 Deprecated', async () => {
    sim.addFault({ kind: 'deprecated', operation: 'warningNow' });
    const error = await failure(client.warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(DeprecatedEndpointError);
    expect(sim.requests().byOperation.warningNow).toBe(1);
  });

  it('429 with Retry-After, then success: two requests', async () => {
    sim.addFault({ kind: 'rateLimit', retryAfterSeconds: 1, operation: 'warningList', times: 1 });
    const list = await client.warningList({ range: 'cn' });
    expect(list.locationIds).toEqual([]);
    expect(sim.requests().byOperation.warningList).toBe(2);
  });

  it('old-style code 500 twice, then success', async () => {
    sim.addFault({ kind: 'code', code: '500', operation: 'warningNow', times: 2 });
    await client.warningNow({ location: '101210101' });
    expect(sim.requests().byOperation.warningNow).toBe(3);
  });

  it('problem+json 503 until it stops: UpstreamServerError after 3 attempts', async () => {
    sim.addFault({ kind: 'problem', status: 503, operation: 'warningNow' });
    const error = await failure(client.warningNow({ location: '101210101' }));
    expect(error).toBeInstanceOf(UpstreamServerError);
    expect(sim.requests().byOperation.warningNow).toBe(3);
  });

  it('a hang is a TimeoutError', async () => {
    sim.addFault({ kind: 'hang', operation: 'warningNow' });
    const quick = createQWeatherClient({
      apiUrl: sim.url,
      auth: { kind: 'key', key: KEY, transport: 'query' },
      timeoutMs: 200,
      maxAttempts: 1,
    });
    try {
      expect(await failure(quick.warningNow({ location: '101210101' }))).toBeInstanceOf(
        TimeoutError,
      );
    } finally {
      await quick.close();
    }
  });

  it.each(['malformedJson', 'corruptGzip', 'gzipBomb'] as const)(
    '%s is a MalformedResponseError',
    async (kind) => {
      sim.addFault({ kind, operation: 'warningNow' });
      const error = await failure(client.warningNow({ location: '101210101' }));
      expect(error).toBeInstanceOf(MalformedResponseError);
    },
  );

  it.each(['forceGzip', 'noGzip'] as const)('%s still decodes', async (kind) => {
    sim.addFault({ kind });
    const places = await client.lookupCity({ location: '北京' });
    expect(places[0]?.id).toBe('101010100');
  });
});

describe('client against the simulator: JWT', () => {
  it('a signed token is accepted; a wrong signing key is refused', async () => {
    const good = await generateKeyPair('EdDSA', { extractable: true });
    const other = await generateKeyPair('EdDSA', { extractable: true });
    const jwtSim = await startSimulator({ jwtPublicKeyPem: await exportSPKI(good.publicKey) });
    const make = async (privateKey: CryptoKey) =>
      createQWeatherClient({
        apiUrl: jwtSim.url,
        auth: {
          kind: 'jwt',
          keyId: 'KID',
          projectId: 'PROJ',
          privateKeyPem: await exportPKCS8(privateKey),
        },
      });
    const ok = await make(good.privateKey);
    const bad = await make(other.privateKey);
    try {
      expect((await ok.lookupCity({ location: '杭州' }))[0]?.id).toBe('101210101');
      expect(await failure(bad.lookupCity({ location: '杭州' }))).toBeInstanceOf(AuthError);
    } finally {
      await ok.close();
      await bad.close();
      await jwtSim.close();
    }
  });
});
