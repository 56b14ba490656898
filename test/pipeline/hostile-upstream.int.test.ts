import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { runCheck } from '../../src/pipeline/check.js';
import { runCycleOnce, type CycleSummary } from '../../src/pipeline/run-once.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v1Alert, v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * README, promises over real HTTP, Postgres and Redis: each row of the hostile-upstream table, and
 * what reaches the webhook receiver. Cycles run in-process (`runCycleOnce`, as `poll --once`).
 */

const HANGZHOU = '101210101';
const BEIJING = '101010100';
const NINGBO = '101210401';

interface Told {
  type: string;
  id: string;
  inForceWhenSubscribed?: boolean;
  supersedes: string[];
  endedAt?: string;
}

const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000);

function toldTo(h: PipelineHarness, path: string): Told[] {
  return h.hooks.requestsTo(path).map((r) => {
    const body = r.json as {
      type: string;
      data: {
        warning: { id: string };
        supersedes: string[];
        inForceWhenSubscribed?: boolean;
        endedAt?: string;
      };
    };
    return {
      type: body.type,
      id: body.data.warning.id,
      supersedes: body.data.supersedes,
      ...(body.data.inForceWhenSubscribed ? { inForceWhenSubscribed: true } : {}),
      ...(body.data.endedAt ? { endedAt: body.data.endedAt } : {}),
    };
  });
}

const kinds = (told: readonly Told[]) => told.map((t) => `${t.type} ${t.id}`);

async function cycle(rt: Runtime): Promise<CycleSummary> {
  return runCycleOnce(rt.ctx, rt.redis, { timeoutMs: 30_000 });
}

/** A v7 record as raw JSON text, with `replace` applied to its text (escapes survive). */
function rawRecord(record: object, replace: [string, string][] = []): string {
  let text = JSON.stringify(record);
  for (const [from, to] of replace) text = text.replace(from, to);
  return text;
}

describe('v7: only a well-formed answer can end a warning', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  const red = v7Warning({
    locationId: HANGZHOU,
    seq: 11,
    typeCode: '1001',
    level: '红色',
    pubTime: hoursAgo(1),
  });

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.addWebhookSubscriber('/desk', [HANGZHOU, NINGBO]);
  });
  afterAll(() => h?.close());
  beforeEach(() => h.sim.clearFaults());

  it.each([['{}'], ['{"code":"200"}'], ['{"code":"200","warning":null}']])(
    'counts %s as a failed call twice over: no all-clear, no silent reopening',
    async (body) => {
      h.sim.setWarnings(HANGZHOU, [red]);
      h.hooks.reset();
      await cycle(rt);
      h.sim.addFault({ kind: 'body', body, operation: 'warningNow', location: HANGZHOU });
      for (let i = 0; i < 2; i += 1) {
        const s = await cycle(rt);
        expect(s.upstreamErrors).toBe(1);
        expect(s.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
      }
      h.sim.clearFaults();
      const back = await cycle(rt);
      expect(back.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
      expect(kinds(toldTo(h, '/desk')).filter((k) => !k.startsWith('warning.new'))).toEqual([]);
    },
  );

  it('fails the cycle on a list without its array, and tells the new warning once it is read', async () => {
    const ningboRed = v7Warning({ locationId: NINGBO, seq: 12, typeCode: '1003', level: '红色' });
    h.sim.setWarnings(NINGBO, [ningboRed]);
    h.hooks.reset();
    h.sim.addFault({ kind: 'body', body: '{"code":"200"}', operation: 'warningList', times: 1 });
    const failed = await cycle(rt);
    expect(failed).toMatchObject({ ok: false, upstreamErrors: 1, checked: 0 });
    const read = await cycle(rt);
    expect(read.ok).toBe(true);
    expect(kinds(toldTo(h, '/desk'))).toEqual([`warning.new ${ningboRed.id}`]);
  });
});

describe('v7: one bad record never hides the others', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addWebhookSubscriber('/desk', [HANGZHOU]);
  });
  afterAll(() => h?.close());

  it('tells the red warning beside poisoned records, repairing what is safe, skipping the rest', async () => {
    const red = v7Warning({ locationId: HANGZHOU, seq: 21, typeCode: '1001', level: '红色' });
    const nul = v7Warning({ locationId: HANGZHOU, seq: 22, typeCode: '1003', level: '黄色' });
    const lone = v7Warning({ locationId: HANGZHOU, seq: 23, typeCode: '1006', level: '蓝色' });
    const urgent = v7Warning({ locationId: HANGZHOU, seq: 24, typeCode: '1014', level: '黄色' });
    h.sim.setWarnings(HANGZHOU, [red]);
    h.sim.addFault({
      kind: 'extraRecords',
      operation: 'warningNow',
      location: HANGZHOU,
      records: [
        rawRecord(nul, [['"text":"', '"text":"\\u0000']]),
        rawRecord(lone, [['"title":"', '"title":"\\ud800']]),
        rawRecord({ ...urgent, urgency: { code: 'Immediate' } }),
        `{"id":"DEEP0001","title":${'['.repeat(6000)}${']'.repeat(6000)}}`,
      ],
    });
    const s = await cycle(rt);
    expect(s).toMatchObject({ ok: true, upstreamErrors: 0, skippedRecords: 1 });
    expect(s.events.new).toBe(4);
    expect(kinds(toldTo(h, '/desk')).sort()).toEqual(
      [red, nul, lone, urgent].map((w) => `warning.new ${w.id}`).sort(),
    );
    const [stored] = await queryRows<{ text: string }>(
      h.database.db,
      sql`SELECT record->>'text' AS text FROM warnings WHERE warning_id = ${nul.id}`,
    );
    expect(stored?.text).not.toContain('\u0000');
  });

  it('ends nothing while an answer holds a record it could not read', async () => {
    h.sim.clearFaults();
    h.sim.setWarnings(HANGZHOU, []);
    h.hooks.reset();
    h.sim.addFault({
      kind: 'extraRecords',
      operation: 'warningNow',
      location: HANGZHOU,
      records: [`{"id":"DEEP0002","x":${'['.repeat(100)}${']'.repeat(100)}}`],
    });
    for (let i = 0; i < 3; i += 1) {
      const s = await cycle(rt);
      expect(s).toMatchObject({ skippedRecords: 1 });
      expect(s.events.expired).toBe(0);
    }
    h.sim.clearFaults();
    await cycle(rt);
    const ended = await cycle(rt);
    expect(ended.events.expired).toBe(4);
    expect(toldTo(h, '/desk').every((t) => t.type === 'warning.expired' && t.endedAt)).toBe(true);
  });
});

describe('v7: a hung place never holds the cycle', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime({ QWEATHER_TIMEOUT_MS: '400' });
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.addWebhookSubscriber('/desk', [HANGZHOU, NINGBO]);
  });
  afterAll(() => h?.close());

  it('ends a dripping answer at its deadline and checks the other places', async () => {
    const hz = v7Warning({ locationId: HANGZHOU, seq: 31, typeCode: '1001', level: '红色' });
    const nb = v7Warning({ locationId: NINGBO, seq: 32, typeCode: '1003', level: '红色' });
    h.sim.setWarnings(HANGZHOU, [hz]);
    h.sim.setWarnings(NINGBO, [nb]);
    h.sim.addFault({ kind: 'drip', intervalMs: 200, operation: 'warningNow', location: HANGZHOU });
    const started = Date.now();
    const s = await cycle(rt);
    // Three attempts of 0.4 s and their backoff: a drip of 200 ms a byte would take minutes.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(s).toMatchObject({ ok: true, checked: 2, upstreamErrors: 1 });
    expect(kinds(toldTo(h, '/desk'))).toEqual([`warning.new ${nb.id}`]);
  });
});

describe('v7: an end is told only when it is an end, and a warning back is told', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addWebhookSubscriber('/desk', [HANGZHOU]);
  });
  afterAll(() => h?.close());

  it('tells no end of a warning that blinks out for two cycles inside EXPIRE_AFTER_SECONDS', async () => {
    const rt = h.runtime({ EXPIRE_AFTER_SECONDS: '900' });
    const w = v7Warning({ locationId: HANGZHOU, seq: 41, typeCode: '1003', level: '红色' });
    h.sim.setWarnings(HANGZHOU, [w]);
    await cycle(rt);
    h.sim.setWarnings(HANGZHOU, []);
    expect((await cycle(rt)).events.expired).toBe(0);
    expect((await cycle(rt)).events.expired).toBe(0);
    h.sim.setWarnings(HANGZHOU, [w]);
    expect((await cycle(rt)).events).toEqual({
      new: 0,
      update: 0,
      cancel: 0,
      expired: 0,
      resumed: 0,
    });
    expect(kinds(toldTo(h, '/desk'))).toEqual([`warning.new ${w.id}`]);
  });

  it('tells a warning back after its told end as resumed, once, and its next end again', async () => {
    const rt = h.runtime();
    h.hooks.reset();
    const w = v7Warning({ locationId: HANGZHOU, seq: 42, typeCode: '1009', level: '橙色' });
    h.sim.setWarnings(HANGZHOU, [w]);
    await cycle(rt);
    h.sim.setWarnings(HANGZHOU, []);
    await cycle(rt);
    await cycle(rt);
    h.sim.setWarnings(HANGZHOU, [w]);
    expect((await cycle(rt)).events.resumed).toBe(1);
    expect((await cycle(rt)).events.resumed).toBe(0);
    h.sim.setWarnings(HANGZHOU, []);
    await cycle(rt);
    expect((await cycle(rt)).events.expired).toBe(1);
    const told = toldTo(h, '/desk').filter((t) => t.id === w.id);
    expect(kinds(told)).toEqual([
      `warning.new ${w.id}`,
      `warning.expired ${w.id}`,
      `warning.resumed ${w.id}`,
      `warning.expired ${w.id}`,
    ]);
    // Four notifications, four webhook-ids: the second end is not the first one again.
    expect(new Set(h.hooks.requestsTo('/desk').map((r) => r.headers['webhook-id'])).size).toBe(
      h.hooks.requestsTo('/desk').length,
    );
  });

  it('never counts a check job of an earlier cycle that runs late as a miss', async () => {
    const rt = h.runtime();
    h.hooks.reset();
    const w = v7Warning({ locationId: HANGZHOU, seq: 43, typeCode: '1006', level: '黄色' });
    h.sim.setWarnings(HANGZHOU, [w]);
    const first = await cycle(rt);
    const [older] = await queryRows<{ started_at: Date }>(
      h.database.db,
      sql`SELECT started_at FROM poll_cycles WHERE id = ${first.cycle}`,
    );
    h.sim.setWarnings(HANGZHOU, []);
    expect((await cycle(rt)).events.expired).toBe(0); // the first miss
    // Jobs of cycles that began before the warning was last seen: no miss, however many.
    for (let i = 0; i < 3; i += 1) {
      const [late] = await queryRows<{ id: string }>(
        h.database.db,
        sql`INSERT INTO poll_cycles (started_at) VALUES (${new Date(older!.started_at)})
            RETURNING id`,
      );
      const outcome = await runCheck(rt.ctx, {
        cycleId: late!.id,
        placeId: HANGZHOU,
        cycleStartedAt: new Date(older!.started_at).toISOString(),
      });
      expect(outcome.events.expired).toBe(0);
    }
    expect(kinds(toldTo(h, '/desk'))).toEqual([`warning.new ${w.id}`]);
    expect((await cycle(rt)).events.expired).toBe(1);
  });
});

describe('v7: a warning at several places, and who hears which part of the story', () => {
  let h: PipelineHarness;
  let rt: Runtime;

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(BEIJING, '北京');
  });
  afterAll(() => h?.close());

  it('ends a warning for a desk watching two places only when it ended at both', async () => {
    await h.addWebhookSubscriber('/both', [HANGZHOU, BEIJING]);
    await h.addWebhookSubscriber('/beijing', [BEIJING]);
    const shared = v7Warning({
      locationId: HANGZHOU,
      id: '10121010120261128090000051',
      typeCode: '1004',
      level: '橙色',
    });
    h.sim.setWarnings(HANGZHOU, [shared]);
    h.sim.setWarnings(BEIJING, [shared]);
    await cycle(rt);
    h.sim.setWarnings(BEIJING, []);
    await cycle(rt);
    await cycle(rt);
    expect(kinds(toldTo(h, '/beijing'))).toEqual([
      `warning.new ${shared.id}`,
      `warning.expired ${shared.id}`,
    ]);
    expect(kinds(toldTo(h, '/both'))).toEqual([`warning.new ${shared.id}`]);
    h.sim.setWarnings(HANGZHOU, []);
    await cycle(rt);
    await cycle(rt);
    expect(kinds(toldTo(h, '/both'))).toEqual([
      `warning.new ${shared.id}`,
      `warning.expired ${shared.id}`,
    ]);
  });

  it('tells a late joiner what is in force, then its end; never an end of what it was not told', async () => {
    h.hooks.reset();
    const yellow = v7Warning({
      locationId: HANGZHOU,
      seq: 52,
      typeCode: '1003',
      level: '黄色',
      pubTime: hoursAgo(3),
    });
    h.sim.setWarnings(HANGZHOU, [yellow]);
    await cycle(rt);
    // Added while the yellow warning is in force: a desk for everything, one for orange and up.
    await h.addWebhookSubscriber('/late', [HANGZHOU]);
    await h.addWebhookSubscriber('/orange', [HANGZHOU], { minLevel: '橙色' });
    const caughtUp = await cycle(rt);
    expect(caughtUp.events.new).toBe(0);
    expect(toldTo(h, '/late')).toEqual([
      { type: 'warning.new', id: yellow.id, supersedes: [], inForceWhenSubscribed: true },
    ]);
    expect(toldTo(h, '/orange')).toEqual([]);
    // Raised to orange: the orange desk's first message about it is a new.
    const orange = v7Warning({
      locationId: HANGZHOU,
      seq: 53,
      typeCode: '1003',
      level: '橙色',
      status: 'update',
      related: yellow.id,
      pubTime: hoursAgo(2),
    });
    h.sim.setWarnings(HANGZHOU, [orange]);
    await cycle(rt);
    expect(toldTo(h, '/orange')).toEqual([{ type: 'warning.new', id: orange.id, supersedes: [] }]);
    expect(kinds(toldTo(h, '/late'))).toEqual([
      `warning.new ${yellow.id}`,
      `warning.update ${orange.id}`,
    ]);
    // Nothing more to catch up: the next cycle tells nobody anything.
    await cycle(rt);
    expect(h.hooks.requestsTo('/late')).toHaveLength(2);
  });

  it('never tells the end of a warning to a desk that was never told it', async () => {
    h.hooks.reset();
    const storm = v7Warning({ locationId: BEIJING, seq: 55, typeCode: '1001', level: '红色' });
    h.sim.setWarnings(BEIJING, [storm]);
    await cycle(rt);
    // A subscription that missed its catch-up (as one made before catch-ups existed): the
    // warning's end is not news to tell it.
    const untold = await h.addWebhookSubscriber('/untold', [BEIJING]);
    await h.database.db.execute(
      sql`UPDATE subscriptions SET catch_up = false WHERE subscriber_id = ${untold}`,
    );
    h.sim.setWarnings(BEIJING, []);
    await cycle(rt);
    expect((await cycle(rt)).events.expired).toBe(1);
    expect(toldTo(h, '/untold')).toEqual([]);
    expect(kinds(toldTo(h, '/beijing')).slice(-2)).toEqual([
      `warning.new ${storm.id}`,
      `warning.expired ${storm.id}`,
    ]);
  });

  it('never tells the end of a warning to a desk whose filter kept it from being told', async () => {
    h.hooks.reset();
    await h.addWebhookSubscriber('/red-only', [BEIJING], { minLevel: '红色' });
    const blue = v7Warning({ locationId: BEIJING, seq: 54, typeCode: '1006', level: '蓝色' });
    h.sim.setWarnings(BEIJING, [blue]);
    await cycle(rt);
    h.sim.setWarnings(BEIJING, []);
    await cycle(rt);
    await cycle(rt);
    expect(toldTo(h, '/red-only')).toEqual([]);
  });
});

describe('v1: the same promises at points', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  const area = { lat: 30.27, lon: 120.16, radiusKm: 5 };

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { QWEATHER_ALERT_SOURCE: 'v1' } });
    rt = h.runtime();
    await h.database.db.execute(sql`
      INSERT INTO places (id, name, lat, lon) VALUES (${HANGZHOU}, '杭州', 30.27, 120.16)`);
    await h.addWebhookSubscriber('/desk', [HANGZHOU]);
  });
  afterAll(() => h?.close());
  beforeEach(() => h.sim.clearFaults());

  it('counts {} as a failed call, and tells an alert whose icon is an object', async () => {
    const { alert } = v1Alert({ area, id: 'V1ICON0001', typeCode: '1003', level: '红色' });
    h.sim.setAlerts([{ area, alert: { ...alert, icon: { code: '1003' }, urgency: {} } }]);
    expect((await cycle(rt)).events.new).toBe(1);
    h.sim.addFault({ kind: 'body', body: '{}', operation: 'weatherAlert' });
    for (let i = 0; i < 2; i += 1) {
      const s = await cycle(rt);
      expect(s.upstreamErrors).toBe(1);
      expect(s.events.expired).toBe(0);
    }
    expect(kinds(toldTo(h, '/desk'))).toEqual(['warning.new V1ICON0001']);
  });

  it('tells a late joiner the alert in force at its point, once', async () => {
    await h.addWebhookSubscriber('/late', [HANGZHOU]);
    await cycle(rt);
    await cycle(rt);
    expect(toldTo(h, '/late')).toEqual([
      { type: 'warning.new', id: 'V1ICON0001', supersedes: [], inForceWhenSubscribed: true },
    ]);
  });
});
