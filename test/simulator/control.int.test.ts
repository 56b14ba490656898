import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, v7Warning, type Simulator } from '../../src/simulator/index.js';
import { control, getJson } from './support.js';

let sim: Simulator;
let now: Date;

beforeEach(async () => {
  now = new Date('2026-07-01T00:00:00Z');
  sim = await startSimulator({ now: () => now });
});
afterEach(async () => {
  await sim.close();
});

type WarningNow = { code: string; warning: Array<Record<string, string>> };
const warningNow = async (id: string) =>
  (await getJson<WarningNow>(`${sim.url}/v7/warning/now?location=${id}`)).body;
const listed = async () =>
  (
    await getJson<{ warningLocList: Array<{ locationId: string }> }>(
      `${sim.url}/v7/warning/list?range=cn`,
    )
  ).body.warningLocList.map((e) => e.locationId);

describe('control API', () => {
  it('sets warnings (compact or raw), the list and reads the state', async () => {
    const raw = v7Warning({ locationId: '101010100', typeCode: '1006', level: '蓝色' });
    const put = await control(sim.url, 'PUT', '/_sim/warnings', {
      '101210101': [{ typeCode: '1003', level: '橙色' }],
      '101010100': [raw],
    });
    expect(put).toEqual({ status: 200, body: { locations: 2 } });
    expect((await warningNow('101210101')).warning[0]).toMatchObject({
      type: '1003',
      level: '橙色',
    });
    expect((await warningNow('101010100')).warning).toEqual([raw]);

    // POST merges; PUT replaces.
    await control(sim.url, 'POST', '/_sim/warnings', {
      '101280101': [{ typeName: '台风', level: '红色' }],
    });
    expect((await listed()).sort()).toEqual(['101010100', '101210101', '101280101']);
    await control(sim.url, 'PUT', '/_sim/warnings', {
      '101280101': [{ typeCode: '1001', level: '红色' }],
    });
    expect(await listed()).toEqual(['101280101']);

    await control(sim.url, 'PUT', '/_sim/listed', ['101280101', '101280601']);
    expect(await listed()).toEqual(['101280101', '101280601']);
    await control(sim.url, 'PUT', '/_sim/listed', null);
    expect(await listed()).toEqual(['101280101']);

    const state = await control<{
      warnings: Record<string, unknown[]>;
      listed: string[];
      now: string;
    }>(sim.url, 'GET', '/_sim/state');
    expect(Object.keys(state.body.warnings)).toEqual(['101280101']);
    expect(state.body.listed).toEqual(['101280101']);
    expect(state.body.now).toBe('2026-07-01T00:00:00.000Z');
  });

  it('loads a scenario and steps through it', async () => {
    const loaded = await control(sim.url, 'PUT', '/_sim/scenario', {
      steps: [
        { warnings: { '101210101': [{ typeCode: '1003', level: '黄色' }] } },
        {
          warnings: {
            '101210101': [
              { typeCode: '1003', level: '黄色', status: 'cancel', relatedSeq: 1, seq: 2 },
            ],
          },
        },
      ],
    });
    expect(loaded.body).toEqual({ step: 0, steps: 2 });
    expect((await warningNow('101210101')).warning[0]!.status).toBe('active');
    expect((await control(sim.url, 'POST', '/_sim/step', {})).body).toEqual({ step: 1, steps: 2 });
    expect((await warningNow('101210101')).warning[0]!.status).toBe('cancel');
    expect((await control(sim.url, 'POST', '/_sim/step', { n: 0 })).body).toEqual({
      step: 0,
      steps: 2,
    });
    const bad = await control<{ error: string }>(sim.url, 'POST', '/_sim/step', { n: 7 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/step 7/);
  });

  it('rejects a bad scenario with 400 and keeps the state', async () => {
    await control(sim.url, 'PUT', '/_sim/warnings', {
      '101210101': [{ typeCode: '1003', level: '橙色' }],
    });
    const bad = await control<{ error: string }>(sim.url, 'PUT', '/_sim/scenario', {
      steps: [{ warnings: 5 }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/scenario/);
    expect((await warningNow('101210101')).warning).toHaveLength(1);
  });

  it('sets v1 alerts and moves the clock', async () => {
    await control(sim.url, 'PUT', '/_sim/alerts', [
      {
        area: { lat: 22.5, lon: 114, radiusKm: 50 },
        id: 'X',
        typeCode: '1001',
        level: '橙色',
        messageType: 'cancel',
      },
    ]);
    const at = `${sim.url}/weatheralert/v1/current/22.55/114.09`;
    expect(
      (await getJson<{ alerts: Array<{ id: string }> }>(at)).body.alerts.map((a) => a.id),
    ).toEqual(['X']);
    const moved = await control<{ now: string }>(sim.url, 'POST', '/_sim/clock', {
      advanceMs: 3_600_000,
    });
    expect(moved.body.now).toBe('2026-07-01T01:00:00.000Z');
    expect(
      (await getJson<{ metadata: { zeroResult: boolean } }>(at)).body.metadata.zeroResult,
    ).toBe(true);
  });

  it('adds, lists and clears faults; reads and resets request counts', async () => {
    const added = await control<{ id: string }>(sim.url, 'POST', '/_sim/faults', {
      kind: 'code',
      code: '429',
      operation: 'warningNow',
      times: 1,
    });
    expect(added.status).toBe(201);
    const state = await control<{ faults: Array<{ id: string; remaining: number }> }>(
      sim.url,
      'GET',
      '/_sim/state',
    );
    expect(state.body.faults).toEqual([
      expect.objectContaining({ id: added.body.id, remaining: 1 }),
    ]);
    expect((await getJson(`${sim.url}/v7/warning/now?location=101210101`)).body).toEqual({
      code: '429',
    });
    expect((await getJson(`${sim.url}/v7/warning/now?location=101210101`)).body.code).toBe('200');

    await control(sim.url, 'POST', '/_sim/faults', { kind: 'deprecated' });
    expect((await getJson(`${sim.url}/v2/city/top`)).status).toBe(403);
    await control(sim.url, 'DELETE', '/_sim/faults');
    expect((await getJson(`${sim.url}/v2/city/top`)).status).toBe(200);

    const bad = await control(sim.url, 'POST', '/_sim/faults', { kind: 'nope' });
    expect(bad.status).toBe(400);

    const counts = await control<{ total: number; byOperation: Record<string, number> }>(
      sim.url,
      'GET',
      '/_sim/requests',
    );
    expect(counts.body.total).toBe(4);
    expect(counts.body.byOperation.warningNow).toBe(2);
    await control(sim.url, 'DELETE', '/_sim/requests');
    expect((await control<{ total: number }>(sim.url, 'GET', '/_sim/requests')).body.total).toBe(0);
  });

  it('answers 404 for unknown paths, control or API', async () => {
    expect((await control(sim.url, 'GET', '/_sim/nothing')).status).toBe(404);
    expect((await getJson(`${sim.url}/v7/weather/now?location=101210101`)).status).toBe(404);
  });
});
