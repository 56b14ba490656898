import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import type { UpstreamMonitor } from '../../src/ops/upstream.js';
import { runCheck } from '../../src/pipeline/check.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * Checks already queued when QWeather refuses the key (HTTP 200 with code "401") do not each
 * repeat the refusal: the first one opens the circuit and the rest are held back without a call
 * (notes/qweather-facts.md: a refused key asked again and again risks the account).
 */
describe('v7 checks behind the upstream circuit', () => {
  let h: PipelineHarness;
  let runtime: Runtime;
  let monitor: UpstreamMonitor;
  const PLACES = ['101280101', '101280601', '101280800', '101281701'];

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { QWEATHER_ALERT_SOURCE: 'v7' } });
    for (const place of PLACES) await h.addPlace(place, place);
    ({ runtime, monitor } = h.monitoredRuntime());
  });
  afterAll(async () => {
    await h?.close();
  });

  it('calls the upstream once after a refusal and holds the queued checks back', async () => {
    const [cycle] = await queryRows<{ id: string }>(
      h.database.db,
      sql`INSERT INTO poll_cycles (planned) VALUES (${PLACES.length}) RETURNING id`,
    );
    h.sim.addFault({ kind: 'code', code: '401', operation: 'warningNow' });
    const before = h.sim.requests().byOperation.warningNow ?? 0;

    for (const placeId of PLACES) {
      const outcome = await runCheck(runtime.ctx, { cycleId: cycle!.id, placeId });
      expect(outcome.fetchOk).toBe(false);
    }

    expect((h.sim.requests().byOperation.warningNow ?? 0) - before).toBe(1);
    expect(monitor.snapshot().state).toBe('auth_failed');
  });
});
