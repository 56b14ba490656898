import type { z } from 'zod';
import { ConfigError, type Config } from '../config.js';
import type { Warning } from '../domain/warning.js';
import type { Logger } from '../logger.js';
import type { QWeatherAuth } from './auth.js';
import { excerptOf } from './response.js';
import { readRecords, type SkippedRecord } from './records.js';
import { createTransport, type CallSpec, type TransportOptions } from './transport.js';
import {
  MalformedResponseError,
  ParameterError,
  QWeatherError,
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
  listedLocationSchema,
  poiSchema,
  topCitiesSchema,
  v1AlertSchema,
  v7WarningSchema,
  warningListSchema,
  warningNowSchema,
  weatherAlertSchema,
} from './schemas.js';

export type { Place, Poi } from './normalize.js';
export type { SkippedRecord } from './records.js';
export type { QWeatherAuth } from './auth.js';

export interface QWeatherClientOptions extends TransportOptions {
  /** Default language; omitted means the upstream's default (Chinese). */
  lang?: string;
}

export interface Refer {
  sources: string[];
  license: string[];
}

/**
 * What every warning answer says besides its records: the records it could not read
 * (src/qweather/records.ts). An answer with any is no evidence that a warning ended.
 */
export interface RecordReport {
  skipped: SkippedRecord[];
  /** Records kept after NUL or lone surrogates were taken out of their strings. */
  repaired: number;
}

export interface WarningNow extends RecordReport {
  /** Null when the upstream answered code 204 (no data). */
  updateTime: string | null;
  fxLink: string | null;
  warnings: Warning[];
  refer: Refer;
}

export interface WarningList extends RecordReport {
  updateTime: string | null;
  locationIds: string[];
  refer: Refer;
}

export interface WeatherAlerts extends RecordReport {
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

export function createQWeatherClient(options: QWeatherClientOptions): QWeatherClient {
  const transport = createTransport(options);
  const call = (spec: CallSpec) => transport.call(spec);
  const redact = (text: string) => transport.redact(text);
  const defaultLang = options.lang === undefined ? undefined : checkLang(options.lang);
  function shape<S extends z.ZodType>(
    op: QWeatherOperation,
    schema: S,
    result: { body: unknown; text: string },
  ): z.output<S> {
    const parsed = schema.safeParse(result.body);
    if (!parsed.success) throw mismatch(op, parsed.error, result.text);
    return parsed.data;
  }

  function mismatch(op: QWeatherOperation, error: z.ZodError, text: string): QWeatherError {
    const issues = error.issues
      .slice(0, 3)
      .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
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
          skipped: [],
          repaired: 0,
        };
      }
      const data = shape(op, warningNowSchema, result);
      const read = readRecords(data.warning, v7WarningSchema, (record, raw) =>
        normalizeV7Warning(record, raw),
      );
      return {
        updateTime: data.updateTime?.trim() || null,
        fxLink: data.fxLink?.trim() || null,
        warnings: read.records,
        refer: data.refer,
        skipped: read.skipped,
        repaired: read.repaired,
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
        return {
          updateTime: null,
          locationIds: [],
          refer: { sources: [], license: [] },
          skipped: [],
          repaired: 0,
        };
      }
      const data = shape(op, warningListSchema, result);
      // A national storm lists thousands of places: the record limit of a place's answer
      // does not apply here, only the body's size bound.
      const read = readRecords(
        data.warningLocList,
        listedLocationSchema,
        (entry) => entry.locationId,
        { maxRecords: Number.POSITIVE_INFINITY },
      );
      return {
        updateTime: data.updateTime?.trim() || null,
        locationIds: [...new Set(read.records)],
        refer: data.refer,
        skipped: read.skipped,
        repaired: read.repaired,
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
        return {
          tag: null,
          zeroResult: true,
          attributions: [],
          alerts: [],
          skipped: [],
          repaired: 0,
        };
      }
      const data = shape(op, weatherAlertSchema, result);
      const read = readRecords(data.alerts ?? [], v1AlertSchema, (record, raw) =>
        normalizeV1Alert(record, raw, p.localTime ?? false),
      );
      return {
        tag: data.metadata?.tag?.trim() || null,
        zeroResult: data.metadata?.zeroResult ?? read.records.length === 0,
        attributions: data.metadata?.attributions ?? [],
        alerts: read.records,
        skipped: read.skipped,
        repaired: read.repaired,
      };
    },

    close() {
      return transport.close();
    },
  };
}

/**
 * The client as configured (docs/configuration.md): JWT when its three variables are set, else the key,
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
