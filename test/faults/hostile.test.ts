import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { pointAt } from '../../src/domain/points.js';
import type { Fault } from '../../src/simulator/index.js';
import { expectNothingLostOrSplit } from './support/expect.js';
import { report, startFaultRun, type FaultRun } from './support/harness.js';
import { createRng } from './support/storm.js';

/**
 * A hostile upstream during a storm, with a worker killed with SIGKILL again and again
 * (README, promises): answers without their array, poisoned records beside the real ones, a body
 * that drips in, a list answer without its list, and a place whose warnings blink out for a few
 * cycles. What the storm owes must arrive exactly once, and nothing may end: every warning of a
 * storm stays in force, so any `expired` or `cancel` is a false all-clear.
 */

const STORM = { places: 12, emailSubscribers: 10, webhookSubscribers: 6, extraPhases: 2 } as const;

/** Records that can be neither read nor repaired: skipped, counted, and no miss at their place. */
const POISON = [
  `{"id":"POISON-DEEP","x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  '{"id":{"not":"a string"},"title":"an id of the wrong shape"}',
];
/** A field the product needs, of another shape: v7's status, v1's message type. */
const POISON_V7 = '{"id":"POISON-STATUS","title":"t","status":{"code":"active"}}';
const POISON_V1 = '{"id":"POISON-TYPE","messageType":{"code":{"alert":true}}}';

describe('a hostile upstream during a storm', () => {
  let run: FaultRun | undefined;
  afterEach(async () => {
    await run?.close();
    run = undefined;
  });

  for (const { source, seed } of [
    { source: undefined, seed: 7311 },
    { source: 'v1', seed: 7312 },
  ] as const) {
    const label = source ? `${source}: ` : '';
    it(`${label}malformed answers, poison, drip and flap under kill -9: 0 lost, 0 false ends, once each`, async () => {
      const rng = createRng(seed);
      run = await startFaultRun(seed, {
        ...STORM,
        ...(source ? { source } : {}),
        env: {
          // One-second cycles: a warning missing from the answers of eight seconds of them
          // would be over, one missing for three (the flap) not yet.
          EXPIRE_AFTER_SECONDS: '8',
          QWEATHER_TIMEOUT_MS: '800',
        },
      });
      const r = run;
      const check = source === 'v1' ? 'weatherAlert' : 'warningNow';
      const keyOf = (place: { id: string; lat: number; lon: number }) =>
        source === 'v1' ? pointAt(place.lat, place.lon)!.key : place.id;
      const [a, b, c, d, e, f] = rng.sample(r.plan.places, 6).map((p) => ({ ...p, key: keyOf(p) }));
      const list = source === 'v1' ? 'weatherAlert' : 'warningList';
      const poisonOnly = `{"code":"200","warning":[${POISON[0]}],"alerts":[${POISON[0]}],"metadata":{"zeroResult":false}}`;
      // From the start: the place's real warnings must be told beside the poison, a body that
      // drips in must not hold the cycle, and a list without its list must fail the cycle.
      const early: Fault[] = [
        {
          kind: 'extraRecords',
          records: [...POISON, source === 'v1' ? POISON_V1 : POISON_V7],
          operation: check,
          location: c!.key,
        },
        { kind: 'drip', intervalMs: 250, operation: check, location: d!.key, times: 4 },
        ...(source === 'v1'
          ? []
          : [{ kind: 'body', body: '{"code":"200"}', operation: list, times: 2 } as const]),
      ];
      // Once the warnings are known: answers that, read as "nothing there", would end them.
      const later: Fault[] = [
        { kind: 'body', body: '{}', operation: check, location: a!.key, times: 15 },
        { kind: 'body', body: '{"code":"200"}', operation: check, location: b!.key, times: 15 },
        { kind: 'body', body: poisonOnly, operation: check, location: f!.key, times: 15 },
      ];
      for (const fault of early) r.h.sim.addFault(fault);

      r.showPhase(0);
      r.startWorker();
      let victim = r.startWorker();
      let kills = 0;
      const phases = (async () => {
        for (let phase = 0; phase < r.plan.phases.length; phase += 1) {
          if (phase > 0) r.showPhase(phase);
          await r.waitForPhase(phase, 120_000);
          if (phase === 0) {
            for (const fault of later) r.h.sim.addFault(fault);
            // Flap: place e shows nothing for three cycles, then its warnings again.
            r.h.sim.setWarnings(e!.id, []);
            await sleep(3_000);
            r.showPhase(0);
            // Past EXPIRE_AFTER_SECONDS: misses read from the later faults would end warnings.
            await sleep(10_000);
          }
        }
      })();
      for (let i = 0; i < 8; i += 1) {
        await sleep(rng.int(200, 1200));
        await victim.kill9();
        kills += 1;
        victim = r.startWorker();
      }
      await phases;
      // More cycles with the poison still served beside the last phase's warnings.
      await sleep(3_000);
      await r.settle({ timeoutMs: 120_000 });
      const outcome = await r.outcome();
      report(`${label}hostile upstream under kill -9`, outcome, {
        kills,
        faults: [...early, ...later].map((fault) => fault.kind).join(', '),
      });
      expectNothingLostOrSplit(outcome);
      expect(outcome.events.resumed ?? 0).toBe(0);
    });
  }
});
