import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadPlacesFromCsv,
  startSimulator,
  type PlaceData,
  type Simulator,
} from '../../src/simulator/index.js';
import { getJson } from './support.js';

const DATA_DIR = fileURLToPath(new URL('../../../shared/data/qweather', import.meta.url));

let data: PlaceData;
let sim: Simulator;

beforeAll(async () => {
  data = await loadPlacesFromCsv(DATA_DIR);
  sim = await startSimulator({ places: data });
});
afterAll(async () => {
  await sim.close();
});

describe('loadPlacesFromCsv on the real lists', () => {
  it('reads every place and every scenic spot (banner line, BOM, quoted fields)', () => {
    expect(data.places).toHaveLength(3578);
    // The README says 2,600; the file holds 2,601 distinct rows.
    expect(data.pois).toHaveLength(2601);
    expect(new Set(data.pois.map((p) => p.id)).size).toBe(2601);
    expect(data.places.filter((p) => p.iso === 'CN')).toHaveLength(3184);
    const taiwan = data.places.find((p) => p.id === '441DA');
    expect(taiwan).toMatchObject({
      countryEn: 'Taiwan, Province of China',
      name: '西湖乡',
      tz: 'Asia/Taipei',
    });
    expect(data.pois[0]!.id).toBe('10117030601A');
  });

  it('serves national-scale lookups: 西湖 in two regions, adm narrowing, ranks', async () => {
    const both = await getJson<{ location: Array<Record<string, string>> }>(
      `${sim.url}/v2/city/lookup?location=${encodeURIComponent('西湖')}&range=cn`,
    );
    const ids = both.body.location.map((p) => p.id);
    expect(ids).toEqual(expect.arrayContaining(['101210113', '101240107']));
    const one = await getJson<{ location: Array<Record<string, string>> }>(
      `${sim.url}/v2/city/lookup?location=${encodeURIComponent('西湖')}&adm=${encodeURIComponent('杭州')}`,
    );
    expect(one.body.location.map((p) => p.id)).toEqual(['101210113']);
    const top = await getJson<{ topCityList: Array<Record<string, string>> }>(
      `${sim.url}/v2/city/top?range=cn&number=20`,
    );
    expect(top.body.topCityList.map((p) => p.id)).toContain('101010100');
  });

  // Speed is the benchmark's business (noisy machines); this checks a burst is answered right.
  it('answers a burst of warning-now calls at national scale', async () => {
    const ids = data.places
      .filter((p) => p.iso === 'CN')
      .slice(0, 500)
      .map((p) => p.id);
    const bodies = await Promise.all(
      ids.map((id) => getJson<{ code: string }>(`${sim.url}/v7/warning/now?location=${id}`)),
    );
    expect(bodies.every((b) => b.body.code === '200')).toBe(true);
    expect(sim.requests().byOperation.warningNow).toBe(500);
  });
});
