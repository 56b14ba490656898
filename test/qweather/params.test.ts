import { afterAll, describe, expect, it } from 'vitest';
import { createQWeatherClient } from '../../src/qweather/client.js';
import { ParameterError } from '../../src/qweather/errors.js';

// Port 9 (discard) on loopback: nothing answers, so a request that slipped past the checks
// would fail with a NetworkError instead of the ParameterError the tests expect.
const client = createQWeatherClient({
  apiUrl: 'http://127.0.0.1:9',
  auth: { kind: 'none' },
  maxAttempts: 1,
  timeoutMs: 500,
});
afterAll(() => client.close());

async function parameterError(promise: Promise<unknown>): Promise<ParameterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ParameterError);
  return error as ParameterError;
}

describe('number (1–20, integer)', () => {
  it.each([0, 21, 2.5, -1, NaN])('rejects %s', async (number) => {
    const error = await parameterError(client.lookupCity({ location: '杭州', number }));
    expect(error).toMatchObject({ parameter: 'number', operation: 'lookupCity' });
    expect(error.rule).toContain('1 to 20');
    expect(error.message).toBe(`number: ${error.rule}`);
  });

  it('is checked by every search operation', async () => {
    await parameterError(client.topCities({ number: 50 }));
    await parameterError(client.lookupPoi({ location: '西湖', type: 'scenic', number: 0 }));
    await parameterError(client.poiRange({ location: '120.1,30.2', type: 'scenic', number: 21 }));
  });
});

describe('radius (1–50 km, integer)', () => {
  it.each([0, 51, 1.5])('rejects %s', async (radius) => {
    const error = await parameterError(
      client.poiRange({ location: '120.1,30.2', type: 'scenic', radius }),
    );
    expect(error).toMatchObject({ parameter: 'radius' });
    expect(error.rule).toContain('1 to 50');
  });
});

describe('type', () => {
  it('must be scenic', async () => {
    const error = await parameterError(
      client.lookupPoi({ location: '西湖', type: 'museum' as 'scenic' }),
    );
    expect(error).toMatchObject({ parameter: 'type' });
  });
});

describe('minimum search text', () => {
  it.each(['', ' ', 'a', '1'])('rejects %j for a city', async (location) => {
    const error = await parameterError(client.lookupCity({ location }));
    expect(error).toMatchObject({ parameter: 'location' });
    expect(error.rule).toContain('one Chinese character or 2');
  });

  it('rejects one letter for a POI, naming letters', async () => {
    const error = await parameterError(client.lookupPoi({ location: 'x', type: 'scenic' }));
    expect(error.rule).toContain('2 letters');
  });
});

describe('coordinates', () => {
  it.each(['200,30', '120,-91', '120;30', 'abc'])('rejects %s for POI range', async (location) => {
    const error = await parameterError(client.poiRange({ location, type: 'scenic' }));
    expect(error).toMatchObject({ parameter: 'location' });
  });

  it('rejects out-of-range coordinates in a city lookup', async () => {
    await parameterError(client.lookupCity({ location: '181,10' }));
  });

  it('rejects v1 coordinates out of range', async () => {
    expect(await parameterError(client.weatherAlert({ lat: 91, lon: 0 }))).toMatchObject({
      parameter: 'lat',
    });
    expect(await parameterError(client.weatherAlert({ lat: 0, lon: -181 }))).toMatchObject({
      parameter: 'lon',
    });
  });

  it('rejects a warning location that is neither an id nor coordinates', async () => {
    await parameterError(client.warningNow({ location: 'Hangzhou City' }));
    await parameterError(client.warningNow({ location: '120.1,95' }));
  });
});

describe('range', () => {
  it.each(['china', 'c', 'c1', ''])('rejects %j', async (range) => {
    const error = await parameterError(client.topCities({ range }));
    expect(error).toMatchObject({ parameter: 'range' });
  });

  it('warning list takes only a 2-letter code, not world', async () => {
    await parameterError(client.warningList({ range: 'world' }));
  });
});

describe('lang', () => {
  it.each(['chinese', 'z', 'zh_CN', 'en-'])('rejects %j', async (lang) => {
    const error = await parameterError(client.lookupCity({ location: '杭州', lang }));
    expect(error).toMatchObject({ parameter: 'lang' });
  });
});

describe('client options', () => {
  it('rejects a bad gzip setting, base URL and attempts', () => {
    const base = { apiUrl: 'http://127.0.0.1:9', auth: { kind: 'none' as const } };
    expect(() => createQWeatherClient({ ...base, gzip: 'y' as unknown as boolean })).toThrow(
      ParameterError,
    );
    expect(() => createQWeatherClient({ ...base, apiUrl: 'not a url' })).toThrow(ParameterError);
    expect(() => createQWeatherClient({ ...base, maxAttempts: 0 })).toThrow(ParameterError);
    expect(() => createQWeatherClient({ ...base, lang: 'klingon' })).toThrow(ParameterError);
  });
});
