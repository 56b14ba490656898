import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { v7Warning } from '../../src/simulator/index.js';
import { v1IdOf } from '../../src/simulator/v7-in-v1.js';
import { startWorkerProcess, type WorkerProcess } from '../ops/worker-process.js';
import {
  startPipelineHarness,
  type PipelineHarness,
  notificationsOutsideTheirEventsCycle,
} from '../support/pipeline.js';

/**
 * QWEATHER_ALERT_SOURCE=auto (the default) over real HTTP against the simulator: warnings told
 * from v7, then QWeather retires v7 mid-storm. The deployment follows it to v1 at once, tells
 * nobody anything twice, and tells v1's later news as news of the warnings subscribers know.
 */
describe('the auto source across the retirement of v7', () => {
  let h: PipelineHarness;
  let worker: WorkerProcess | undefined;
  const PLACE = '101210101';
  // 杭州 (30.246, 120.2108) in the simulator's table: its v1 point is 30.25,120.21.
  const first = v7Warning({
    locationId: PLACE,
    seq: 1,
    typeCode: '1003',
    level: '黄色',
    pubTime: new Date(Date.now() - 30 * 60_000),
  });
  const other = v7Warning({
    locationId: PLACE,
    seq: 2,
    typeCode: '1006',
    level: '蓝色',
    pubTime: new Date(Date.now() - 20 * 60_000),
  });

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.database.db.execute(sql`
      INSERT INTO places (id, name, lat, lon, country) VALUES (${PLACE}, '杭州', 30.246, 120.2108, '中国')`);
    await h.addWebhookSubscriber('/duty', [PLACE]);
  });
  afterAll(async () => {
    await worker?.stop();
    await h?.close();
  });

  const bodies = () =>
    h.hooks.requestsTo('/duty').map(
      (r) =>
        r.json as {
          type: string;
          data: {
            warning: { id: string; related: string | null; v1Id?: string };
            supersedes: string[];
          };
        },
    );

  it('announces the warnings from v7 while v7 is served', async () => {
    h.sim.setWarnings(PLACE, [first, other]);
    const run = await h.pollOnce();
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ source: 'v7', events: { new: 2 } });
    await h.hooks.waitForRequests(2, { path: '/duty' });
    expect(bodies().map((b) => b.type)).toEqual(['warning.new', 'warning.new']);
  });

  it('never switches on an HTML 404, a 5xx or a JSON 404 that a good answer follows', async () => {
    for (const fault of [
      { kind: 'http', status: 404, body: '<html>Not Found</html>' },
      { kind: 'http', status: 502, body: '<html>Bad Gateway</html>' },
    ] as const) {
      h.sim.addFault({ ...fault, operation: 'warningList' });
      for (let i = 0; i < 3; i += 1) {
        const run = await h.pollOnce();
        expect(run.code).toBe(1);
        expect(run.summary).toMatchObject({ source: 'v7', upstreamErrors: 1 });
      }
      h.sim.clearFaults();
    }
    // Two cycles of JSON 404s, then a good answer: the streak is broken.
    h.sim.addFault({ kind: 'problem', status: 404, operation: 'warningList', times: 2 });
    for (let i = 0; i < 2; i += 1) expect((await h.pollOnce()).code).toBe(1);
    expect((await h.pollOnce()).code).toBe(0);
    h.sim.addFault({ kind: 'problem', status: 404, operation: 'warningList', times: 1 });
    expect((await h.pollOnce()).code).toBe(1);
    expect(await queryRows(h.database.db, sql`SELECT source FROM upstream_source`)).toEqual([]);
    // A good answer again: the streak starts over.
    expect((await h.pollOnce()).code).toBe(0);
    expect(await queryRows(h.database.db, sql`SELECT cycles FROM v7_retirement`)).toEqual([]);
    expect(bodies()).toHaveLength(2);
  }, 180_000); // ten `qwn poll --once` processes, four of them through the list call's retries

  it('switches to v1 in the third cycle in a row that finds v7 retired, announcing nothing', async () => {
    h.sim.clearFaults();
    h.sim.retireV7();
    for (let i = 0; i < 2; i += 1) {
      const early = await h.pollOnce();
      expect(early.code).toBe(1);
      expect(early.summary).toMatchObject({ source: 'v7', events: { expired: 0 } });
    }
    h.sim.resetRequests();
    const run = await h.pollOnce();
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({
      source: 'v1',
      events: { new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: 0, failed: 0, pending: 0 },
    });
    expect(h.sim.requests().byOperation.weatherAlert).toBe(1);
    const said = (text: string) => text.split('upstream source switched to v1').length - 1;
    expect(said(run.stdout + run.stderr)).toBe(1);
    const [row] = await queryRows<{ source: string; reason: string }>(
      h.database.db,
      sql`SELECT source, reason FROM upstream_source`,
    );
    expect(row).toMatchObject({
      source: 'v1',
      reason: expect.stringContaining('Deprecated') as unknown,
    });

    // The next cycle calls v1 only; still nothing to tell.
    h.sim.resetRequests();
    const next = await h.pollOnce();
    expect(next.summary).toMatchObject({ source: 'v1', events: { new: 0, expired: 0 } });
    expect(h.sim.requests().byOperation.warningList).toBe(0);
    expect(said(next.stdout + next.stderr)).toBe(0);
    expect(bodies()).toHaveLength(2);
  });

  it('tells a v1 update as the update of the warning the subscriber knows, naming both ids', async () => {
    const update = v7Warning({
      locationId: PLACE,
      seq: 3,
      typeCode: '1003',
      level: '橙色',
      status: 'update',
      related: first.id,
      pubTime: new Date(),
    });
    // v7 is retired; the simulator serves the update through v1, under its v1 ids.
    h.sim.setWarnings(PLACE, [first, other, update]);
    const run = await h.pollOnce();
    expect(run.summary).toMatchObject({
      source: 'v1',
      events: { new: 0, update: 1, cancel: 0, expired: 0, resumed: 0 },
    });
    await h.hooks.waitForRequests(3, { path: '/duty' });
    const told = bodies()[2]!;
    expect(told.type).toBe('warning.update');
    expect(told.data.warning.id).toBe(v1IdOf(update.id));
    expect(told.data.warning.related).toBe(first.id);
    expect(told.data.supersedes).toEqual([first.id, v1IdOf(first.id)]);
  });

  it('ends a continued warning as the warning the subscriber knows', async () => {
    // `other` is withdrawn: missing from two answers in a row, it ends under its v7 id.
    h.sim.setWarnings(
      PLACE,
      h.sim.state().warnings[PLACE]!.filter((w) => w.id !== other.id),
    );
    await h.pollOnce();
    const run = await h.pollOnce();
    expect(run.summary).toMatchObject({ source: 'v1', events: { new: 0, expired: 1 } });
    await h.hooks.waitForRequests(4, { path: '/duty' });
    const ended = bodies()[3]!;
    expect(ended.type).toBe('warning.expired');
    expect(ended.data.warning.id).toBe(other.id);
    expect(ended.data.warning.v1Id).toBe(v1IdOf(other.id));
  });

  it('a worker started afterwards polls v1 from its first cycle and says so in /metrics', async () => {
    h.sim.resetRequests();
    worker = await startWorkerProcess({
      ...h.env,
      HTTP_PORT: '0',
      LOG_LEVEL: 'info',
      POLL_INTERVAL_SECONDS: '1',
    });
    await worker.waitForLine((l) => l.msg === 'cycle planned' && l.source === 'v1', 30_000);
    const metrics = (await worker.get('/metrics')).text;
    expect(metrics).toContain('qwn_upstream_source{source="v1"} 1');
    expect(metrics).toContain('qwn_upstream_source{source="v7"} 0');
    expect(h.sim.requests().byOperation.warningList).toBe(0);
    expect(h.sim.requests().byOperation.weatherAlert).toBeGreaterThan(0);
  });

  it("wrote each notification with its event's cycle, by which a cycle's are found", async () => {
    expect(await notificationsOutsideTheirEventsCycle(h.database.db)).toEqual([]);
  });
});
