import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyDetectResult, detectChanges, type TrackedWarning } from '../../src/domain/detect.js';
import {
  continueHandedOver,
  continues,
  HANDOVER_TIME_TOLERANCE_MS,
} from '../../src/domain/handover.js';
import { LEVELS, type Warning } from '../../src/domain/warning.js';
import { T0, warning } from './detect-fixtures.js';

// fast-check prints the seed and path of a failing run in the error; pass them back as
// `fc.assert(property, { seed, path })` to replay it.
const RUNS = 300;
const MINUTE_MS = 60_000;
const TYPES = ['1001', '1003', '1006', '1009'] as const;
const COLORS: Record<string, string> = {
  白色: 'white',
  蓝色: 'blue',
  黄色: 'yellow',
  橙色: 'orange',
  红色: 'red',
};
const SENDERS = ['杭州市气象台', '浙江省气象台'] as const;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface OpenSpec {
  type: (typeof TYPES)[number];
  level: (typeof LEVELS)[number];
  sender: (typeof SENDERS)[number] | null;
  /** Minutes before T0 the v7 warning was issued. */
  ageMinutes: number;
  /** Its v1 counterpart, when QWeather serves one: how far its issue time is off, and whether it names its sender. */
  counterpart: { jitterMinutes: number; withSender: boolean } | null;
}

/** Open v7 warnings at one place: one type may appear at several levels, never twice at one. */
const openArb: fc.Arbitrary<OpenSpec[]> = fc.uniqueArray(
  fc.record({
    type: fc.constantFrom(...TYPES),
    level: fc.constantFrom(...LEVELS),
    sender: fc.option(fc.constantFrom(...SENDERS), { nil: null }),
    ageMinutes: fc.integer({ min: 0, max: 24 * 60 }),
    counterpart: fc.option(
      fc.record({
        jitterMinutes: fc.integer({ min: -59, max: 59 }),
        withSender: fc.boolean(),
      }),
      { nil: null },
    ),
  }),
  { minLength: 1, maxLength: 8, selector: (s) => `${s.type}/${s.level}` },
);

/** v1 alerts that continue nothing: types v7 never had here. */
const extraArb = fc.uniqueArray(
  fc.record({ type: fc.constantFrom('1014', '1017', '1019'), level: fc.constantFrom(...LEVELS) }),
  { maxLength: 3, selector: (s) => `${s.type}/${s.level}` },
);

function v7Warnings(open: readonly OpenSpec[]): Warning[] {
  return open.map((s, i) =>
    warning(`1012101012026070100000000${i}`, {
      typeCode: s.type,
      typeName: null,
      level: s.level,
      color: COLORS[s.level]!,
      sender: s.sender,
      pubTime: iso(T0.getTime() - s.ageMinutes * MINUTE_MS),
    }),
  );
}

function v1Alert(id: string, overrides: Partial<Warning>): Warning {
  return warning(id, { source: 'v1', instruction: null, ...overrides });
}

function tracked(warnings: readonly Warning[]): TrackedWarning[] {
  return warnings.map((w) => ({
    id: w.id,
    state: 'open',
    warning: w,
    firstSeen: new Date(T0.getTime() - 3600_000),
    lastSeen: new Date(T0.getTime() - 300_000),
    misses: 0,
    closedAt: null,
  }));
}

describe('the v7 → v1 handover', () => {
  it('announces no matched warning again, the rest as new, and names the known warning in a later update', () => {
    fc.assert(
      fc.property(openArb, extraArb, (open, extras) => {
        const v7 = v7Warnings(open);
        const counterparts = new Map<string, string>(); // v1 id → v7 id
        const answer: Warning[] = [];
        open.forEach((s, i) => {
          if (!s.counterpart) return;
          const id = `V1-${i}-${s.type}`;
          counterparts.set(id, v7[i]!.id);
          answer.push(
            v1Alert(id, {
              typeCode: s.type,
              typeName: null,
              level: s.level,
              color: COLORS[s.level]!,
              sender: s.counterpart.withSender ? s.sender : null,
              pubTime: iso(Date.parse(v7[i]!.pubTime!) + s.counterpart.jitterMinutes * MINUTE_MS),
            }),
          );
        });
        const extraIds = extras.map((e, i) => {
          const id = `V1-extra-${i}`;
          answer.push(v1Alert(id, { typeCode: e.type, level: e.level, color: COLORS[e.level]! }));
          return id;
        });

        // First v1 answer after the switch.
        let state = tracked(v7);
        const now1 = T0;
        const first = detectChanges({
          tracked: state,
          fetch: { ok: true, warnings: continueHandedOver(state, answer) },
          now: now1,
        });
        const news = first.events.filter((e) => e.type === 'new').map((e) => e.warningId);
        expect(news.sort()).toEqual([...extraIds].sort());
        // A matched alert is the v7 warning seen again: no event of any kind about it.
        for (const v7Id of counterparts.values()) {
          expect(first.events.some((e) => e.warningId === v7Id)).toBe(false);
        }
        state = applyDetectResult(state, first, now1);

        // Second answer: one counterpart is updated; warnings without one end by the miss rule.
        const updatedV1 = [...counterparts.keys()].sort()[0];
        const now2 = new Date(T0.getTime() + 5 * MINUTE_MS);
        const second: Warning[] = answer.map((w) =>
          w.id === updatedV1
            ? v1Alert('V1-update', {
                ...w,
                id: 'V1-update',
                status: 'update',
                related: [updatedV1],
                pubTime: iso(now2.getTime()),
                raw: { id: 'V1-update' },
              })
            : w,
        );
        const result = detectChanges({
          tracked: state,
          fetch: { ok: true, warnings: continueHandedOver(state, second) },
          now: now2,
        });
        expect(result.events.filter((e) => e.type === 'new')).toEqual([]);
        const unmatched = v7
          .map((w) => w.id)
          .filter((id) => ![...counterparts.values()].includes(id));
        expect(
          result.events
            .filter((e) => e.type === 'expired')
            .map((e) => e.warningId)
            .sort(),
        ).toEqual(unmatched.sort());
        if (updatedV1) {
          const update = result.events.find((e) => e.type === 'update');
          // The update names the v7 warning subscribers know, then the alert it replaced.
          expect(update?.supersedes).toEqual([counterparts.get(updatedV1), updatedV1]);
          expect(update?.warning.related[0]).toBe(counterparts.get(updatedV1));
        } else {
          expect(result.events.some((e) => e.type === 'update')).toBe(false);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('never continues a warning of the same type at another level, whatever the times', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TYPES),
        fc.constantFrom(...LEVELS),
        fc.constantFrom(...LEVELS),
        fc.integer({ min: -59, max: 59 }),
        (type, levelA, levelB, jitter) => {
          fc.pre(levelA !== levelB);
          const open = warning('W', { typeCode: type, level: levelA, color: COLORS[levelA]! });
          const next = v1Alert('A', {
            typeCode: type,
            level: levelB,
            color: COLORS[levelB]!,
            pubTime: iso(Date.parse(open.pubTime!) + jitter * MINUTE_MS),
          });
          expect(continues(open, next)).toBe(false);
          const state = tracked([open]);
          const seen = continueHandedOver(state, [next]);
          expect(seen.map((w) => w.id)).toEqual(['A']);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('asks for the same sender only when both name one, and issue times within the hour', () => {
    const open = warning('W', { sender: '杭州市气象台' });
    const same = v1Alert('A', {});
    expect(continues(open, same)).toBe(true);
    expect(continues(open, { ...same, sender: '浙江省气象台' })).toBe(false);
    expect(continues(open, { ...same, sender: null })).toBe(true);
    const later = (ms: number) => ({
      ...same,
      pubTime: iso(Date.parse(open.pubTime!) + ms),
    });
    expect(continues(open, later(HANDOVER_TIME_TOLERANCE_MS))).toBe(true);
    expect(continues(open, later(HANDOVER_TIME_TOLERANCE_MS + MINUTE_MS))).toBe(false);
    expect(continues(open, { ...same, pubTime: null })).toBe(false);
    // v7's old type codes name today's types.
    expect(continues({ ...open, typeCode: '11B03' }, same)).toBe(true);
  });

  it('never takes a cancel message for a continuation', () => {
    const open = warning('W');
    const cancel = v1Alert('C', { status: 'cancel', related: ['A-unseen'] });
    expect(continueHandedOver(tracked([open]), [cancel])).toEqual([cancel]);
  });
});
