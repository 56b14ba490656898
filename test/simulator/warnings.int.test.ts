import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  SimulatorInputError,
  startSimulator,
  v1Alert,
  v7Warning,
  type Scenario,
  type Simulator,
} from '../../src/simulator/index.js';
import { control, getJson } from './support.js';

type WarningNow = {
  code: string;
  updateTime: string;
  fxLink: string;
  warning: Array<Record<string, string>>;
  refer: { sources: string[]; license: string[] };
};
type WarningList = {
  code: string;
  updateTime: string;
  warningLocList: Array<{ locationId: string }>;
};
type AlertBody = {
  metadata: { tag: string; zeroResult: boolean; attributions: string[] };
  alerts: Array<Record<string, unknown> & { id: string }>;
};

let sim: Simulator;
let now: Date;

beforeEach(async () => {
  now = new Date('2026-07-01T00:00:00Z');
  sim = await startSimulator({ now: () => now });
});
afterEach(async () => {
  await sim.close();
});

const warningNow = async (location: string) =>
  (await getJson<WarningNow>(`${sim.url}/v7/warning/now?location=${location}`)).body;
const warningList = async () =>
  (await getJson<WarningList>(`${sim.url}/v7/warning/list?range=cn`)).body;
const alertsAt = async (lat: string, lon: string, query = '') =>
  (await getJson<AlertBody>(`${sim.url}/weatheralert/v1/current/${lat}/${lon}${query}`)).body;

describe('v7Warning', () => {
  it('builds a record like the real ones', () => {
    const record = v7Warning({
      locationId: '101210101',
      seq: 3,
      typeCode: '1003',
      level: '橙色',
      pubTime: '2026-07-01T08:00+08:00',
    });
    expect(record).toEqual({
      id: '101210101' + '202607010800' + '00003',
      sender: '杭州市气象台',
      pubTime: '2026-07-01T08:00+08:00',
      title: '杭州市气象台发布暴雨橙色预警[Ⅱ级/严重]',
      startTime: '2026-07-01T08:00+08:00',
      endTime: '2026-07-02T08:00+08:00',
      status: 'active',
      level: '橙色',
      severity: 'Severe',
      severityColor: 'Orange',
      type: '1003',
      typeName: '暴雨',
      urgency: '',
      certainty: '',
      text: record.text,
      related: '',
    });
    expect(record.text).toContain('暴雨橙色预警');
    expect(record.id).toMatch(/^101210101202607010800\d{5}$/);
  });

  it('applies the sample quirks on request', () => {
    const record = v7Warning({
      locationId: '101010100',
      typeName: '大风',
      level: 'blue',
      status: 'active',
      quirks: [
        'typeNameInType',
        'localizedStatus',
        'noSender',
        'noRelated',
        'emptyStartTime',
        'severityOnly',
      ],
    });
    expect(record.type).toBe('大风');
    expect(record).not.toHaveProperty('typeName');
    expect(record.status).toBe('预警中');
    expect(record).not.toHaveProperty('sender');
    expect(record).not.toHaveProperty('related');
    expect(record.startTime).toBe('');
    expect(record.level).toBe('');
    expect(record).toMatchObject({ severity: 'Minor', severityColor: 'Blue' });
  });

  it('rejects an unknown level', () => {
    expect(() => v7Warning({ locationId: '101010100', typeCode: '1003', level: 'purple' })).toThrow(
      SimulatorInputError,
    );
  });
});

describe('v7 warnings from the state', () => {
  it('answers warning now and the list from what was set', async () => {
    const empty = await warningNow('101210101');
    expect(empty).toMatchObject({ code: '200', warning: [] });
    expect(empty.refer.sources.length).toBeGreaterThan(0);
    expect((await warningList()).warningLocList).toEqual([]);

    const record = v7Warning({ locationId: '101210101', typeCode: '1003', level: '橙色' });
    sim.setWarnings('101210101', [record]);
    const body = await warningNow('101210101');
    expect(body.code).toBe('200');
    expect(body.updateTime).toBe('2026-07-01T08:00+08:00');
    expect(body.fxLink).toContain('101210101');
    expect(body.warning).toEqual([record]);
    const list = await warningList();
    expect(list).toMatchObject({ code: '200', warningLocList: [{ locationId: '101210101' }] });
    expect(list.updateTime).toBe('2026-07-01T00:00+00:00');

    // Coordinates resolve to the nearest place.
    expect((await warningNow('120.21,30.25')).warning).toEqual([record]);

    sim.setListed(['101010100', '101210101']);
    expect((await warningList()).warningLocList.map((e) => e.locationId)).toEqual([
      '101010100',
      '101210101',
    ]);
    sim.setListed(null);
    sim.clearWarnings();
    expect((await warningNow('101210101')).warning).toEqual([]);
    expect((await warningList()).warningLocList).toEqual([]);
  });

  it('checks the parameters of both operations', async () => {
    expect((await getJson(`${sim.url}/v7/warning/now`)).body).toEqual({ code: '400' });
    expect((await getJson(`${sim.url}/v7/warning/now?location=nowhere`)).body).toEqual({
      code: '404',
    });
    expect((await getJson(`${sim.url}/v7/warning/list`)).body).toEqual({ code: '400' });
    expect((await getJson(`${sim.url}/v7/warning/list?range=china`)).body).toEqual({ code: '400' });
    // Any 9-digit id is a plausible county even when the built-in table lacks it.
    expect((await warningNow('101999999')).code).toBe('200');
  });

  it('steps through a scenario of compact and raw records', async () => {
    const raw = {
      id: '10101010020260701090000077',
      pubTime: '2026-07-01T09:00+08:00',
      title: '北京市气象台发布大风蓝色预警',
      type: '大风',
      status: '预警中',
      level: '蓝色',
      text: '…',
    };
    const scenario: Scenario = {
      start: '2026-07-01T08:00+08:00',
      steps: [
        { warnings: { '101210101': [{ typeCode: '1003', level: '黄色' }] } },
        {
          warnings: {
            '101210101': [
              { seq: 2, typeCode: '1003', level: '橙色', status: 'update', relatedSeq: 1 },
            ],
            '101010100': [raw],
          },
          listed: ['101210101', '101010100', '101280101'],
        },
        { warnings: {} },
      ],
    };
    sim.loadScenario(scenario);
    const first = (await warningNow('101210101')).warning;
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      id: '101210101202607010800' + '00001',
      level: '黄色',
      status: 'active',
    });

    expect(sim.step()).toBe(1);
    const second = (await warningNow('101210101')).warning;
    expect(second[0]).toMatchObject({ status: 'update', related: first[0]!.id, level: '橙色' });
    expect((await warningNow('101010100')).warning).toEqual([raw]);
    expect((await warningList()).warningLocList.map((e) => e.locationId)).toEqual([
      '101210101',
      '101010100',
      '101280101',
    ]);

    expect(sim.step()).toBe(2);
    expect((await warningNow('101210101')).warning).toEqual([]);
    expect((await warningList()).warningLocList).toEqual([]);
    // Past the last step it stays on the last step; steps can be chosen directly.
    expect(sim.step()).toBe(2);
    expect(sim.step(0)).toBe(0);
    expect((await warningNow('101210101')).warning[0]!.level).toBe('黄色');
    expect(() => sim.step(9)).toThrow(SimulatorInputError);
  });

  it('rejects a scenario with a bad record, naming where', () => {
    expect(() =>
      sim.loadScenario({
        steps: [{ warnings: { '101210101': [{ typeCode: '1003', level: 'x' }] } }],
      }),
    ).toThrow(/step 0, location 101210101/);
    expect(() =>
      sim.loadScenario({
        steps: [
          { warnings: { '101210101': [{ level: '黄色', relatedSeq: 4, typeCode: '1003' }] } },
        ],
      }),
    ).toThrow(/relatedSeq 4/);
  });
});

describe('v1 area alerts', () => {
  const circle = { lat: 22.5, lon: 114.0, radiusKm: 60 };

  it('returns one alert id for every point inside its area, zeroResult outside', async () => {
    const typhoon = v1Alert({
      area: circle,
      id: 'typhoon-1',
      typeCode: '1001',
      level: '橙色',
      issuedTime: '2026-07-01T08:00+08:00',
    });
    const byIds = v1Alert({
      area: { locationIds: ['101210101', '101210113'] },
      id: 'rain-1',
      typeCode: '1003',
      level: 'yellow',
    });
    sim.setAlerts([typhoon, byIds]);

    const shenzhen = await alertsAt('22.55', '114.09');
    const hongKong = await alertsAt('22.31', '114.18');
    expect(shenzhen.alerts.map((a) => a.id)).toEqual(['typhoon-1']);
    expect(hongKong.alerts.map((a) => a.id)).toEqual(['typhoon-1']);
    expect(shenzhen.metadata.zeroResult).toBe(false);
    expect(shenzhen.metadata.tag).toBe(hongKong.metadata.tag);
    expect(shenzhen.alerts[0]).toMatchObject({
      messageType: { code: 'alert', supersedes: [] },
      eventType: { name: '台风', code: '1001' },
      severity: 'severe',
      color: { code: 'orange' },
      issuedTime: '2026-07-01T00:00Z',
    });
    expect(shenzhen).not.toHaveProperty('code');

    // Listed Location IDs count by their coordinates, rounded to 2 decimals either way.
    expect((await alertsAt('30.25', '120.21')).alerts.map((a) => a.id)).toEqual(['rain-1']);
    expect((await alertsAt('30.27', '120.15')).alerts.map((a) => a.id)).toEqual(['rain-1']);

    const outside = await alertsAt('39.9', '116.4');
    expect(outside.alerts).toEqual([]);
    expect(outside.metadata.zeroResult).toBe(true);
    expect(outside.metadata.attributions.length).toBeGreaterThan(0);

    // localTime=true keeps the local offset.
    const local = await alertsAt('22.55', '114.09', '?localTime=true');
    expect(local.alerts[0]!.issuedTime).toBe('2026-07-01T08:00+08:00');
  });

  it('changes the tag when the alerts at a point change, and hides superseded ones', async () => {
    const a = v1Alert({ area: circle, id: 'A', typeCode: '1006', level: '蓝色' });
    sim.setAlerts([a]);
    const before = await alertsAt('22.55', '114.09');
    const again = await alertsAt('22.55', '114.09');
    expect(again.metadata.tag).toBe(before.metadata.tag);

    const b = v1Alert({
      area: circle,
      id: 'B',
      typeCode: '1006',
      level: '黄色',
      messageType: 'update',
      supersedes: ['A'],
    });
    sim.setAlerts([a, b]);
    const after = await alertsAt('22.55', '114.09');
    expect(after.alerts.map((x) => x.id)).toEqual(['B']);
    expect(after.metadata.tag).not.toBe(before.metadata.tag);
  });

  it('lets a cancel message disappear one simulated hour after it appears', async () => {
    const cancel = v1Alert({
      area: circle,
      id: 'C',
      typeCode: '1001',
      level: '蓝色',
      messageType: 'cancel',
      supersedes: ['B'],
    });
    sim.setAlerts([cancel]);
    expect((await alertsAt('22.55', '114.09')).alerts.map((x) => x.id)).toEqual(['C']);
    now = new Date(now.getTime() + 59 * 60_000);
    // Setting the same alerts again keeps the time it first appeared.
    sim.setAlerts([cancel]);
    expect((await alertsAt('22.55', '114.09')).alerts.map((x) => x.id)).toEqual(['C']);
    now = new Date(now.getTime() + 60_000);
    expect((await alertsAt('22.55', '114.09')).metadata.zeroResult).toBe(true);
  });

  it('serves expiredTime and null supersedes as quirks', async () => {
    sim.setAlerts([
      v1Alert({
        area: circle,
        id: 'Q',
        typeCode: '1001',
        level: '红色',
        quirks: ['expiredTime', 'nullSupersedes'],
      }),
    ]);
    const alert = (await alertsAt('22.55', '114.09')).alerts[0]!;
    expect(alert).toHaveProperty('expiredTime');
    expect(alert).not.toHaveProperty('expireTime');
    expect(alert.messageType).toEqual({ code: 'alert', supersedes: null });
  });

  it('answers bad coordinates in problem+json style with the real status', async () => {
    for (const [lat, lon] of [
      ['22.555', '114.09'],
      ['91', '114'],
      ['22.5', '181'],
      ['north', '114'],
    ]) {
      const res = await getJson<{
        error: { status: number; title: string; invalidParams: string[] };
      }>(`${sim.url}/weatheralert/v1/current/${lat}/${lon}`);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.body.error.status).toBe(400);
      expect(res.body.error.invalidParams.length).toBe(1);
    }
  });

  it('takes area alerts from scenario steps in compact form', async () => {
    sim.loadScenario({
      start: '2026-07-01T08:00+08:00',
      steps: [
        { alerts: [{ area: { locationIds: ['101280601'] }, typeCode: '1001', level: '黄色' }] },
        { alerts: [] },
      ],
    });
    const first = await alertsAt('22.55', '114.09');
    expect(first.alerts).toHaveLength(1);
    sim.step();
    expect((await alertsAt('22.55', '114.09')).metadata.zeroResult).toBe(true);
  });
});

describe('v7 warnings in Weather Alert v1, and the retirement of v7', () => {
  it('answers a v7 warning at its place point under another id, with links translated', async () => {
    const first = v7Warning({
      locationId: '101210101',
      seq: 1,
      typeCode: '1003',
      level: '黄色',
      pubTime: '2026-07-01T08:00+08:00',
    });
    sim.setWarnings('101210101', [first]);
    // 杭州 is at 30.246,120.2108: its point is 30.25,120.21.
    const before = await alertsAt('30.25', '120.21', '?localTime=true');
    expect(before.alerts).toHaveLength(1);
    const alert = before.alerts[0]!;
    expect(alert.id).not.toBe(first.id);
    expect(alert).toMatchObject({
      senderName: '杭州市气象台',
      eventType: { code: '1003' },
      color: { code: 'yellow' },
      messageType: { code: 'alert', supersedes: [] },
    });
    const skewMs = Date.parse(String(alert.issuedTime)) - Date.parse('2026-07-01T08:00+08:00');
    expect(skewMs).toBeGreaterThanOrEqual(0);
    expect(skewMs).toBeLessThan(10 * 60_000);
    // Elsewhere nothing.
    expect((await alertsAt('39.90', '116.40')).alerts).toEqual([]);

    const update = v7Warning({
      locationId: '101210101',
      seq: 2,
      typeCode: '1003',
      level: '橙色',
      status: 'update',
      related: first.id,
      pubTime: '2026-07-01T10:00+08:00',
    });
    sim.setWarnings('101210101', [first, update]);
    const after = await alertsAt('30.25', '120.21');
    // The updated alert is no longer returned; the update names it by its v1 id.
    expect(after.alerts.map((a) => a.id)).toHaveLength(1);
    expect(after.alerts[0]).toMatchObject({
      messageType: { code: 'update', supersedes: [alert.id] },
    });
    expect(after.metadata.tag).not.toBe(before.metadata.tag);
  });

  it('retires v7 on demand: 403 Deprecated on the warning paths, v1 and geo still served', async () => {
    sim.setWarnings('101210101', [
      v7Warning({ locationId: '101210101', typeCode: '1003', level: '黄色' }),
    ]);
    expect((await control(sim.url, 'POST', '/_sim/retire-v7')).status).toBe(200);
    for (const path of ['/v7/warning/now?location=101210101', '/v7/warning/list?range=cn']) {
      const res = await getJson<{ error: { status: number; title: string } }>(`${sim.url}${path}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ status: 403, title: 'Deprecated' });
    }
    expect((await alertsAt('30.25', '120.21')).alerts).toHaveLength(1);
    expect(sim.state().v7Retired).toBe(true);
    await control(sim.url, 'DELETE', '/_sim/retire-v7');
    expect((await warningNow('101210101')).warning).toHaveLength(1);
    sim.retireV7();
    expect((await getJson(`${sim.url}/v7/warning/list?range=cn`)).status).toBe(403);
  });
});
