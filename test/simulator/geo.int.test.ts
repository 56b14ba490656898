import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { getJson, type Place } from './support.js';

let sim: Simulator;
const q = (path: string) => `${sim.url}${path}`;

beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(async () => {
  await sim.close();
});

type GeoBody = { code: string; location?: Place[]; topCityList?: Place[]; poi?: Place[] };

async function lookup(params: Record<string, string>) {
  const search = new URLSearchParams(params).toString();
  return (await getJson<GeoBody>(q(`/v2/city/lookup?${search}`))).body;
}

describe('city lookup', () => {
  it('answers the record shape of the spec, every value a string', async () => {
    const body = await lookup({ location: '杭州' });
    expect(body.code).toBe('200');
    const first = body.location![0]!;
    expect(first).toEqual({
      name: '杭州',
      id: '101210101',
      lat: '30.246',
      lon: '120.2108',
      adm2: '杭州市',
      adm1: '浙江省',
      country: '中国',
      tz: 'Asia/Shanghai',
      utcOffset: '+08:00',
      isDst: '0',
      type: 'city',
      rank: first.rank,
      fxLink: 'https://www.qweather.com/weather/hangzhou-101210101.html',
    });
    expect(first.rank).toMatch(/^\d+$/);
  });

  it('fuzzy-searches by prefix and substring in Chinese and English, case-insensitively', async () => {
    const prefix = await lookup({ location: 'BEIJ' });
    expect(prefix.location!.map((p) => p.id)).toEqual(['101010100']);
    const substring = await lookup({ location: '州' });
    const ids = substring.location!.map((p) => p.id);
    expect(ids).toEqual(expect.arrayContaining(['101210101', '101280101', '101230101']));
    // Relevance first, then rank: 杭州 (rank 93) before 福州 (rank 80).
    expect(ids.indexOf('101210101')).toBeLessThan(ids.indexOf('101230101'));
    const withSuffix = await lookup({ location: '杭州市' });
    expect(withSuffix.location![0]!.id).toBe('101210101');
  });

  it('puts exact names first, then prefix matches, then substring matches', async () => {
    const body = await lookup({ location: 'ha', lang: 'en', number: '20' });
    const kinds = body.location!.map((p) => (p.name!.toLowerCase().startsWith('ha') ? 1 : 2));
    expect(kinds).toContain(1);
    expect(kinds).toContain(2);
    expect([...kinds].sort()).toEqual(kinds);
    const exact = await lookup({ location: 'shenzhen' });
    expect(exact.location![0]!.id).toBe('101280601');
  });

  it('returns both 朝阳 and narrows them by adm, with or without suffix, zh or en', async () => {
    const both = await lookup({ location: '朝阳' });
    expect(both.location!.map((p) => p.id)).toEqual(['101010300', '101071201']);
    for (const adm of ['辽宁', '辽宁省', 'Liaoning', '朝阳市']) {
      const one = await lookup({ location: '朝阳', adm });
      expect(one.location!.map((p) => p.id)).toEqual(['101071201']);
    }
    expect((await lookup({ location: '朝阳', adm: '北京' })).location!.map((p) => p.id)).toEqual([
      '101010300',
    ]);
  });

  it('filters by range', async () => {
    expect((await lookup({ location: '香港' })).location!.map((p) => p.id)).toEqual(['101320101']);
    expect(await lookup({ location: '香港', range: 'cn' })).toEqual({ code: '404' });
    expect((await lookup({ location: '香港', range: 'hk' })).location![0]!.country).toBe(
      '香港特别行政区',
    );
  });

  it('looks up by Location ID, by ADCode and by coordinates (nearest place)', async () => {
    expect((await lookup({ location: '101280601' })).location![0]!.name).toBe('深圳');
    expect((await lookup({ location: '440300' })).location![0]!.id).toBe('101280601');
    const near = await lookup({ location: '113.58,22.27' });
    expect(near.location!.map((p) => p.id)).toEqual(['101280701']);
    expect((await lookup({ location: '120.15,30.27' })).location![0]!.id).toBe('101210113');
  });

  it('gives English names with lang=en', async () => {
    const body = await lookup({ location: '101210113', lang: 'en' });
    expect(body.location![0]).toMatchObject({
      name: 'Xihu',
      adm2: 'Hangzhou',
      adm1: 'Zhejiang',
      country: 'China',
    });
  });

  it('applies number: default 10, at most 20, 1 allowed', async () => {
    expect((await lookup({ location: 'an' })).location!.length).toBe(10);
    expect((await lookup({ location: 'an', number: '20' })).location!.length).toBeGreaterThan(10);
    expect((await lookup({ location: 'an', number: '1' })).location!.length).toBe(1);
  });

  it('answers 404 for no match and 400 for bad parameters (old style, HTTP 200)', async () => {
    expect(await lookup({ location: '不存在的地方' })).toEqual({ code: '404' });
    for (const params of [
      {} as Record<string, string>,
      { location: 'a' },
      { location: 'beijing', number: '0' },
      { location: 'beijing', number: '21' },
      { location: 'beijing', number: 'x' },
      { location: 'beijing', range: 'china' },
      { location: 'beijing', lang: 'not a lang' },
      { location: '200,30' },
      { location: 'beijing', gzip: 'maybe' },
    ]) {
      const res = await getJson(q(`/v2/city/lookup?${new URLSearchParams(params).toString()}`));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ code: '400' });
    }
    // One Chinese character is enough.
    expect((await lookup({ location: '京' })).code).toBe('200');
  });

  it('serves the same operations under /geo/v2 as today’s account hosts do', async () => {
    const res = await getJson<GeoBody>(q('/geo/v2/city/lookup?location=101010100'));
    expect(res.body.location![0]!.name).toBe('北京');
  });
});

describe('popular cities', () => {
  it('orders by rank, names the country field cnty, honours range and number', async () => {
    const world = (await getJson<GeoBody>(q('/v2/city/top'))).body;
    expect(world.code).toBe('200');
    expect(world.topCityList!.length).toBe(10);
    expect(world.topCityList!.slice(0, 3).map((p) => p.name)).toEqual(['北京', '上海', '广州']);
    const ranks = world.topCityList!.map((p) => Number(p.rank));
    expect([...ranks].sort((a, b) => b - a)).toEqual(ranks);
    expect(world.topCityList![0]).toHaveProperty('cnty', '中国');
    expect(world.topCityList![0]).not.toHaveProperty('country');

    const hk = (await getJson<GeoBody>(q('/v2/city/top?range=hk&number=20'))).body;
    expect(hk.topCityList!.map((p) => p.id)).toEqual(['101320101']);
    const three = (await getJson<GeoBody>(q('/v2/city/top?range=cn&number=3&lang=en'))).body;
    expect(three.topCityList!.map((p) => p.name)).toEqual(['Beijing', 'Shanghai', 'Guangzhou']);
    expect((await getJson(q('/v2/city/top?number=21'))).body).toEqual({ code: '400' });
  });
});

describe('POI search', () => {
  it('finds scenic spots by name, restricted to a city by exact name or Location ID', async () => {
    const all = (
      await getJson<GeoBody>(q(`/v2/poi/lookup?type=scenic&location=${encodeURIComponent('公园')}`))
    ).body;
    expect(all.code).toBe('200');
    expect(all.poi!.map((p) => p.name)).toEqual(
      expect.arrayContaining(['北海公园', '朝阳公园', '北京奥林匹克公园']),
    );
    expect(all.poi![0]).toMatchObject({ type: 'scenic', tz: 'Asia/Shanghai', utcOffset: '+08:00' });

    const inChaoyang = (
      await getJson<GeoBody>(
        q(`/v2/poi/lookup?type=scenic&location=${encodeURIComponent('公园')}&city=101010300`),
      )
    ).body;
    expect(inChaoyang.poi!.map((p) => p.id).sort()).toEqual(['10101030006A', '10101030011A']);

    const byName = (
      await getJson<GeoBody>(
        q(
          `/v2/poi/lookup?type=scenic&location=${encodeURIComponent('西湖')}&city=${encodeURIComponent('杭州')}`,
        ),
      )
    ).body;
    expect(byName.poi!.map((p) => p.id)).toEqual(['10121010109A']);

    const noCity = (
      await getJson<GeoBody>(
        q(
          `/v2/poi/lookup?type=scenic&location=${encodeURIComponent('西湖')}&city=${encodeURIComponent('杭')}`,
        ),
      )
    ).body;
    expect(noCity).toMatchObject({ code: '200', poi: [] });
  });

  it('requires type=scenic and the minimum text', async () => {
    expect((await getJson(q('/v2/poi/lookup?location=park'))).body).toEqual({ code: '400' });
    expect((await getJson(q('/v2/poi/lookup?location=park&type=hotel'))).body).toEqual({
      code: '400',
    });
    expect((await getJson(q('/v2/poi/lookup?location=p&type=scenic'))).body).toEqual({
      code: '400',
    });
    expect((await getJson(q('/v2/poi/lookup?location=zz&type=scenic'))).body).toEqual({
      code: '404',
    });
  });

  it('finds POIs within a radius, nearest first, default 5 km, 1-50 km allowed', async () => {
    const near = (await getJson<GeoBody>(q('/v2/poi/range?type=scenic&location=120.14,30.24')))
      .body;
    // 西湖 is at the point, 雷峰塔 about 1 km away; 宋城 (about 8 km) is outside 5 km.
    expect(near.poi!.map((p) => p.id)).toEqual(['10121010109A', '10121010104A']);
    const wide = (
      await getJson<GeoBody>(q('/v2/poi/range?type=scenic&location=120.14,30.24&radius=12'))
    ).body;
    expect(wide.poi!.map((p) => p.id)).toEqual(['10121010109A', '10121010104A', '10121010107A']);
    const one = (
      await getJson<GeoBody>(
        q('/v2/poi/range?type=scenic&location=120.14,30.24&radius=50&number=1'),
      )
    ).body;
    expect(one.poi!.length).toBe(1);
    for (const bad of ['radius=0', 'radius=51', 'radius=2.5', 'number=0']) {
      expect(
        (await getJson(q(`/v2/poi/range?type=scenic&location=120.14,30.24&${bad}`))).body,
      ).toEqual({
        code: '400',
      });
    }
    expect((await getJson(q('/v2/poi/range?type=scenic&location=hangzhou'))).body).toEqual({
      code: '400',
    });
    expect((await getJson(q('/v2/poi/range?type=scenic&location=0,0'))).body).toEqual({
      code: '404',
    });
  });
});
