import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { UpstreamMonitor } from '../../src/ops/upstream.js';
import { runPoll } from '../../src/pipeline/poll.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * v7 mode against an upstream that retired the warning endpoints (403 problem+json
 * "Deprecated"): polling that endpoint stops, health reads the upstream as retired, and the log
 * says once what the operator must do.
 */
describe('v7 mode when QWeather answers 403 Deprecated', () => {
  let h: PipelineHarness;
  let runtime: Runtime;
  let monitor: UpstreamMonitor;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    // v7 pinned: under the default (auto) the deployment would follow QWeather to v1.
    h = await startPipelineHarness({ env: { QWEATHER_ALERT_SOURCE: 'v7' } });
    await h.addPlace('101210101', '杭州');
    await h.addEmailSubscriber('duty@example.com', ['101210101']);
    const logger = createLogger('info', {
      write(line: string) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    });
    ({ runtime, monitor } = h.monitoredRuntime(logger));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('stops calling the endpoint, reports it retired and tells the operator once', async () => {
    h.sim.addFault({ kind: 'deprecated', operation: 'warningList' });
    const first = await runPoll(runtime.ctx, { jobKey: 'retired-1' });
    expect(first.ok).toBe(false);
    expect(monitor.snapshot().state).toBe('retired');
    const loud = () => lines.filter((l) => Number(l.level) >= 40).length;
    const loudAfterFirst = loud();

    for (let i = 2; i <= 4; i += 1) {
      const next = await runPoll(runtime.ctx, { jobKey: `retired-${i}` });
      expect(next.ok).toBe(false);
    }
    // One real call; the following cycles are held back without touching the upstream.
    expect(h.sim.requests().byOperation.warningList).toBe(1);
    expect(monitor.snapshot().state).toBe('retired');

    const told = lines.filter(
      (l) => Number(l.level) >= 50 && String(l.msg).includes('QWEATHER_ALERT_SOURCE=v1'),
    );
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ operation: 'warningList' });
    // The held-back cycles add nothing at warn or above.
    expect(loud()).toBe(loudAfterFirst);
  });
});
