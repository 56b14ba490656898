import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CYCLE_WAIT_LIMIT_MS,
  JOIN_MARGIN_MS,
  quietWindowAt,
  type DeliveryPrefs,
  type GroupMode,
  type QuietHours,
} from '../../src/domain/schedule.js';
import {
  simulate,
  type Simulation,
  type SimulatedNotification,
} from '../../src/domain/schedule-simulation.js';
import { LEVELS, type Level } from '../../src/domain/warning.js';

// fast-check prints the seed and path of a failing run; replay with fc.assert(p, { seed, path }).
const RUNS = 300;
const HOUR_MS = 3_600_000;

// New York changes its clocks on 2026-03-08 and 2026-11-01; the streams start around those nights.
const ZONES = ['Asia/Shanghai', 'America/New_York', 'Europe/London', 'Asia/Kolkata', 'UTC'];
const STARTS = ['2026-03-07T20:00:00Z', '2026-10-31T20:00:00Z', '2026-07-01T10:00:00Z'];

const hhmm = fc
  .tuple(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 15, 30, 59))
  .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);

const quietArb: fc.Arbitrary<QuietHours | null> = fc.option(
  fc
    .record({
      from: hhmm,
      to: hhmm,
      bypassLevel: fc.option(fc.constantFrom<Level>(...LEVELS), { nil: null }),
    })
    .filter((q) => q.from !== q.to),
  { nil: null },
);

const groupArb: fc.Arbitrary<GroupMode> = fc.oneof(
  fc.constant({ kind: 'none' } as const),
  fc.constant({ kind: 'cycle' } as const),
  fc.integer({ min: 1, max: 3600 }).map((seconds) => ({ kind: 'window', seconds }) as const),
);

const prefsArb: fc.Arbitrary<DeliveryPrefs> = fc.record({
  group: groupArb,
  timezone: fc.constantFrom(...ZONES),
  quietHours: quietArb,
  maxPerHour: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null }),
});

/** Bursts within a cycle, cycles minutes apart, and quiet stretches of hours. */
const gapArb = fc.oneof(
  fc.integer({ min: 0, max: 3_000 }),
  fc.integer({ min: 0, max: 180_000 }),
  fc.integer({ min: 0, max: 3 * HOUR_MS }),
);

const streamArb: fc.Arbitrary<SimulatedNotification[]> = fc
  .tuple(
    fc.constantFrom(...STARTS),
    fc.array(
      fc.record({
        gap: gapArb,
        level: fc.constantFrom<Level>(...LEVELS, 'unknown'),
        chain: fc.integer({ min: 0, max: 5 }),
        newCycle: fc.boolean(),
      }),
      { minLength: 1, maxLength: 40 },
    ),
  )
  .map(([start, steps]) => {
    let t = Date.parse(start);
    let cycle = 0;
    return steps.map((step, i) => {
      t += step.gap;
      // A new cycle at least every two minutes: a cycle's checks are done long before the next.
      if (step.newCycle || step.gap > 120_000) cycle++;
      return {
        id: `n${i}`,
        at: new Date(t),
        level: step.level,
        chainId: `chain${step.chain}`,
        cycleId: `c${cycle}`,
      };
    });
  });

const scenarioArb = fc.record({ prefs: prefsArb, stream: streamArb });

function messageOf(sim: Simulation, id: string) {
  const placement = sim.placements.get(id);
  const message = sim.messages.find((m) => m.id === placement?.messageId);
  if (!placement || !message) throw new Error(`notification ${id} was not placed`);
  return { message, urgent: placement.urgent };
}

/** Adding a send at t would put more than max messages into some sliding hour. */
function wouldExceed(sends: readonly number[], t: number, max: number): boolean {
  const all = [...sends, t].sort((a, b) => a - b);
  return all.some((s, i) => i + max < all.length && all[i + max]! - s < HOUR_MS);
}

describe('placeNotification folded over time (simulate)', () => {
  it('places every notification in exactly one message and drops nothing', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const sim = simulate(stream, prefs);
        const carried = sim.messages.flatMap((m) => m.notificationIds).sort();
        expect(carried).toEqual(stream.map((n) => n.id).sort());
        expect(sim.messages.every((m) => m.notificationIds.length > 0)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('never sends a message before a notification it carries, nor one it joined too late', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const sim = simulate(stream, prefs);
        for (const n of stream) {
          const { message } = messageOf(sim, n.id);
          expect(message.sendAt.getTime()).toBeGreaterThanOrEqual(n.at.getTime());
          if (message.notificationIds[0] !== n.id) {
            expect(message.sendAt.getTime() - n.at.getTime()).toBeGreaterThanOrEqual(
              JOIN_MARGIN_MS,
            );
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('sends nothing that is not urgent inside its quiet window', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const sim = simulate(stream, prefs);
        const quiet = prefs.quietHours;
        if (!quiet) return;
        for (const n of stream) {
          const { message, urgent } = messageOf(sim, n.id);
          if (!urgent) expect(quietWindowAt(message.sendAt, prefs.timezone, quiet)).toBeNull();
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("sends a held notification at its window's end, later only when the hour is full then", () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const sim = simulate(stream, prefs);
        const quiet = prefs.quietHours;
        if (!quiet) return;
        for (const n of stream) {
          const { message, urgent } = messageOf(sim, n.id);
          const window = quietWindowAt(n.at, prefs.timezone, quiet);
          if (urgent || !window) continue;
          const end = window.end.getTime();
          expect(message.sendAt.getTime()).toBeGreaterThanOrEqual(end);
          if (message.sendAt.getTime() > end) {
            expect(prefs.maxPerHour).not.toBeNull();
            // Every other message, and the one it joined if it did not open it: the limit was
            // full at the window's end, so it went with the next message allowed.
            const others = sim.messages
              .filter((m) => m !== message || m.notificationIds[0] !== n.id)
              .map((m) => m.sendAt.getTime());
            expect(wouldExceed(others, end, prefs.maxPerHour!)).toBe(true);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps maxPerHour in every sliding hour', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const max = prefs.maxPerHour;
        if (max === null) return;
        const sends = simulate(stream, prefs)
          .messages.map((m) => m.sendAt.getTime())
          .sort((a, b) => a - b);
        for (let i = 0; i + max < sends.length; i++) {
          expect(sends[i + max]! - sends[i]!).toBeGreaterThanOrEqual(HOUR_MS);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('never lets a cycle message wait more than 60 s after its first notification', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        for (const m of simulate(stream, prefs).messages.filter((x) => x.hold === 'cycle')) {
          expect(m.sendAt.getTime() - m.createdAt.getTime()).toBeLessThanOrEqual(
            CYCLE_WAIT_LIMIT_MS,
          );
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps a chain urgent once it was, and never holds an urgent one for quiet hours', () => {
    fc.assert(
      fc.property(scenarioArb, ({ prefs, stream }) => {
        const sim = simulate(stream, prefs);
        const urgentChains = new Set<string>();
        for (const n of [...stream].sort((a, b) => a.at.getTime() - b.at.getTime())) {
          const { message, urgent } = messageOf(sim, n.id);
          if (urgentChains.has(n.chainId)) expect(urgent).toBe(true);
          if (!urgent) continue;
          urgentChains.add(n.chainId);
          expect(message.hold).not.toBe('quiet');
          if (prefs.maxPerHour === null) {
            // Only grouping may delay it: the quiet hours do not.
            const group = prefs.group;
            const wait =
              group.kind === 'window'
                ? group.seconds * 1000
                : group.kind === 'cycle'
                  ? CYCLE_WAIT_LIMIT_MS
                  : 0;
            expect(message.sendAt.getTime() - n.at.getTime()).toBeLessThanOrEqual(wait);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('without quiet hours or a limit, groups exactly as the mode says', () => {
    fc.assert(
      fc.property(prefsArb, streamArb, (someHow, stream) => {
        const prefs = { ...someHow, quietHours: null, maxPerHour: null };
        const sim = simulate(stream, prefs);
        for (const m of sim.messages) {
          const delay = m.sendAt.getTime() - m.createdAt.getTime();
          if (prefs.group.kind === 'none') {
            expect(m.notificationIds).toHaveLength(1);
            expect(delay).toBe(0);
          } else if (prefs.group.kind === 'window') {
            expect(delay).toBe(prefs.group.seconds * 1000);
          } else {
            expect(delay).toBe(CYCLE_WAIT_LIMIT_MS);
            const cycles = new Set(
              m.notificationIds.map((id) => stream.find((n) => n.id === id)!.cycleId),
            );
            expect(cycles.size).toBe(1);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});
