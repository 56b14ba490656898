import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { importSPKI, jwtVerify, type CryptoKey } from 'jose';
import type { Logger } from '../logger.js';
import { AlertBoard, weatherAlertBody } from './alert-routes.js';
import {
  handleControl,
  type RequestCounts,
  type SimulatorControls,
  type SimulatorState,
} from './control-routes.js';

export type { RequestCounts, SimulatorState };
import { answerDeprecated, answerFault, NO_FAULT } from './fault-answers.js';
import { FaultTable, OPERATIONS, type Fault, type Operation } from './faults.js';
import { geoRoutes, type Body } from './geo-routes.js';
import { GeoIndex, nameLang } from './geo.js';
import { ApiError, langParam, problem, write, type Params } from './http.js';
import { builtinPlaces, type PlaceData } from './places.js';
import {
  SimulatorInputError,
  applyRecordQuirks,
  type Quirk,
  type V1AreaAlert,
  type V7WarningRecord,
} from './records.js';
import { parseScenario, type Scenario, type ScenarioStep } from './scenario.js';
import { V7InV1 } from './v7-in-v1.js';
import { warningRoutes } from './warning-routes.js';

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
  /** Start with the v7 warning endpoints retired (403 "Deprecated"), as QWeather has them. */
  v7Retired?: boolean;
  /** The simulated clock (v1 cancel-message expiry, updateTime, compact-record defaults). */
  now?: () => Date;
  logger?: Logger;
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
  /** Retires the v7 warning endpoints (403 "Deprecated"), or serves them again. */
  retireV7(retired?: boolean): void;
  state(): SimulatorState;
}

/** Where the `extraRecords` fault's raw records go in an answer's array. */
const EXTRA_MARKER = '__qwn_simulator_extra_records__';

function emptyCounts(): RequestCounts {
  const byOperation = {} as Record<Operation, number>;
  const byOperationLocation = {} as Record<Operation, Record<string, number>>;
  for (const op of OPERATIONS) {
    byOperation[op] = 0;
    byOperationLocation[op] = {};
  }
  return { total: 0, byOperation, byLocation: {}, byOperationLocation };
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
  const alertBoard = new AlertBoard(geo);
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

  const v7InV1 = new V7InV1(geo);
  let v7Retired = o.v7Retired ?? false;
  const retireV7 = (retired = true) => {
    v7Retired = retired;
  };
  const changed = () => {
    v7InV1.invalidate();
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
    alertBoard.set(next, clock().getTime());
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
      alerts: alertBoard.alerts,
      faults: faults.list(),
      v7Retired,
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
  const geoApi = geoRoutes(geo);
  const v7Api = warningRoutes(geo, {
    warnings: () => warnings,
    listed,
    updatedAt: () => updatedAt,
  });

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

    if (v7Retired && (r.op === 'warningNow' || r.op === 'warningList')) {
      // As QWeather since the retirement of its v7 warning endpoints (facts note).
      answerDeprecated(res, gzip);
      return;
    }
    const fault = faults.take(r.op, location);
    const effect = fault
      ? await answerFault(res, fault, gzip, {
          hang() {
            hanging.add(res);
            res.once('close', () => hanging.delete(res));
          },
          sleep,
        })
      : NO_FAULT;
    if (effect.answered) return;
    gzip = effect.gzip ?? gzip;
    const { quirks, malformed, badGzip, extraRecords, drip } = effect;
    const plain = quirks.length === 0 && !malformed && !badGzip && !extraRecords && !drip;

    const at = clock();
    try {
      if (r.op === 'warningNow') {
        const id = v7Api.resolveWarningLocation(q);
        langParam(q);
        if (plain) {
          const key = `${id}|${nameLang(q.get('lang'))}`;
          let cached = warningNowCache.get(key);
          if (!cached) {
            cached = { json: JSON.stringify(v7Api.warningNowBody(id, q.get('lang'))) };
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
        respond(v7Api.warningNowBody(id, q.get('lang')));
        return;
      }
      let body: Body;
      switch (r.op) {
        case 'cityLookup':
          body = geoApi.cityLookup(q, at);
          break;
        case 'cityTop':
          body = geoApi.cityTop(q, at);
          break;
        case 'poiLookup':
          body = geoApi.poiLookup(q, at);
          break;
        case 'poiRange':
          body = geoApi.poiRange(q, at);
          break;
        case 'warningList':
          body = v7Api.warningList(q);
          break;
        case 'weatherAlert':
          body = weatherAlertBody(
            (lat, lon) => [
              ...alertBoard.at(lat, lon, clock().getTime()),
              ...v7InV1.at(lat, lon, warnings),
            ],
            r.lat!,
            r.lon!,
            q,
            quirks,
            (lat, lon) => geo.nearestPlace(lat, lon)?.nameEn,
          );
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
      let json = JSON.stringify(withExtraMarker(applyResponseQuirks(body, quirks)));
      if (extraRecords) json = json.replace(`"${EXTRA_MARKER}"`, extraRecords.join(','));
      // Cut mid-way: an object cut before its closing brace is never valid JSON.
      if (malformed) json = json.slice(0, Math.max(1, Math.floor(json.length / 2)));
      if (drip) {
        dripOut(res, Buffer.from(json), drip);
        return;
      }
      write(res, 200, json, { gzip, badGzip });
    }

    /** A placeholder at the end of the answer's array, replaced by the raw extra records. */
    function withExtraMarker(body: Body): Body {
      if (!extraRecords) return body;
      const field = Array.isArray(body.warning) ? 'warning' : 'alerts';
      const list = Array.isArray(body[field]) ? (body[field] as unknown[]) : [];
      return { ...body, [field]: [...list, EXTRA_MARKER] };
    }
  }

  /** Writes a body a few bytes at a time; the client's deadline, not the body, ends it. */
  function dripOut(
    res: ServerResponse,
    bytes: Buffer,
    drip: { intervalMs: number; bytes: number },
  ): void {
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': bytes.length,
    });
    hanging.add(res);
    let at = 0;
    const step = setInterval(() => {
      if (res.destroyed || at >= bytes.length) {
        clearInterval(step);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(bytes.subarray(at, at + drip.bytes));
      at += drip.bytes;
    }, drip.intervalMs);
    res.once('close', () => {
      clearInterval(step);
      hanging.delete(res);
    });
  }

  function advanceClock(ms: number): Date {
    clockOffsetMs += ms;
    // Cancel expiry and updateTime read the clock; cached bodies carry the old time.
    warningNowCache.clear();
    return clock();
  }

  const controls: SimulatorControls = {
    clock,
    place: placeOf,
    state,
    replaceWarnings,
    setWarnings,
    locationCount: () => warnings.size,
    setListed(ids) {
      listedOverride = ids ? [...ids] : null;
      changed();
    },
    listed,
    setAlerts,
    alertCount: () => alertBoard.alerts.length,
    loadScenario,
    step,
    faults,
    requests: () => counts,
    resetRequests() {
      counts = emptyCounts();
      return counts;
    },
    advanceClock,
    retireV7,
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const handler = url.pathname.startsWith('/_sim/')
      ? (rq: IncomingMessage, rs: ServerResponse, u: URL) => handleControl(controls, rq, rs, u)
      : handleApi;
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
    retireV7,
    state,
  };
}
