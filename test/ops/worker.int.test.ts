import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/ops/health.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startWorkerProcess, waitUntil, type WorkerProcess } from './worker-process.js';

const HANGZHOU = '101210101';

/** The value of one series in Prometheus text, matched on the given labels. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = new Map(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]] as const),
    );
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v)) return Number(match[3]);
  }
  return null;
}

const workerEnv = (h: PipelineHarness, extra: Record<string, string> = {}) => ({
  ...h.env,
  HTTP_PORT: '0',
  LOG_LEVEL: 'info',
  POLL_INTERVAL_SECONDS: '1',
  ...extra,
});

async function health(worker: WorkerProcess): Promise<{ status: number; body: HealthReport }> {
  const res = await worker.get('/healthz');
  return { status: res.status, body: JSON.parse(res.text) as HealthReport };
}

/** A describe block's pipeline harness, and the worker process one of its tests started. */
interface WorkerPerTest {
  h: PipelineHarness;
  worker: WorkerProcess | undefined;
}

/**
 * The harness made before the block's tests, and each test's worker stopped after it (then
 * `afterEachTest`, with the harness).
 */
function workerPerTest(afterEachTest: (h: PipelineHarness) => void = () => {}): WorkerPerTest {
  const s: Partial<WorkerPerTest> = {};
  beforeAll(async () => {
    s.h = await startPipelineHarness();
  });
  afterEach(async () => {
    if (s.worker) await s.worker.stop('SIGTERM');
    s.worker = undefined;
    if (s.h) afterEachTest(s.h);
  });
  afterAll(async () => {
    s.worker?.kill();
    await s.h?.close();
  });
  return s as WorkerPerTest;
}

describe('qwn worker: health, metrics and shutdown on a working upstream', () => {
  let h: PipelineHarness;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addEmailSubscriber('duty@example.com', [HANGZHOU]);
    await h.addWebhookSubscriber('/dispatch', [HANGZHOU]);
    h.sim.setWarnings(HANGZHOU, [
      v7Warning({ locationId: HANGZHOU, seq: 1, typeCode: '1003', level: '橙色' }),
    ]);
  });
  afterAll(async () => {
    worker?.kill();
    await h?.close();
  });

  it('reports healthy after a cycle and counts what happened', async () => {
    worker = await startWorkerProcess(workerEnv(h));

    const healthy = await waitUntil('a healthy worker with a finished cycle', async () => {
      const r = await health(worker!);
      return r.body.status === 'ok' && r.body.checks.lastCycle.finishedAt ? r : null;
    });
    expect(healthy.status).toBe(200);
    expect(healthy.body.checks).toMatchObject({
      postgres: { status: 'ok' },
      redis: { status: 'ok' },
      lastCycle: { status: 'ok', latest: expect.any(String) as unknown },
      upstream: { status: 'ok', state: 'ok', reason: null },
    });
    expect(healthy.body.checks.lastCycle.ageSeconds).toBeGreaterThanOrEqual(0);
    expect(healthy.body.checks.lastCycle.ageSeconds).toBeLessThan(30);

    await waitUntil('both deliveries sent', async () => {
      const rows = await h.deliveries();
      return rows.length === 2 && rows.every((r) => r.status === 'sent');
    });

    const text = await waitUntil('metrics with both deliveries counted', async () => {
      const res = await worker!.get('/metrics');
      const sent = (channel: string) =>
        metric(res.text, 'qwn_deliveries_total', { channel, outcome: 'sent' });
      return sent('email') === 1 && sent('webhook') === 1 ? res.text : null;
    });
    expect(metric(text, 'qwn_events_total', { type: 'new' })).toBe(1);
    expect(metric(text, 'qwn_events_total', { type: 'cancel' })).toBe(0);
    expect(metric(text, 'qwn_deliveries_total', { channel: 'email', outcome: 'dead' })).toBe(0);
    expect(metric(text, 'qwn_cycles_total', { status: 'done' })).toBeGreaterThanOrEqual(1);
    expect(
      metric(text, 'qwn_cycle_duration_seconds_count', { status: 'done' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metric(text, 'qwn_upstream_calls_total', { operation: 'warningList', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
    // The warning is checked once, when it appears; later cycles see nothing new.
    expect(
      metric(text, 'qwn_upstream_calls_total', { operation: 'warningNow', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
    for (const queue of ['poll', 'check', 'deliver-webhook', 'deliver-email', 'sweep']) {
      expect(metric(text, 'qwn_queue_jobs', { queue, state: 'waiting' })).toBeGreaterThanOrEqual(0);
      expect(metric(text, 'qwn_queue_oldest_waiting_seconds', { queue })).toBeGreaterThanOrEqual(0);
    }
    // The email, grouped by cycle, goes in a job of its channel's queue when its cycle is
    // released. The webhook's first attempt leaves from the process that checked the place
    // (src/pipeline/first-attempts.ts), with no job; its send is counted all the same (above).
    expect(metric(text, 'qwn_queue_jobs', { queue: 'deliver-email', state: 'completed' })).toBe(1);
    expect(metric(text, 'qwn_queue_jobs', { queue: 'deliver-webhook', state: 'completed' })).toBe(
      0,
    );
    expect(metric(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(metric(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('answers 404 elsewhere', async () => {
    expect((await worker!.get('/nope')).status).toBe(404);
  });

  it('stops cleanly on SIGTERM, well within the grace period', async () => {
    const { code, ms } = await worker!.stop('SIGTERM');
    expect(code).toBe(0);
    expect(ms).toBeLessThan(25_000);
    expect(worker!.lines.some((l) => l.msg === 'worker stopping' && l.signal === 'SIGTERM')).toBe(
      true,
    );
    expect(worker!.lines.at(-1)).toMatchObject({ msg: 'worker stopped', level: 30 });
    // Every line is structured.
    expect(worker!.lines.filter((l) => 'unparsed' in l)).toEqual([]);
  });
});

describe('qwn worker when the upstream refuses it', () => {
  const s = workerPerTest((h) => {
    h.sim.clearFaults();
    h.sim.resetRequests();
  });

  it('reports a refused key as unhealthy and does not call the list again', async () => {
    s.h.sim.addFault({ kind: 'code', code: '401', operation: 'warningList' });
    s.worker = await startWorkerProcess(workerEnv(s.h));

    const unhealthy = await waitUntil('an unhealthy worker', async () => {
      const r = await health(s.worker!);
      return r.status === 503 ? r : null;
    });
    expect(unhealthy.body.status).toBe('unhealthy');
    expect(unhealthy.body.checks.upstream).toMatchObject({
      status: 'unhealthy',
      state: 'auth_failed',
      reason: expect.stringContaining('QWEATHER_API_KEY') as unknown,
    });
    expect(unhealthy.body.checks.upstream.retryAt).not.toBeNull();
    expect(unhealthy.body.checks.postgres.status).toBe('ok');

    // Several poll periods (1 s each) later, the refused call went out exactly once: the
    // other cycles were held back without calling.
    const heldBack = (text: string) =>
      metric(text, 'qwn_upstream_calls_total', { operation: 'warningList', outcome: 'held_back' });
    await waitUntil('three held-back cycles', async () => {
      return (heldBack((await s.worker!.get('/metrics')).text) ?? 0) >= 3;
    });
    await new Promise((r) => setTimeout(r, 2000));
    expect(s.h.sim.requests().byOperation.warningList).toBe(1);

    const text = (await s.worker.get('/metrics')).text;
    expect(
      metric(text, 'qwn_upstream_calls_total', { operation: 'warningList', outcome: 'auth_error' }),
    ).toBe(1);
    expect(heldBack(text)).toBeGreaterThanOrEqual(3);
    expect(metric(text, 'qwn_cycles_total', { status: 'failed' })).toBeGreaterThanOrEqual(2);
  });

  it('reports a retired endpoint as unhealthy with the v1 hint (v7 pinned)', async () => {
    s.h.sim.addFault({ kind: 'deprecated', operation: 'warningList' });
    // Under the default (auto) the worker would follow QWeather to v1 instead.
    s.worker = await startWorkerProcess(workerEnv(s.h, { QWEATHER_ALERT_SOURCE: 'v7' }));

    const unhealthy = await waitUntil('an unhealthy worker', async () => {
      const r = await health(s.worker!);
      return r.status === 503 ? r : null;
    });
    expect(unhealthy.body.checks.upstream).toMatchObject({
      status: 'unhealthy',
      state: 'retired',
      reason: expect.stringContaining('QWEATHER_ALERT_SOURCE=v1') as unknown,
    });
    await new Promise((r) => setTimeout(r, 3000));
    expect(s.h.sim.requests().byOperation.warningList).toBe(1);
  });
});

describe('qwn worker: a heap too small for a storm', () => {
  const WARNING = 'heap too small for a national storm: give the worker 1 GiB';
  const s = workerPerTest();

  it('warns once at start when its heap is capped below what a storm needs', async () => {
    s.worker = await startWorkerProcess(
      workerEnv(s.h, { NODE_OPTIONS: '--max-old-space-size=200' }),
    );
    await s.worker.waitForLine((l) => l.msg === 'worker started');
    const warnings = s.worker.lines.filter((l) => l.msg === WARNING);
    expect(warnings).toEqual([expect.objectContaining({ level: 40, advisedHeapMib: 480 })]);
    expect(Number(warnings[0]!.heapLimitMib)).toBeLessThan(480);
  });

  it('says nothing with a heap of 1 GiB', async () => {
    s.worker = await startWorkerProcess(
      workerEnv(s.h, { NODE_OPTIONS: '--max-old-space-size=1024' }),
    );
    await s.worker.waitForLine((l) => l.msg === 'worker started');
    expect(s.worker.lines.filter((l) => l.msg === WARNING)).toEqual([]);
  });
});
