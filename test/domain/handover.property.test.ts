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
    lastMissAt: null,
    closedAt: null,
    occurrence: 0,
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
        // 15 minutes on: two misses over EXPIRE_AFTER_SECONDS's default end an unmatched warning.
        const now2 = new Date(T0.getTime() + 15 * MINUTE_MS);
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

  it('never takes a cancel message for a continuation, and ends with it the warning it replaces', () => {
    const open = warning('W');
    const cancel = v1Alert('C', { status: 'cancel', related: ['A-unseen'] });
    const state = tracked([open]);
    const seen = continueHandedOver(state, [cancel]);
    expect(seen).toEqual([cancel]);
    // Detection links it to the v7 warning whose twin it cancels, which it closes.
    const result = detectChanges({ tracked: state, fetch: { ok: true, warnings: seen }, now: T0 });
    expect(result.events.map((e) => [e.type, e.warningId, e.supersedes])).toEqual([
      ['cancel', 'C', ['W', 'A-unseen']],
    ]);
    expect(result.changes.find((t) => t.id === 'W')?.state).toBe('cancelled');
  });

  // The v1 twin of a v7 warning updated or cancelled between v7's last answer and v1's first is
  // never seen: v1 no longer returns an alert a later one supersedes, and the message names an id
  // nobody knows. Each open warning here is of its own type, so which one a message replaces is
  // not ambiguous.
  it('tells an update or cancel of a twin never seen as the update or cancel of the v7 warning, never its expiry', () => {
    const fate = fc.constantFrom('twin', 'update', 'cancel', 'gone');
    const openOfOwnType = fc.uniqueArray(
      fc.record({
        type: fc.constantFrom(...TYPES),
        level: fc.constantFrom(...LEVELS),
        sender: fc.option(fc.constantFrom(...SENDERS), { nil: null }),
        ageMinutes: fc.integer({ min: 0, max: 24 * 60 }),
        fate,
        newLevel: fc.constantFrom(...LEVELS),
        laterMinutes: fc.integer({ min: -59, max: 12 * 60 }),
      }),
      { minLength: 1, maxLength: 4, selector: (s) => s.type },
    );
    fc.assert(
      fc.property(openOfOwnType, (open) => {
        const v7 = v7Warnings(open.map((s) => ({ ...s, counterpart: null })));
        const answer: Warning[] = [];
        open.forEach((s, i) => {
          const pubTime = iso(Date.parse(v7[i]!.pubTime!) + s.laterMinutes * MINUTE_MS);
          const base = { typeCode: s.type, typeName: null, sender: s.sender, pubTime };
          if (s.fate === 'twin') {
            answer.push(
              v1Alert(`V1-${i}`, {
                ...base,
                level: s.level,
                color: COLORS[s.level]!,
                pubTime: v7[i]!.pubTime,
              }),
            );
          } else if (s.fate !== 'gone') {
            const level = s.fate === 'update' ? s.newLevel : s.level;
            answer.push(
              v1Alert(`V1-${s.fate}-${i}`, {
                ...base,
                level,
                color: COLORS[level]!,
                status: s.fate,
                related: [`V1-unseen-${i}`],
              }),
            );
          }
        });

        // Two answers alike, 15 minutes apart: a warning missing from both ends by the miss rule.
        let state = tracked(v7);
        const events: ReturnType<typeof detectChanges>['events'] = [];
        for (const minutes of [0, 15]) {
          const now = new Date(T0.getTime() + minutes * MINUTE_MS);
          const result = detectChanges({
            tracked: state,
            fetch: { ok: true, warnings: continueHandedOver(state, answer) },
            now,
          });
          events.push(...result.events);
          state = applyDetectResult(state, result, now);
        }

        expect(events.filter((e) => e.type === 'new')).toEqual([]);
        open.forEach((s, i) => {
          const v7Id = v7[i]!.id;
          const about = events.filter((e) => e.warningId === v7Id || e.supersedes.includes(v7Id));
          if (s.fate === 'twin') {
            expect(about).toEqual([]);
          } else if (s.fate === 'gone') {
            expect(about.map((e) => [e.type, e.warningId])).toEqual([['expired', v7Id]]);
          } else {
            // Told once, under the message's own id, naming the warning subscribers know first.
            expect(about.map((e) => [e.type, e.warningId])).toEqual([
              [s.fate, `V1-${s.fate}-${i}`],
            ]);
            expect(about[0]!.supersedes).toEqual([v7Id, `V1-unseen-${i}`]);
            expect(state.find((t) => t.id === v7Id)?.state).toBe(
              s.fate === 'update' ? 'superseded' : 'cancelled',
            );
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('takes an update naming an alert never seen for the twin of a v7 update at its level and time', () => {
    // v7's warning W2 updated W1; its v1 twin names W1's twin, which v1 no longer returns.
    const w1 = warning('W1', { pubTime: '2026-07-01T06:00+08:00' });
    const w2 = warning('W2', { status: 'update', related: ['W1'] });
    const state: TrackedWarning[] = [
      { ...tracked([w1])[0]!, state: 'superseded' },
      ...tracked([w2]),
    ];
    const twin = v1Alert('V1-W2', { status: 'update', related: ['V1-W1'] });
    expect(continueHandedOver(state, [twin])).toEqual([
      { ...twin, id: 'W2', v1Id: 'V1-W2', related: ['V1-W1'] },
    ]);
    // At another level, naming W2's twin, it is not that twin: detection tells it as W2's update.
    const update = {
      ...twin,
      id: 'V1-U',
      level: '橙色' as const,
      color: 'orange',
      related: ['V1-W2'],
    };
    const seen = continueHandedOver(state, [update]);
    expect(seen).toEqual([update]);
    const result = detectChanges({ tracked: state, fetch: { ok: true, warnings: seen }, now: T0 });
    expect(result.events.map((e) => [e.type, e.warningId, e.supersedes])).toEqual([
      ['update', 'V1-U', ['W2', 'V1-W2']],
    ]);
  });
});
