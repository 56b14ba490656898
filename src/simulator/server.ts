import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { importSPKI, jwtVerify, type CryptoKey } from 'jose';
import type { Logger } from '../logger.js';
import { FaultTable, OPERATIONS, type ActiveFault, type Fault, type Operation } from './faults.js';
import {
  GeoIndex,
  haversineKm,
  meetsMinimumText,
  nameLang,
  parseLonLat,
  placeRecord,
  poiRecord,
  slug,
} from './geo.js';
import { builtinPlaces, type PlaceData } from './places.js';
import {
  ALL_QUIRKS,
  SimulatorInputError,
  applyRecordQuirks,
  applyV1Quirks,
  chinaTime,
  utcTime,
  validateArea,
  type Quirk,
  type V1AlertRecord,
  type V1AreaAlert,
  type V7WarningRecord,
} from './records.js';
import {
  parseAlerts,
  parseScenario,
  parseWarnings,
  type Scenario,
  type ScenarioStep,
} from './scenario.js';

export interface SimulatorOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default: the built-in table. */
  places?: PlaceData;
  /** Default: empty (no warnings). */
  scenario?: Scenario;
  /** When set, the key (query `key` or header X-QW-Api-Key) must match. */
  apiKey?: string;
  /** When set, `Authorization: Bearer` EdDSA tokens are verified with this SPKI PEM. */
  jwtPublicKeyPem?: string;
  /** The simulated clock (v1 cancel-message expiry, updateTime, compact-record defaults). */
  now?: () => Date;
  logger?: Logger;
}

export interface RequestCounts {
  total: number;
  byOperation: Record<Operation, number>;
  /** Per location value as requested (v2/v7 `location`, v1 "lat,lon"), over all operations. */
  byLocation: Record<string, number>;
  byOperationLocation: Record<Operation, Record<string, number>>;
}

export interface SimulatorState {
  step: number;
  steps: number;
  now: string;
  warnings: Record<string, readonly V7WarningRecord[]>;
  listed: string[];
  listedOverride: readonly string[] | null;
  alerts: readonly V1AreaAlert[];
  faults: ActiveFault[];
}

export interface Simulator {
  /** http://127.0.0.1:PORT: the base of /v2, /geo/v2, /v7 and /weatheralert/v1. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  setWarnings(locationId: string, records: readonly V7WarningRecord[]): void;
  clearWarnings(): void;
  /** null = the locations with at least one warning. */
  setListed(ids: readonly string[] | null): void;
  setAlerts(alerts: readonly V1AreaAlert[]): void;
  /** Loads a scenario and goes to its first step. */
  loadScenario(s: Scenario): void;
  /** Goes to step n, or to the next step (staying on the last); returns the current step. */
  step(n?: number): number;
  addFault(f: Fault): string;
  removeFault(id: string): boolean;
  clearFaults(): void;
  requests(): RequestCounts;
  resetRequests(): void;
  /** Moves the simulated clock forward (on top of `now`). */
  advanceClock(ms: number): Date;
  state(): SimulatorState;
}

/** A request the real API would refuse, answered in the operation's error style. */
class ApiError extends Error {
  constructor(
    readonly code: 400 | 401 | 404,
    readonly detail: string,
    readonly invalidParams: string[] = [],
  ) {
    super(detail);
  }
}

const PROBLEM_TITLES: Record<number, string> = {
  400: 'Invalid Parameters',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  429: 'Too Many Requests',
  500: 'Unknown Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

function problem(status: number, title?: string, detail?: string, extra?: object): object {
  const name = title ?? PROBLEM_TITLES[status] ?? 'Error';
  return {
    error: {
      status,
      type: `https://dev.qweather.com/docs/resource/error-code/#${slug(name)}`,
      title: name,
      detail: detail ?? name,
      ...extra,
    },
  };
}

const GEO_REFER = { sources: ['QWeather'], license: ['QWeather Developers License'] };
const WARNING_REFER = { sources: ['12379'], license: ['QWeather Developers License'] };
const V1_ATTRIBUTIONS = ['https://developer.qweather.com/attribution.html'];
const CANCEL_VISIBLE_MS = 3_600_000;
const V1_TIME_FIELDS = ['issuedTime', 'effectiveTime', 'onsetTime', 'expireTime', 'expiredTime'];

const LANG = /^[a-z]{2,3}(-[a-z0-9]{2,8})*$/i;
const RANGE = /^(world|[a-z]{2})$/i;
const V1_LAT = /^-?\d{1,2}(\.\d{1,2})?$/;
const V1_LON = /^-?\d{1,3}(\.\d{1,2})?$/;

type Params = URLSearchParams;

function required(q: Params, name: string): string {
  const value = q.get(name);
  if (value === null || value.trim() === '') throw new ApiError(400, `${name} is required`, [name]);
  return value.trim();
}

function intParam(q: Params, name: string, fallback: number, min: number, max: number): number {
  const text = q.get(name);
  if (text === null) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ApiError(400, `${name} must be a whole number ${min}-${max}`, [name]);
  }
  return Number(text);
}

function rangeParam(q: Params, fallback: string | undefined): string {
  const text = q.get('range') ?? fallback;
  if (text === undefined) throw new ApiError(400, 'range is required', ['range']);
  if (!RANGE.test(text))
    throw new ApiError(400, 'range must be world or a country code', ['range']);
  return text.toLowerCase();
}

function langParam(q: Params): string | undefined {
  const text = q.get('lang');
  if (text === null) return undefined;
  if (!LANG.test(text)) throw new ApiError(400, 'lang is not a language code', ['lang']);
  return text;
}

function scenicParam(q: Params): void {
  if (q.get('type') !== 'scenic') throw new ApiError(400, 'type must be scenic', ['type']);
}

/** Both ends of the 2-decimal rounding of a coordinate, in hundredths. */
function hundredths(value: number): number[] {
  const scaled = value * 100;
  const low = Math.floor(scaled + 1e-9);
  const high = Math.ceil(scaled - 1e-9);
  return low === high ? [low] : [low, high];
}

interface AlertIndex {
  readonly circles: ReadonlyArray<{
    alert: V1AlertRecord;
    lat: number;
    lon: number;
    radiusKm: number;
  }>;
  /** "latHundredths,lonHundredths" of listed locations → alerts covering them. */
  readonly cells: ReadonlyMap<string, V1AlertRecord[]>;
  readonly order: ReadonlyMap<string, number>;
}

function emptyCounts(): RequestCounts {
  const byOperation = {} as Record<Operation, number>;
  const byOperationLocation = {} as Record<Operation, Record<string, number>>;
  for (const op of OPERATIONS) {
    byOperation[op] = 0;
    byOperationLocation[op] = {};
  }
  return { total: 0, byOperation, byLocation: {}, byOperationLocation };
}

function messageTypeOf(alert: V1AlertRecord): { code: string; supersedes: string[] } {
  const mt = alert.messageType as { code?: unknown; supersedes?: unknown } | undefined;
  const supersedes = Array.isArray(mt?.supersedes)
    ? mt.supersedes.filter((s): s is string => typeof s === 'string')
    : [];
  return { code: typeof mt?.code === 'string' ? mt.code : 'alert', supersedes };
}

/** A gzip body that cannot be read: bytes that are not gzip, or gzip that expands without end. */
type BadGzip = 'corrupt' | 'bomb';

let gzipBombBody: Buffer | undefined;
/** A valid gzip stream of 64 MB of zeros, about 64 KB on the wire; built on first use. */
function gzipBomb(): Buffer {
  gzipBombBody ??= gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
  return gzipBombBody;
}

interface WriteOptions {
  gzip: boolean;
  badGzip?: BadGzip | undefined;
  contentType?: string;
  headers?: Record<string, string>;
}

function write(
  res: ServerResponse,
  status: number,
  payload: string | Buffer,
  o: WriteOptions,
): void {
  let body: Buffer;
  const headers: Record<string, string | number> = {
    'content-type': o.contentType ?? 'application/json; charset=utf-8',
    ...o.headers,
  };
  if (o.badGzip) {
    body =
      o.badGzip === 'bomb' ? gzipBomb() : Buffer.from('\x1f\x8bthis is not gzip data', 'latin1');
    headers['content-encoding'] = 'gzip';
  } else if (o.gzip) {
    body = gzipSync(payload);
    headers['content-encoding'] = 'gzip';
  } else {
    body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  }
  headers['content-length'] = body.length;
  res.writeHead(status, headers);
  res.end(body);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    // Scenarios at national scale are a few MB; anything far beyond is a mistake.
    if (size > 64 * 1024 * 1024) throw new SimulatorInputError('request body too large');
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SimulatorInputError('request body is not JSON');
  }
}

/** Starts a QWeather-compatible server (see docs/simulator.md). */
export async function startSimulator(o: SimulatorOptions = {}): Promise<Simulator> {
  const log = o.logger?.child({ component: 'simulator' });
  const geo = new GeoIndex(o.places ?? builtinPlaces());
  const baseNow = o.now ?? (() => new Date());
  let clockOffsetMs = 0;
  const clock = () => new Date(baseNow().getTime() + clockOffsetMs);
  const jwtKey: CryptoKey | undefined = o.jwtPublicKeyPem
    ? await importSPKI(o.jwtPublicKeyPem, 'EdDSA')
    : undefined;

  // --- state ---------------------------------------------------------------------------------
  let warnings = new Map<string, readonly V7WarningRecord[]>();
  let listedOverride: readonly string[] | null = null;
  let alerts: readonly V1AreaAlert[] = [];
  let alertIndex: AlertIndex = { circles: [], cells: new Map(), order: new Map() };
  let hiddenAlerts = new Set<string>();
  let cancelSeenAt = new Map<string, number>();
  let steps: ScenarioStep[] = [];
  let currentStep = -1;
  let updatedAt = clock();
  /** Serialized warning-now bodies per location and language, dropped on any state change. */
  const warningNowCache = new Map<string, { json: string; gz?: Buffer }>();
  const faults = new FaultTable();
  let counts = emptyCounts();
  const hanging = new Set<ServerResponse>();
  const timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  let closed = false;

  const changed = () => {
    updatedAt = clock();
    warningNowCache.clear();
  };

  const placeOf = (id: string) => geo.place(id);

  function setWarnings(locationId: string, records: readonly V7WarningRecord[]): void {
    if (records.length === 0) warnings.delete(locationId);
    else warnings.set(locationId, [...records]);
    changed();
  }

  function replaceWarnings(next: ReadonlyMap<string, readonly V7WarningRecord[]>): void {
    warnings = new Map([...next].filter(([, records]) => records.length > 0));
    changed();
  }

  function setAlerts(next: readonly V1AreaAlert[]): void {
    for (const a of next) {
      validateArea(a.area);
      if (!a.alert || typeof a.alert.id !== 'string') {
        throw new SimulatorInputError('alert: every area alert needs an alert record with an id');
      }
    }
    alerts = [...next];
    const circles: Array<{ alert: V1AlertRecord; lat: number; lon: number; radiusKm: number }> = [];
    const cells = new Map<string, V1AlertRecord[]>();
    const order = new Map<string, number>();
    const hidden = new Set<string>();
    const nowMs = clock().getTime();
    const seen = new Map<string, number>();
    alerts.forEach(({ area, alert }, i) => {
      order.set(alert.id, i);
      const mt = messageTypeOf(alert);
      // After an update B of A, A is no longer returned (facts note).
      for (const id of mt.supersedes) hidden.add(id);
      if (mt.code === 'cancel') seen.set(alert.id, cancelSeenAt.get(alert.id) ?? nowMs);
      if ('locationIds' in area) {
        for (const id of area.locationIds) {
          const place = geo.place(id);
          if (!place) continue;
          for (const lat of hundredths(place.lat)) {
            for (const lon of hundredths(place.lon)) {
              const key = `${lat},${lon}`;
              const list = cells.get(key);
              if (!list) cells.set(key, [alert]);
              else if (!list.includes(alert)) list.push(alert);
            }
          }
        }
      } else {
        circles.push({ alert, lat: area.lat, lon: area.lon, radiusKm: area.radiusKm });
      }
    });
    alertIndex = { circles, cells, order };
    hiddenAlerts = hidden;
    cancelSeenAt = seen;
    changed();
  }

  function applyStep(n: number): number {
    const step = steps[n];
    if (!step) {
      throw new SimulatorInputError(`step ${n} does not exist (the scenario has ${steps.length})`);
    }
    currentStep = n;
    replaceWarnings(step.warnings);
    listedOverride = step.listed;
    setAlerts(step.alerts);
    return n;
  }

  function loadScenario(s: Scenario): void {
    const parsed = parseScenario(s, { now: clock(), place: placeOf });
    steps = parsed;
    currentStep = -1;
    if (steps.length > 0) {
      applyStep(0);
    } else {
      replaceWarnings(new Map());
      listedOverride = null;
      setAlerts([]);
    }
  }

  function step(n?: number): number {
    if (steps.length === 0) throw new SimulatorInputError('no scenario is loaded');
    if (n !== undefined) return applyStep(n);
    return applyStep(Math.min(currentStep + 1, steps.length - 1));
  }

  function listed(): string[] {
    if (listedOverride) return [...listedOverride];
    return [...warnings.keys()];
  }

  function count(op: Operation, location: string | undefined): void {
    counts.total += 1;
    counts.byOperation[op] += 1;
    if (location !== undefined) {
      counts.byLocation[location] = (counts.byLocation[location] ?? 0) + 1;
      const perOp = counts.byOperationLocation[op];
      perOp[location] = (perOp[location] ?? 0) + 1;
    }
  }

  function state(): SimulatorState {
    return {
      step: currentStep,
      steps: steps.length,
      now: clock().toISOString(),
      warnings: Object.fromEntries(warnings),
      listed: listed(),
      listedOverride,
      alerts,
      faults: faults.list(),
    };
  }

  // --- auth ----------------------------------------------------------------------------------
  async function authorized(req: IncomingMessage, q: Params): Promise<boolean> {
    if (!o.apiKey && !jwtKey) return true;
    const auth = req.headers.authorization;
    if (jwtKey && auth?.startsWith('Bearer ')) {
      try {
        const { payload, protectedHeader } = await jwtVerify(auth.slice(7).trim(), jwtKey, {
          algorithms: ['EdDSA'],
          requiredClaims: ['sub', 'iat', 'exp'],
          // The real clock, not the simulated one: tokens are signed with real time.
          clockTolerance: 5,
        });
        // QWeather: kid names the credential, and a token lives at most 24 hours.
        return (
          typeof protectedHeader.kid === 'string' &&
          protectedHeader.kid !== '' &&
          (payload.exp ?? 0) - (payload.iat ?? 0) <= 86_400
        );
      } catch {
        return false;
      }
    }
    if (o.apiKey) {
      const header = req.headers['x-qw-api-key'];
      const key = q.get('key') ?? (typeof header === 'string' ? header : undefined);
      return key === o.apiKey;
    }
    return false;
  }

  // --- operations ----------------------------------------------------------------------------
  type Body = Record<string, unknown>;

  function cityLookup(q: Params, at: Date): Body {
    const text = required(q, 'location');
    const lang = nameLang(langParam(q));
    const range = rangeParam(q, 'world');
    const number = intParam(q, 'number', 10, 1, 20);
    const adm = q.get('adm') ?? undefined;
    if (adm !== undefined && adm.trim() === '') throw new ApiError(400, 'adm is empty', ['adm']);
    const filter = { adm, range };
    let found;
    const byId = geo.place(text);
    const point = parseLonLat(text);
    if (byId) {
      found = [byId].filter((p) => geo.passes(p, filter));
    } else if (/^\d{6}$/.test(text)) {
      found = geo.placesByAdcode(text).filter((p) => geo.passes(p, filter));
    } else if (point) {
      const nearest = geo.nearestPlace(point.lat, point.lon);
      found = nearest && geo.passes(nearest, filter) ? [nearest] : [];
    } else if (/^-?[\d.]+\s*,\s*-?[\d.]+$/.test(text)) {
      throw new ApiError(400, 'location coordinates out of range', ['location']);
    } else {
      if (!meetsMinimumText(text)) {
        throw new ApiError(
          400,
          'location: at least one Chinese character or two other characters',
          ['location'],
        );
      }
      found = geo.searchPlaces(text, filter);
    }
    if (found.length === 0) throw new ApiError(404, 'no place matches');
    return {
      code: '200',
      location: found.slice(0, number).map((p) => placeRecord(p, lang, at)),
      refer: GEO_REFER,
    };
  }

  function cityTop(q: Params, at: Date): Body {
    const lang = nameLang(langParam(q));
    const range = rangeParam(q, 'world');
    const number = intParam(q, 'number', 10, 1, 20);
    const top = geo.topPlaces(range).slice(0, number);
    if (top.length === 0) throw new ApiError(404, 'no place in range');
    // The spec's popular-city sample names the country field `cnty`.
    const topCityList = top.map((p) => {
      const { country, ...rest } = placeRecord(p, lang, at);
      return { ...rest, cnty: country };
    });
    return { code: '200', topCityList, refer: GEO_REFER };
  }

  function poiLookup(q: Params, at: Date): Body {
    const text = required(q, 'location');
    scenicParam(q);
    const lang = nameLang(langParam(q));
    const number = intParam(q, 'number', 10, 1, 20);
    if (!meetsMinimumText(text)) {
      throw new ApiError(400, 'location: at least one Chinese character or two letters', [
        'location',
      ]);
    }
    const city = q.get('city') ?? undefined;
    const found = geo.searchPois(text, city);
    if (found === 'no-city') return { code: '200', poi: [], refer: GEO_REFER };
    if (found.length === 0) throw new ApiError(404, 'no POI matches');
    return {
      code: '200',
      poi: found.slice(0, number).map((p) => poiRecord(p, geo.poiTimeZone(p), lang, at)),
      refer: GEO_REFER,
    };
  }

  function poiRange(q: Params, at: Date): Body {
    const point = parseLonLat(required(q, 'location'));
    if (!point) throw new ApiError(400, 'location must be lon,lat', ['location']);
    scenicParam(q);
    const lang = nameLang(langParam(q));
    const radius = intParam(q, 'radius', 5, 1, 50);
    const number = intParam(q, 'number', 10, 1, 20);
    const found = geo.poisNear(point.lat, point.lon, radius);
    if (found.length === 0) throw new ApiError(404, 'no POI in range');
    return {
      code: '200',
      poi: found.slice(0, number).map((p) => poiRecord(p, geo.poiTimeZone(p), lang, at)),
      refer: GEO_REFER,
    };
  }

  function resolveWarningLocation(q: Params): string {
    const text = required(q, 'location');
    const point = parseLonLat(text);
    if (point) {
      const nearest = geo.nearestPlace(point.lat, point.lon);
      if (!nearest) throw new ApiError(404, 'no place near these coordinates');
      return nearest.id;
    }
    // Any 9-digit id is a plausible Chinese county even when the loaded table lacks it.
    if (geo.place(text) || warnings.has(text) || /^\d{9}$/.test(text)) return text;
    throw new ApiError(404, 'unknown location');
  }

  function warningNowBody(locationId: string): Body {
    const place = geo.place(locationId);
    return {
      code: '200',
      updateTime: chinaTime(updatedAt),
      fxLink: `https://www.qweather.com/severe-weather/${slug(place?.nameEn ?? 'china')}-${locationId}.html`,
      warning: warnings.get(locationId) ?? [],
      refer: WARNING_REFER,
    };
  }

  function warningList(q: Params): Body {
    const range = rangeParam(q, undefined);
    if (range === 'world') throw new ApiError(400, 'range must be a country code', ['range']);
    const ids = listed().filter((id) => {
      const iso = geo.place(id)?.iso.toLowerCase();
      // Places the table does not know are taken to be in China, the API's only documented range.
      return iso ? iso === range : range === 'cn';
    });
    return {
      code: '200',
      updateTime: `${updatedAt.toISOString().slice(0, 16)}+00:00`,
      warningLocList: ids.map((locationId) => ({ locationId })),
      refer: WARNING_REFER,
    };
  }

  function alertsAt(lat: number, lon: number, nowMs: number): V1AlertRecord[] {
    const found = new Set<V1AlertRecord>();
    const cell = alertIndex.cells.get(`${Math.round(lat * 100)},${Math.round(lon * 100)}`);
    if (cell) for (const alert of cell) found.add(alert);
    for (const c of alertIndex.circles) {
      if (haversineKm(lat, lon, c.lat, c.lon) <= c.radiusKm) found.add(c.alert);
    }
    return [...found]
      .filter((alert) => {
        if (hiddenAlerts.has(alert.id)) return false;
        const seen = cancelSeenAt.get(alert.id);
        // A cancel message stays visible about one hour (facts note).
        return seen === undefined || nowMs - seen < CANCEL_VISIBLE_MS;
      })
      .sort((a, b) => (alertIndex.order.get(a.id) ?? 0) - (alertIndex.order.get(b.id) ?? 0));
  }

  function weatherAlert(
    latText: string,
    lonText: string,
    q: Params,
    quirks: readonly Quirk[],
  ): Body {
    const invalid: string[] = [];
    const lat = Number(latText);
    const lon = Number(lonText);
    if (!V1_LAT.test(latText) || Math.abs(lat) > 90) invalid.push('latitude');
    if (!V1_LON.test(lonText) || Math.abs(lon) > 180) invalid.push('longitude');
    const localTime = q.get('localTime') ?? 'false';
    if (localTime !== 'true' && localTime !== 'false') invalid.push('localTime');
    const lang = q.get('lang');
    if (lang !== null && !LANG.test(lang)) invalid.push('lang');
    if (invalid.length > 0) {
      throw new ApiError(400, `invalid ${invalid.join(', ')}`, invalid);
    }
    const found = alertsAt(lat, lon, clock().getTime());
    const tag = createHash('sha256')
      .update(found.map((a) => `${a.id}|${JSON.stringify(a.issuedTime)}`).join('\n'))
      .digest('hex')
      .slice(0, 32);
    const records = found.map((alert) => {
      const out: Record<string, unknown> = { ...applyV1Quirks(alert, quirks) };
      if (localTime === 'false') {
        for (const field of V1_TIME_FIELDS) {
          const value = out[field];
          if (typeof value !== 'string' || value === '') continue;
          const date = new Date(value);
          if (!Number.isNaN(date.getTime())) out[field] = utcTime(date);
        }
      }
      return out;
    });
    return {
      metadata: { tag, zeroResult: records.length === 0, attributions: V1_ATTRIBUTIONS },
      alerts: records,
    };
  }

  // --- response quirks -----------------------------------------------------------------------
  function applyResponseQuirks(body: Body, quirks: readonly Quirk[]): Body {
    if (quirks.length === 0) return body;
    let out: Body = { ...body };
    if (quirks.includes('cnty')) {
      for (const listName of ['location', 'topCityList', 'poi']) {
        const list = out[listName];
        if (!Array.isArray(list)) continue;
        out[listName] = list.map((r: Record<string, unknown>) => {
          if (!('country' in r)) return r;
          const { country, ...rest } = r;
          return { ...rest, cnty: country };
        });
      }
    }
    if (Array.isArray(out.warning)) {
      out.warning = (out.warning as V7WarningRecord[]).map((r) => applyRecordQuirks(r, quirks));
    }
    if (quirks.includes('statusKey') && 'code' in out) {
      const { code, ...rest } = out;
      out = { status: code, ...rest };
    }
    return out;
  }

  // --- HTTP ----------------------------------------------------------------------------------
  function sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          timers.delete(entry);
          resolve(true);
        }, ms),
        resolve: () => resolve(false),
      };
      timers.add(entry);
    });
  }

  function route(path: string): { op: Operation; lat?: string; lon?: string } | undefined {
    switch (path) {
      case '/v2/city/lookup':
        return { op: 'cityLookup' };
      case '/v2/city/top':
        return { op: 'cityTop' };
      case '/v2/poi/lookup':
        return { op: 'poiLookup' };
      case '/v2/poi/range':
        return { op: 'poiRange' };
      case '/v7/warning/now':
        return { op: 'warningNow' };
      case '/v7/warning/list':
        return { op: 'warningList' };
      default: {
        const m = /^\/weatheralert\/v1\/current\/([^/]+)\/([^/]+)$/.exec(path);
        if (m)
          return {
            op: 'weatherAlert',
            lat: decodeURIComponent(m[1]!),
            lon: decodeURIComponent(m[2]!),
          };
        return undefined;
      }
    }
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    // Today's account hosts serve location search under /geo/v2.
    const path = url.pathname.replace(/\/+$/, '').replace(/^\/geo\/v2\//, '/v2/');
    const r = route(path);
    if (!r) {
      write(res, 404, JSON.stringify(problem(404, undefined, `no such path: ${url.pathname}`)), {
        gzip: false,
        contentType: 'application/problem+json',
      });
      return;
    }
    const q = url.searchParams;
    const v1 = r.op === 'weatherAlert';
    const location = v1 ? `${r.lat},${r.lon}` : (q.get('location') ?? undefined);
    count(r.op, location);

    const gzipParam = q.get('gzip') ?? 'y';
    let gzip = gzipParam !== 'n';
    const fail = (err: ApiError) => {
      if (v1) {
        write(
          res,
          err.code,
          JSON.stringify(
            problem(err.code, undefined, err.detail, { invalidParams: err.invalidParams }),
          ),
          {
            gzip,
            contentType: 'application/problem+json',
          },
        );
      } else {
        // Old style: HTTP 200 and the status in `code`.
        write(res, 200, JSON.stringify({ code: String(err.code) }), { gzip });
      }
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      write(res, 405, JSON.stringify(problem(405)), {
        gzip: false,
        contentType: 'application/problem+json',
      });
      return;
    }
    if (!(await authorized(req, q))) {
      fail(new ApiError(401, 'missing or invalid credentials'));
      return;
    }
    if (gzipParam !== 'y' && gzipParam !== 'n') {
      gzip = false;
      fail(new ApiError(400, 'gzip must be y or n', ['gzip']));
      return;
    }

    let quirks: readonly Quirk[] = [];
    let malformed = false;
    let badGzip: BadGzip | undefined;
    const fault = faults.take(r.op, location);
    if (fault) {
      switch (fault.kind) {
        case 'hang':
          hanging.add(res);
          res.once('close', () => hanging.delete(res));
          return;
        case 'delay':
          if (!(await sleep(fault.ms))) return;
          break;
        case 'code':
          write(res, 200, JSON.stringify({ code: fault.code }), { gzip });
          return;
        case 'problem':
          write(
            res,
            fault.status,
            JSON.stringify(
              problem(
                fault.status,
                fault.title,
                fault.detail,
                fault.type ? { type: fault.type } : undefined,
              ),
            ),
            {
              gzip,
              contentType: 'application/problem+json',
            },
          );
          return;
        case 'deprecated':
          write(
            res,
            403,
            JSON.stringify(
              problem(
                403,
                'Deprecated',
                'This API has been deprecated, please use the Weather Alert API (v1).',
              ),
            ),
            { gzip, contentType: 'application/problem+json' },
          );
          return;
        case 'rateLimit':
          write(res, 429, JSON.stringify(problem(429)), {
            gzip,
            contentType: 'application/problem+json',
            headers:
              fault.retryAfterSeconds !== undefined
                ? { 'retry-after': String(fault.retryAfterSeconds) }
                : {},
          });
          return;
        case 'http':
          write(res, fault.status, fault.body ?? '', {
            gzip: false,
            contentType: fault.contentType ?? 'text/html; charset=utf-8',
          });
          return;
        case 'malformedJson':
          malformed = true;
          break;
        case 'corruptGzip':
          badGzip = 'corrupt';
          break;
        case 'gzipBomb':
          badGzip = 'bomb';
          break;
        case 'forceGzip':
          gzip = true;
          break;
        case 'noGzip':
          gzip = false;
          break;
        case 'quirks':
          quirks = (fault.quirks as Quirk[] | undefined) ?? ALL_QUIRKS;
          break;
      }
    }

    const at = clock();
    try {
      if (r.op === 'warningNow') {
        const id = resolveWarningLocation(q);
        langParam(q);
        if (quirks.length === 0 && !malformed && !badGzip) {
          const key = `${id}|${nameLang(q.get('lang'))}`;
          let cached = warningNowCache.get(key);
          if (!cached) {
            cached = { json: JSON.stringify(warningNowBody(id)) };
            warningNowCache.set(key, cached);
          }
          if (gzip) cached.gz ??= gzipSync(cached.json);
          res.writeHead(200, {
            'content-type': 'application/json; charset=utf-8',
            'content-length': gzip ? cached.gz!.length : Buffer.byteLength(cached.json),
            ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          });
          res.end(gzip ? cached.gz : cached.json);
          return;
        }
        respond(warningNowBody(id));
        return;
      }
      let body: Body;
      switch (r.op) {
        case 'cityLookup':
          body = cityLookup(q, at);
          break;
        case 'cityTop':
          body = cityTop(q, at);
          break;
        case 'poiLookup':
          body = poiLookup(q, at);
          break;
        case 'poiRange':
          body = poiRange(q, at);
          break;
        case 'warningList':
          body = warningList(q);
          break;
        case 'weatherAlert':
          body = weatherAlert(r.lat!, r.lon!, q, quirks);
          break;
      }
      respond(body);
    } catch (err) {
      if (err instanceof ApiError) {
        if (quirks.includes('statusKey') && !v1) {
          write(res, 200, JSON.stringify({ status: String(err.code) }), { gzip, badGzip });
        } else {
          fail(err);
        }
        return;
      }
      throw err;
    }

    function respond(body: Body): void {
      let json = JSON.stringify(applyResponseQuirks(body, quirks));
      // Cut mid-way: an object cut before its closing brace is never valid JSON.
      if (malformed) json = json.slice(0, Math.max(1, Math.floor(json.length / 2)));
      write(res, 200, json, { gzip, badGzip });
    }
  }

  async function handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const send = (status: number, body: unknown) =>
      write(res, status, JSON.stringify(body ?? null), { gzip: false });
    const path = url.pathname.replace(/\/+$/, '');
    const method = req.method ?? 'GET';
    const ctx = () => ({ baseTime: clock(), place: placeOf });
    try {
      const key = `${method} ${path}`;
      if (key === 'GET /_sim/state') return send(200, state());
      if (key === 'PUT /_sim/warnings') {
        replaceWarnings(parseWarnings((await readJson(req)) ?? {}, ctx()));
        return send(200, { locations: warnings.size });
      }
      if (key === 'POST /_sim/warnings') {
        for (const [id, records] of parseWarnings((await readJson(req)) ?? {}, ctx())) {
          setWarnings(id, records);
        }
        return send(200, { locations: warnings.size });
      }
      if (key === 'PUT /_sim/listed') {
        const body = await readJson(req);
        const ids =
          body && typeof body === 'object' && !Array.isArray(body) && 'ids' in body
            ? body.ids
            : body;
        if (
          ids !== null &&
          ids !== undefined &&
          (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
        ) {
          throw new SimulatorInputError('listed: expected an array of Location IDs or null');
        }
        listedOverride = (ids as string[] | null | undefined) ?? null;
        changed();
        return send(200, { listed: listed() });
      }
      if (key === 'PUT /_sim/alerts') {
        setAlerts(parseAlerts((await readJson(req)) ?? [], ctx()));
        return send(200, { alerts: alerts.length });
      }
      if (key === 'PUT /_sim/scenario') {
        loadScenario((await readJson(req)) as Scenario);
        return send(200, { step: currentStep, steps: steps.length });
      }
      if (key === 'POST /_sim/step') {
        const body = (await readJson(req)) as { n?: unknown } | undefined;
        const n = body?.n;
        if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n))) {
          throw new SimulatorInputError('step: n must be a whole number');
        }
        return send(200, { step: step(n), steps: steps.length });
      }
      if (key === 'POST /_sim/faults') return send(201, { id: faults.add(await readJson(req)) });
      if (key === 'DELETE /_sim/faults') {
        faults.clear();
        return send(200, { faults: 0 });
      }
      const faultId = /^\/_sim\/faults\/([^/]+)$/.exec(path)?.[1];
      if (method === 'DELETE' && faultId) {
        return send(faults.remove(faultId) ? 200 : 404, { removed: faultId });
      }
      if (key === 'GET /_sim/requests') return send(200, counts);
      if (key === 'DELETE /_sim/requests') {
        counts = emptyCounts();
        return send(200, counts);
      }
      if (key === 'POST /_sim/clock') {
        const body = (await readJson(req)) as { advanceMs?: unknown } | undefined;
        const ms = body?.advanceMs;
        if (typeof ms !== 'number' || !Number.isFinite(ms)) {
          throw new SimulatorInputError('clock: advanceMs must be a number');
        }
        return send(200, { now: advanceClock(ms).toISOString() });
      }
      return send(404, { error: `no control route ${method} ${path}` });
    } catch (err) {
      if (err instanceof SimulatorInputError) return send(400, { error: err.message });
      throw err;
    }
  }

  function advanceClock(ms: number): Date {
    clockOffsetMs += ms;
    // Cancel expiry and updateTime read the clock; cached bodies carry the old time.
    warningNowCache.clear();
    return clock();
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const handler = url.pathname.startsWith('/_sim/') ? handleControl : handleApi;
    handler(req, res, url).catch((err: unknown) => {
      log?.error({ err, path: url.pathname }, 'simulator request failed');
      if (!res.headersSent) {
        write(res, 500, JSON.stringify(problem(500)), {
          gzip: false,
          contentType: 'application/problem+json',
        });
      } else {
        res.destroy();
      }
    });
  });

  if (o.scenario) loadScenario(o.scenario);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  log?.info({ url, places: geo.places.length, pois: geo.pois.length }, 'simulator listening');

  return {
    url,
    port: address.port,
    async close() {
      if (closed) return;
      closed = true;
      for (const entry of timers) {
        clearTimeout(entry.timer);
        entry.resolve();
      }
      timers.clear();
      for (const res of hanging) res.destroy();
      hanging.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await done;
    },
    setWarnings,
    clearWarnings: () => replaceWarnings(new Map()),
    setListed(ids) {
      listedOverride = ids ? [...ids] : null;
      changed();
    },
    setAlerts,
    loadScenario,
    step,
    addFault: (f) => faults.add(f),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    requests: () => structuredClone(counts),
    resetRequests() {
      counts = emptyCounts();
    },
    advanceClock,
    state,
  };
}
