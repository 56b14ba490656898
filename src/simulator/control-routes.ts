/** The simulator's control API (`/_sim/...`, no auth): state, scenarios, faults, clock. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActiveFault, FaultTable, Operation } from './faults.js';
import { readJson, write } from './http.js';
import { SimulatorInputError, type V1AreaAlert, type V7WarningRecord } from './records.js';
import { parseAlerts, parseWarnings, type ExpandContext, type Scenario } from './scenario.js';

/** What the control API may read and change of a running simulator. */
/** What the simulator counted of the requests it answered. */
export interface RequestCounts {
  total: number;
  byOperation: Record<Operation, number>;
  /** Per location value as requested (v2/v7 `location`, v1 "lat,lon"), over all operations. */
  byLocation: Record<string, number>;
  byOperationLocation: Record<Operation, Record<string, number>>;
}

/** The simulator's state, as `GET /control/state` shows it. */
export interface SimulatorState {
  step: number;
  steps: number;
  now: string;
  warnings: Record<string, readonly V7WarningRecord[]>;
  listed: string[];
  listedOverride: readonly string[] | null;
  alerts: readonly V1AreaAlert[];
  faults: ActiveFault[];
  /** The v7 warning endpoints answer 403 "Deprecated". */
  v7Retired: boolean;
}

export interface SimulatorControls {
  clock(): Date;
  place: ExpandContext['place'];
  state(): SimulatorState;
  replaceWarnings(next: ReadonlyMap<string, readonly V7WarningRecord[]>): void;
  setWarnings(locationId: string, records: readonly V7WarningRecord[]): void;
  locationCount(): number;
  setListed(ids: readonly string[] | null): void;
  listed(): string[];
  setAlerts(alerts: readonly V1AreaAlert[]): void;
  alertCount(): number;
  loadScenario(s: Scenario): void;
  step(n?: number): number;
  readonly faults: FaultTable;
  requests(): RequestCounts;
  resetRequests(): RequestCounts;
  advanceClock(ms: number): Date;
  retireV7(retired: boolean): void;
}

export async function handleControl(
  sim: SimulatorControls,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const send = (status: number, body: unknown) =>
    write(res, status, JSON.stringify(body ?? null), { gzip: false });
  const path = url.pathname.replace(/\/+$/, '');
  const method = req.method ?? 'GET';
  const ctx = () => ({ baseTime: sim.clock(), place: sim.place });
  try {
    const key = `${method} ${path}`;
    if (key === 'GET /_sim/state') return send(200, sim.state());
    if (key === 'PUT /_sim/warnings') {
      sim.replaceWarnings(parseWarnings((await readJson(req)) ?? {}, ctx()));
      return send(200, { locations: sim.locationCount() });
    }
    if (key === 'POST /_sim/warnings') {
      for (const [id, records] of parseWarnings((await readJson(req)) ?? {}, ctx())) {
        sim.setWarnings(id, records);
      }
      return send(200, { locations: sim.locationCount() });
    }
    if (key === 'PUT /_sim/listed') {
      const body = await readJson(req);
      const ids =
        body && typeof body === 'object' && !Array.isArray(body) && 'ids' in body ? body.ids : body;
      if (
        ids !== null &&
        ids !== undefined &&
        (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      ) {
        throw new SimulatorInputError('listed: expected an array of Location IDs or null');
      }
      sim.setListed((ids as string[] | null | undefined) ?? null);
      return send(200, { listed: sim.listed() });
    }
    if (key === 'PUT /_sim/alerts') {
      sim.setAlerts(parseAlerts((await readJson(req)) ?? [], ctx()));
      return send(200, { alerts: sim.alertCount() });
    }
    if (key === 'PUT /_sim/scenario') {
      sim.loadScenario((await readJson(req)) as Scenario);
      const { step, steps } = sim.state();
      return send(200, { step, steps });
    }
    if (key === 'POST /_sim/step') {
      const body = (await readJson(req)) as { n?: unknown } | undefined;
      const n = body?.n;
      if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n))) {
        throw new SimulatorInputError('step: n must be a whole number');
      }
      return send(200, { step: sim.step(n), steps: sim.state().steps });
    }
    if (key === 'POST /_sim/faults') return send(201, { id: sim.faults.add(await readJson(req)) });
    if (key === 'DELETE /_sim/faults') {
      sim.faults.clear();
      return send(200, { faults: 0 });
    }
    const faultId = /^\/_sim\/faults\/([^/]+)$/.exec(path)?.[1];
    if (method === 'DELETE' && faultId) {
      return send(sim.faults.remove(faultId) ? 200 : 404, { removed: faultId });
    }
    if (key === 'GET /_sim/requests') return send(200, sim.requests());
    if (key === 'DELETE /_sim/requests') {
      return send(200, sim.resetRequests());
    }
    if (key === 'POST /_sim/retire-v7' || key === 'DELETE /_sim/retire-v7') {
      sim.retireV7(method === 'POST');
      return send(200, { v7Retired: method === 'POST' });
    }
    if (key === 'POST /_sim/clock') {
      const body = (await readJson(req)) as { advanceMs?: unknown } | undefined;
      const ms = body?.advanceMs;
      if (typeof ms !== 'number' || !Number.isFinite(ms)) {
        throw new SimulatorInputError('clock: advanceMs must be a number');
      }
      return send(200, { now: sim.advanceClock(ms).toISOString() });
    }
    return send(404, { error: `no control route ${method} ${path}` });
  } catch (err) {
    if (err instanceof SimulatorInputError) return send(400, { error: err.message });
    throw err;
  }
}
