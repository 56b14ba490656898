import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v1Alert, v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * README, promises, language: English subscribers get the upstream's English (`lang=en`, asked only
 * where they watch), else English names for type and level and the original text marked as
 * Chinese; Chinese subscribers are untouched.
 */

const HANGZHOU = '101210101';
const NINGBO = '101210401';

interface Body {
  type: string;
  data: {
    location: { name: string };
    warning: { id: string; title: string; text: string; typeName: string; textLanguage?: string };
  };
}

const bodiesTo = (h: PipelineHarness, path: string) =>
  h.hooks.requestsTo(path).map((r) => r.json as Body);

async function english(h: PipelineHarness, subscriberId: string) {
  await h.database.db.execute(sql`UPDATE subscribers SET lang = 'en' WHERE id = ${subscriberId}`);
}

describe('v7: English for English subscribers', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.database.db.execute(sql`UPDATE places SET name_en = 'Hangzhou' WHERE id = ${HANGZHOU}`);
    await english(h, await h.addWebhookSubscriber('/en', [HANGZHOU]));
    await h.addWebhookSubscriber('/zh', [HANGZHOU, NINGBO]);
  });
  afterAll(() => h?.close());

  it("asks for English only where English subscribers watch, and tells them the upstream's English", async () => {
    const red = v7Warning({ locationId: HANGZHOU, seq: 61, typeCode: '1001', level: '红色' });
    const yellow = v7Warning({ locationId: NINGBO, seq: 62, typeCode: '1003', level: '黄色' });
    h.sim.setWarnings(HANGZHOU, [red]);
    h.sim.setWarnings(NINGBO, [yellow]);
    h.sim.resetRequests();
    const s = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
    expect(s).toMatchObject({ upstreamCalls: 3, englishCalls: 1, upstreamErrors: 0 });
    expect(h.sim.requests().byOperationLocation.warningNow).toEqual({
      [HANGZHOU]: 2,
      [NINGBO]: 1,
    });
    const [en] = bodiesTo(h, '/en');
    expect(en?.data.location.name).toBe('Hangzhou');
    expect(en?.data.warning).toMatchObject({
      id: red.id,
      title: 'Hangzhou Meteorological Observatory issued Red Typhoon Warning',
      typeName: 'Typhoon',
    });
    expect(en?.data.warning.text).toMatch(/^Hangzhou Meteorological Observatory issued/);
    expect(en?.data.warning).not.toHaveProperty('textLanguage');
    const zh = bodiesTo(h, '/zh').find((b) => b.data.warning.id === red.id);
    expect(zh?.data.warning).toMatchObject({ title: red.title, typeName: '台风' });
    expect(zh?.data.location.name).toBe('杭州');
  });

  it('names type and level in English and marks the text as Chinese when no English was published', async () => {
    const record = v7Warning({ locationId: HANGZHOU, seq: 63, typeCode: '1003', level: '橙色' });
    // The simulator serves this record in Chinese even when asked for English.
    const rain = { ...record, en: false };
    h.sim.setWarnings(HANGZHOU, [rain]);
    h.hooks.reset();
    await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
    const [en] = bodiesTo(h, '/en').filter((b) => b.type === 'warning.new');
    expect(en?.data.warning).toMatchObject({
      id: rain.id,
      title: 'Orange Rainstorm Warning',
      typeName: 'Rainstorm',
      text: record.text,
      textLanguage: 'zh',
    });
  });
});

describe('v1: English for English subscribers at a point', () => {
  let h: PipelineHarness;
  const area = { lat: 30.27, lon: 120.16, radiusKm: 5 };

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { QWEATHER_ALERT_SOURCE: 'v1' } });
    await h.database.db.execute(sql`
      INSERT INTO places (id, name, name_en, lat, lon)
      VALUES (${HANGZHOU}, '杭州', 'Hangzhou', 30.27, 120.16)`);
    await english(h, await h.addWebhookSubscriber('/en', [HANGZHOU]));
  });
  afterAll(() => h?.close());

  it('asks the point in English too, and tells the English alert', async () => {
    const rt = h.runtime();
    h.sim.setAlerts([v1Alert({ area, id: 'V1EN0001', typeCode: '1006', level: '蓝色' })]);
    const s = await runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
    expect(s).toMatchObject({ upstreamCalls: 1, englishCalls: 1 });
    const [en] = bodiesTo(h, '/en');
    expect(en?.data.warning).toMatchObject({ id: 'V1EN0001', typeName: 'Gale' });
    expect(en?.data.warning.title).toMatch(/Blue Gale Warning$/);
  });
});
