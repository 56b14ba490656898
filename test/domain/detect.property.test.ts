import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyDetectResult,
  detectChanges,
  sameJson,
  type DetectSettings,
  type FetchOutcome,
  type TrackedWarning,
} from '../../src/domain/detect.js';
import { impliedEnd, type Warning, type WarningStatus } from '../../src/domain/warning.js';
import { T0, warning } from './detect-fixtures.js';

// fast-check prints the seed and path of a failing run in the error; pass them back as
// `fc.assert(property, { seed, path })` to replay it.
const RUNS = 400;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const IDS = ['W0', 'W1', 'W2', 'W3', 'W4', 'W5', 'W6', 'W7'] as const;

interface RecordSpec {
  id: string;
  status: WarningStatus;
  related: string[];
  /** Hours after T0 the record ends; null = no end time (then start + 24 h applies). */
  endHours: number | null;
}

type Step =
  | { kind: 'fail'; advanceMs: number }
  | { kind: 'ok'; advanceMs: number; members: { index: number; pubMinutes: number }[] };

const recordArb: fc.Arbitrary<RecordSpec> = fc.record({
  id: fc.constantFrom(...IDS),
  status: fc.constantFrom<WarningStatus>('active', 'active', 'update', 'cancel'),
  related: fc.subarray([...IDS, 'GHOST'], { maxLength: 2 }),
  endHours: fc.option(fc.integer({ min: -2, max: 60 }), { nil: null }),
});

const poolArb = fc.uniqueArray(recordArb, {
  selector: (record) => record.id,
  minLength: 1,
  maxLength: IDS.length,
});

// Mostly the usual polling rhythm, sometimes a long gap that crosses end times and the window.
const advanceArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 30 }).map((m) => m * MINUTE_MS) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100 }).map((h) => h * HOUR_MS) },
);

function stepArb(poolSize: number): fc.Arbitrary<Step> {
  return fc.oneof(
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('fail' as const), advanceMs: advanceArb }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('ok' as const),
        advanceMs: advanceArb,
        // Indexes may repeat: the same id twice in one answer, with different publication times.
        members: fc.array(
          fc.record({
            index: fc.integer({ min: 0, max: poolSize - 1 }),
            pubMinutes: fc.integer({ min: 0, max: 3 }),
          }),
          { maxLength: poolSize + 2 },
        ),
      }),
    },
  );
}

const settingsArb: fc.Arbitrary<DetectSettings> = fc.record({
  expireAfterMisses: fc.integer({ min: 1, max: 4 }),
  expireAfterMs: fc.constantFrom(0, 15 * 60_000),
  reappearWindowMs: fc.oneof(
    fc.constant(72 * HOUR_MS),
    fc.integer({ min: 1, max: 80 }).map((h) => h * HOUR_MS),
  ),
});

const scenarioArb = fc.tuple(poolArb, settingsArb).chain(([pool, settings]) =>
  fc.record({
    pool: fc.constant(pool),
    settings: fc.constant(settings),
    steps: fc.array(stepArb(pool.length), { minLength: 1, maxLength: 30 }),
  }),
);

function toWarning(spec: RecordSpec, pubMinutes: number): Warning {
  const iso = (ms: number): string => new Date(ms).toISOString();
  return warning(spec.id, {
    status: spec.status,
    related: spec.related,
    pubTime: iso(T0.getTime() + pubMinutes * MINUTE_MS),
    startTime: iso(T0.getTime()),
    endTime: spec.endHours === null ? null : iso(T0.getTime() + spec.endHours * HOUR_MS),
    text: `${spec.id} as published at +${pubMinutes} min`,
  });
}

function answerOf(pool: RecordSpec[], step: Extract<Step, { kind: 'ok' }>): Warning[] {
  return step.members.flatMap(({ index, pubMinutes }) => {
    const spec = pool[index];
    return spec ? [toWarning(spec, pubMinutes)] : [];
  });
}

/** Ids an update or cancel in this answer replaces (never the record itself). */
function replacedIn(answer: readonly Warning[]): Set<string> {
  const ids = new Set<string>();
  for (const record of answer) {
    if (record.status === 'active') continue;
    for (const id of record.related) if (id !== record.id) ids.add(id);
  }
  return ids;
}

interface StepContext {
  before: readonly TrackedWarning[];
  after: readonly TrackedWarning[];
  result: ReturnType<typeof detectChanges>;
  answer: readonly Warning[] | null;
  now: Date;
  settings: DetectSettings;
  /** When each id was last in a successful answer, before this step. */
  lastPresent: ReadonlyMap<string, number>;
  /** Consecutive successful answers without each id, after this step. */
  misses: ReadonlyMap<string, number>;
}

/** Plays a scenario, handing each step to `check`. */
function play(
  scenario: { pool: RecordSpec[]; settings: DetectSettings; steps: Step[] },
  check: (context: StepContext) => void,
): void {
  let tracked: TrackedWarning[] = [];
  let now = T0.getTime();
  const lastPresent = new Map<string, number>();
  const misses = new Map<string, number>();
  for (const step of scenario.steps) {
    now += step.advanceMs;
    const answer = step.kind === 'ok' ? answerOf(scenario.pool, step) : null;
    const fetch: FetchOutcome = answer ? { ok: true, warnings: answer } : { ok: false };
    const result = detectChanges({
      tracked,
      fetch,
      now: new Date(now),
      settings: scenario.settings,
    });
    const after = applyDetectResult(tracked, result, new Date(now), scenario.settings);
    const presentBefore = new Map(lastPresent);
    if (answer) {
      const present = new Set(answer.map((record) => record.id));
      for (const id of new Set([...misses.keys(), ...present])) {
        misses.set(id, present.has(id) ? 0 : (misses.get(id) ?? 0) + 1);
      }
      for (const id of present) lastPresent.set(id, now);
    }
    check({
      before: tracked,
      after,
      result,
      answer,
      now: new Date(now),
      settings: scenario.settings,
      lastPresent: presentBefore,
      misses,
    });
    tracked = after;
  }
}

function byId(tracked: readonly TrackedWarning[]): Map<string, TrackedWarning> {
  return new Map(tracked.map((entry) => [entry.id, entry]));
}

describe('detectChanges over random sequences of answers and failures', () => {
  it('never announces an id as new twice within the reappear window', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ result, now, lastPresent, settings }) => {
          for (const event of result.events.filter((e) => e.type === 'new')) {
            const previous = lastPresent.get(event.warningId);
            if (previous !== undefined) {
              expect(now.getTime() - previous).toBeGreaterThan(settings.reappearWindowMs);
            }
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('produces no events, changes or refreshes on a failed fetch', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ answer, result }) => {
          if (answer === null) expect(result).toEqual({ events: [], changes: [], seen: [] });
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('expires only warnings that were open, missing, and not replaced in this answer', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ before, answer, result }) => {
          const previous = byId(before);
          const present = new Set((answer ?? []).map((record) => record.id));
          const replaced = replacedIn(answer ?? []);
          for (const event of result.events.filter((e) => e.type === 'expired')) {
            expect(previous.get(event.warningId)?.state).toBe('open');
            expect(present.has(event.warningId)).toBe(false);
            expect(replaced.has(event.warningId)).toBe(false);
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('announces each record by its own status: a cancel is never new', () => {
    const expectedStatus = { new: 'active', update: 'update', cancel: 'cancel' } as const;
    const told = (type: string): type is keyof typeof expectedStatus => type in expectedStatus;
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ result }) => {
          for (const event of result.events) {
            if (told(event.type)) {
              expect(event.warning.status).toBe(expectedStatus[event.type]);
            }
          }
          const keys = result.events.map(
            (event) => `${event.type}:${event.warningId}:${event.occurrence}`,
          );
          expect(new Set(keys).size).toBe(keys.length);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('closes every open warning once it has missed enough answers over enough time', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ answer, after, misses, settings, lastPresent, now }) => {
          // A failed call is no evidence: what it leaves open waits for the next answer.
          if (answer === null) return;
          for (const entry of after.filter((e) => e.state === 'open')) {
            const missed = misses.get(entry.id) ?? 0;
            const since = now.getTime() - (lastPresent.get(entry.id) ?? now.getTime());
            // Every step here is a later cycle, so each answer without it is one more miss.
            expect(entry.misses).toBe(missed);
            expect(missed < settings.expireAfterMisses || since < settings.expireAfterMs).toBe(
              true,
            );
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('ends nothing without enough misses in distinct, later cycles over EXPIRE_AFTER_SECONDS', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ before, result, now, settings, lastPresent, misses }) => {
          const previous = byId(before);
          for (const event of result.events.filter((e) => e.type === 'expired')) {
            const entry = previous.get(event.warningId)!;
            const since = now.getTime() - (lastPresent.get(entry.id) ?? entry.lastSeen.getTime());
            const byEndTime = (impliedEnd(entry.warning)?.getTime() ?? Infinity) <= now.getTime();
            const byMisses =
              (misses.get(entry.id) ?? 0) >= settings.expireAfterMisses &&
              since >= settings.expireAfterMs;
            expect(byEndTime || byMisses).toBe(true);
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps every id of a successful answer tracked, open or closed by a link', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ answer, after, now }) => {
          if (answer === null) return;
          const tracked = byId(after);
          for (const record of answer) {
            const entry = tracked.get(record.id);
            expect(['open', 'superseded', 'cancelled']).toContain(entry?.state);
            expect(entry?.lastSeen).toEqual(now);
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('is idempotent: the same answer again announces nothing new and changes nothing in it', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ answer, after, now, settings }) => {
          if (answer === null) return;
          const again = detectChanges({
            tracked: after,
            fetch: { ok: true, warnings: answer },
            now,
            settings,
          });
          const present = new Set(answer.map((record) => record.id));
          // A second successful answer without a warning is, by definition, one more miss: the
          // only events it may bring are endings of warnings absent from it.
          for (const event of again.events) {
            expect(event.type).toBe('expired');
            expect(present.has(event.warningId)).toBe(false);
          }
          expect(again.changes.filter((change) => present.has(change.id))).toEqual([]);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('does not take a stored record read back with its keys reordered (jsonb) as a change', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ answer, after, now, settings }) => {
          if (answer === null) return;
          const stored = after.map((t) => ({ ...t, warning: reordered(t.warning) as Warning }));
          const again = detectChanges({
            tracked: stored,
            fetch: { ok: true, warnings: answer },
            now,
            settings,
          });
          const present = new Set(answer.map((record) => record.id));
          expect(again.changes.filter((change) => present.has(change.id))).toEqual([]);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('never lets a superseded or cancelled warning expire later', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ before, result }) => {
          const previous = byId(before);
          for (const event of result.events.filter((e) => e.type === 'expired')) {
            expect(['superseded', 'cancelled']).not.toContain(previous.get(event.warningId)?.state);
          }
        });
      }),
      { numRuns: RUNS },
    );
  });
});

/** The same JSON value with every object's keys in reverse order, as a jsonb column may return. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reordered(v)]),
  );
}

/** JSON text with object keys sorted: equal exactly when the values are. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

describe('sameJson', () => {
  it('is equality of JSON values whatever the order of their keys', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(sameJson(a, reordered(a))).toBe(true);
        expect(sameJson(a, b)).toBe(canonical(a) === canonical(b));
      }),
      { numRuns: RUNS },
    );
  });

  it('tells a changed nested value, a missing key and an array order apart', () => {
    expect(sameJson({ a: { b: [1, 2] } }, { a: { b: [1, 2] } })).toBe(true);
    expect(sameJson({ a: { b: [1, 2] } }, { a: { b: [2, 1] } })).toBe(false);
    expect(sameJson({ a: 1, b: null }, { a: 1 })).toBe(false);
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson([], {})).toBe(false);
  });
});

describe('README, promises: ends only on evidence, and a warning back in force is told', () => {
  it('tells a warning back after its told end as resumed, once per reappearance', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        play(scenario, ({ before, answer, result, now, settings }) => {
          const previous = byId(before);
          const resumed = result.events.filter((e) => e.type === 'resumed');
          for (const event of resumed) {
            const entry = previous.get(event.warningId);
            expect(entry?.state).toBe('expired');
            expect(event.occurrence).toBe(entry!.occurrence + 1);
          }
          expect(new Set(resumed.map((e) => e.warningId)).size).toBe(resumed.length);
          if (answer === null) return;
          for (const record of answer) {
            const entry = previous.get(record.id);
            const back =
              entry?.state === 'expired' &&
              record.status !== 'cancel' &&
              now.getTime() - entry.lastSeen.getTime() <= settings.reappearWindowMs;
            expect(resumed.some((e) => e.warningId === record.id)).toBe(back);
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('counts no miss from a cycle that began before the last sighting or the last miss', () => {
    fc.assert(
      fc.property(
        scenarioArb,
        fc.integer({ min: 0, max: 60 * MINUTE_MS }),
        (scenario, earlierBy) => {
          play(scenario, ({ after, now, settings }) => {
            for (const entry of after.filter((e) => e.state === 'open')) {
              const latest = Math.max(entry.lastSeen.getTime(), entry.lastMissAt?.getTime() ?? 0);
              const stale = detectChanges({
                tracked: after,
                fetch: { ok: true, warnings: [] },
                now: new Date(now.getTime() + MINUTE_MS),
                cycleStartedAt: new Date(latest - earlierBy),
                settings,
              });
              const change = stale.changes.find((c) => c.id === entry.id);
              if (impliedEnd(entry.warning)!.getTime() > now.getTime() + MINUTE_MS) {
                expect(change).toBeUndefined();
              }
              expect(
                stale.events.filter((e) => e.type === 'expired' && e.warningId === entry.id),
              ).toHaveLength(change?.state === 'expired' ? 1 : 0);
            }
          });
        },
      ),
      { numRuns: RUNS / 4 },
    );
  });

  it('ends nothing with an answer that skipped a record, and tells its other warnings', () => {
    fc.assert(
      fc.property(scenarioArb, fc.integer({ min: 1, max: 3 }), (scenario, skipped) => {
        play(scenario, ({ after, answer, now, settings }) => {
          if (answer === null) return;
          const later = new Date(now.getTime() + 30 * HOUR_MS);
          const fresh = warning('FRESH', { pubTime: later.toISOString() });
          const result = detectChanges({
            tracked: after,
            fetch: { ok: true, warnings: [fresh], skipped },
            now: later,
            settings,
          });
          expect(result.events.map((e) => `${e.type}:${e.warningId}`)).toEqual(['new:FRESH']);
          for (const change of result.changes.filter((c) => c.id !== 'FRESH')) {
            expect(change).toEqual(after.find((t) => t.id === change.id));
          }
        });
      }),
      { numRuns: RUNS / 4 },
    );
  });
});
