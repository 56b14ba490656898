import { describe, expect, it } from 'vitest';
import {
  applyDetectResult,
  DEFAULT_DETECT_SETTINGS,
  detectChanges,
  type DetectedEvent,
  type DetectResult,
  type FetchOutcome,
  type TrackedWarning,
} from '../../src/domain/detect.js';
import { impliedEnd, type Warning } from '../../src/domain/warning.js';
import { at, T0, warning } from './detect-fixtures.js';

const HOUR = 60;

function answer(...warnings: Warning[]): FetchOutcome {
  return { ok: true, warnings };
}

/** Runs one step and returns the result with the tracked list it leads to. */
function step(
  tracked: readonly TrackedWarning[],
  fetch: FetchOutcome,
  now: Date,
): { result: DetectResult; tracked: TrackedWarning[] } {
  const result = detectChanges({ tracked, fetch, now });
  return { result, tracked: applyDetectResult(tracked, result, now) };
}

function open(w: Warning, overrides: Partial<TrackedWarning> = {}): TrackedWarning {
  return {
    id: w.id,
    state: 'open',
    warning: w,
    firstSeen: T0,
    lastSeen: T0,
    misses: 0,
    lastMissAt: null,
    closedAt: null,
    occurrence: 0,
    ...overrides,
  };
}

/** A detected event as detection writes it; occurrence 0 and no chain unless given. */
function event(
  type: DetectedEvent['type'],
  w: Warning,
  extra: Partial<Pick<DetectedEvent, 'supersedes' | 'occurrence' | 'chain'>> = {},
): DetectedEvent {
  return { type, warningId: w.id, warning: w, supersedes: [], occurrence: 0, chain: [], ...extra };
}

function stateOf(tracked: readonly TrackedWarning[], id: string): TrackedWarning | undefined {
  return tracked.find((entry) => entry.id === id);
}

function eventKeys(result: DetectResult): string[] {
  return result.events.map((event) => `${event.type}:${event.warningId}`);
}

describe('detectChanges', () => {
  it('announces a never-seen active record as new, keyed on its id', () => {
    const a = warning('A');
    const { result, tracked } = step([], answer(a), at(5));
    expect(result.events).toEqual([event('new', a)]);
    expect(result.seen).toEqual([]);
    expect(result.changes).toEqual([
      {
        id: 'A',
        state: 'open',
        warning: a,
        firstSeen: at(5),
        lastSeen: at(5),
        misses: 0,
        lastMissAt: null,
        closedAt: null,
        occurrence: 0,
      },
    ]);
    expect(tracked).toEqual(result.changes);
  });

  it('says nothing about a tracked record seen again, but refreshes it with the latest content', () => {
    const a = warning('A');
    const before = [open(a, { misses: 1 })];
    const newer = warning('A', { text: 'corrected text' });
    const { result, tracked } = step(before, answer(newer), at(10));
    expect(result.events).toEqual([]);
    expect(result.seen).toEqual(['A']);
    expect(stateOf(tracked, 'A')).toMatchObject({
      state: 'open',
      misses: 0,
      lastSeen: at(10),
      firstSeen: T0,
      warning: newer,
    });
  });

  it('leaves an unchanged record out of changes and only reports it as seen', () => {
    const a = warning('A');
    const result = detectChanges({ tracked: [open(a)], fetch: answer(a), now: at(10) });
    expect(result).toEqual({ events: [], changes: [], seen: ['A'] });
  });

  it('turns an update into an update event that supersedes the related warning', () => {
    const a = warning('A');
    const b = warning('B', { status: 'update', related: ['A'], level: '橙色' });
    const { result, tracked } = step([open(a)], answer(b), at(30));
    expect(result.events).toEqual([event('update', b, { supersedes: ['A'], chain: ['A'] })]);
    expect(stateOf(tracked, 'A')).toMatchObject({ state: 'superseded', closedAt: at(30) });
    expect(stateOf(tracked, 'B')).toMatchObject({ state: 'open', closedAt: null });
  });

  it('never reports a superseded warning as expired, however long it stays missing', () => {
    const a = warning('A');
    const b = warning('B', { status: 'update', related: ['A'] });
    let { tracked } = step([open(a)], answer(b), at(30));
    const expiredIds: string[] = [];
    for (let minute = 40; minute < 40 * HOUR; minute += HOUR) {
      const next = step(tracked, answer(b), at(minute));
      tracked = next.tracked;
      expiredIds.push(...next.result.events.map((e) => e.warningId));
    }
    expect(expiredIds).toEqual([]);
    expect(stateOf(tracked, 'A')?.state).toBe('superseded');
  });

  it('still announces an update whose related warning it never saw', () => {
    const b = warning('B', { status: 'update', related: ['UNKNOWN'] });
    const { result, tracked } = step([], answer(b), at(1));
    expect(result.events).toEqual([
      event('update', b, { supersedes: ['UNKNOWN'], chain: ['UNKNOWN'] }),
    ]);
    expect(tracked.map((entry) => entry.id)).toEqual(['B']);
  });

  // Updated twice between two answers (or once while the call failed): the answer holds the
  // second update, naming the first, which was never seen, and nothing names A.
  it('takes an update naming only warnings never seen as the update of the open warning it may replace', () => {
    const a = warning('A');
    const c = warning('C', { status: 'update', related: ['B'], level: '橙色', color: 'orange' });
    const first = step([open(a)], answer(c), at(1));
    expect(first.result.events.map((e) => [e.type, e.warningId, e.supersedes])).toEqual([
      ['update', 'C', ['A', 'B']],
    ]);
    expect(first.tracked.find((t) => t.id === 'A')?.state).toBe('superseded');
    // Never an all-clear for A, and the same answer again changes nothing.
    let state = first.tracked;
    for (const minutes of [2, 3, 4]) {
      const again = step(state, answer(c), at(minutes));
      expect(again.result.events).toEqual([]);
      expect(again.result.changes).toEqual([]);
      state = again.tracked;
    }
    // A cancel in the same place cancels it.
    const cancel = warning('X', { status: 'cancel', related: ['B'] });
    const cancelled = step([open(a)], answer(cancel), at(1));
    expect(cancelled.result.events.map((e) => [e.type, e.warningId, e.supersedes])).toEqual([
      ['cancel', 'X', ['A', 'B']],
    ]);
  });

  it('replaces nothing with an update of another type, sender or an earlier time', () => {
    const a = warning('A', { pubTime: '2026-07-01T08:00+08:00' });
    const unlike = [
      warning('C1', { status: 'update', related: ['B'], typeCode: '1001', typeName: '台风' }),
      warning('C2', { status: 'update', related: ['B'], sender: '浙江省气象台' }),
      warning('C3', { status: 'update', related: ['B'], pubTime: '2026-07-01T06:30+08:00' }),
    ];
    for (const c of unlike) {
      const first = step([open(a)], answer(c), at(1));
      expect(first.result.events.map((e) => [e.type, e.supersedes])).toEqual([['update', ['B']]]);
      // A ends by the miss rule: two misses, the last 15 minutes after it was last seen.
      const second = step(first.tracked, answer(c), at(15));
      expect(second.result.events.map((e) => [e.type, e.warningId])).toEqual([['expired', 'A']]);
    }
  });

  it('announces an update or cancel with no related ids on its own status', () => {
    const u = warning('U', { status: 'update', related: [] });
    const c = warning('C', { status: 'cancel', related: [] });
    const { result } = step([], answer(u, c), at(1));
    expect(eventKeys(result)).toEqual(['cancel:C', 'update:U']);
    expect(result.events.every((event) => event.supersedes.length === 0)).toBe(true);
  });

  it('turns a cancel into a cancel event, closing the related warning and the cancel record', () => {
    const a = warning('A');
    const c = warning('C', { status: 'cancel', related: ['A'] });
    const { result, tracked } = step([open(a)], answer(c), at(45));
    expect(result.events).toEqual([event('cancel', c, { supersedes: ['A'], chain: ['A'] })]);
    expect(stateOf(tracked, 'A')).toMatchObject({ state: 'cancelled', closedAt: at(45) });
    expect(stateOf(tracked, 'C')).toMatchObject({ state: 'cancelled', closedAt: at(45) });
  });

  it('yields nothing for a cancel record seen again, and never expires it', () => {
    const c = warning('C', { status: 'cancel', related: ['A'] });
    let { tracked } = step([], answer(c), at(0));
    const again = step(tracked, answer(c), at(5));
    expect(again.result.events).toEqual([]);
    tracked = again.tracked;
    for (const minute of [10, 15, 20, 25 * HOUR]) {
      const missing = step(tracked, answer(), at(minute));
      expect(missing.result.events).toEqual([]);
      tracked = missing.tracked;
    }
    expect(stateOf(tracked, 'C')?.state).toBe('cancelled');
  });

  it('keeps a superseded or cancelled warning closed when the upstream still returns it', () => {
    const a = warning('A');
    const b = warning('B');
    const before = [
      open(a, { state: 'superseded', closedAt: at(1) }),
      open(b, { state: 'cancelled', closedAt: at(1) }),
    ];
    const { result, tracked } = step(before, answer(a, b), at(10));
    expect(result.events).toEqual([]);
    expect(result.seen).toEqual(['A', 'B']);
    expect(stateOf(tracked, 'A')).toMatchObject({ state: 'superseded', closedAt: at(1) });
    expect(stateOf(tracked, 'B')).toMatchObject({ state: 'cancelled', closedAt: at(1) });
  });

  it('changes nothing on a fetch failure', () => {
    const before = [open(warning('A'), { misses: 1 })];
    const result = detectChanges({ tracked: before, fetch: { ok: false }, now: at(50 * HOUR) });
    expect(result).toEqual({ events: [], changes: [], seen: [] });
  });

  it('expires a missing warning only after the configured number of successful misses', () => {
    const a = warning('A', { endTime: null, startTime: null, pubTime: null });
    const first = step([open(a)], answer(), at(5));
    expect(first.result.events).toEqual([]);
    expect(stateOf(first.tracked, 'A')).toMatchObject({ state: 'open', misses: 1 });

    const failed = step(first.tracked, { ok: false }, at(10));
    expect(failed.result.events).toEqual([]);
    expect(stateOf(failed.tracked, 'A')).toMatchObject({ state: 'open', misses: 1 });

    const second = step(failed.tracked, answer(), at(15));
    expect(second.result.events).toEqual([event('expired', a)]);
    expect(stateOf(second.tracked, 'A')).toMatchObject({
      state: 'expired',
      misses: 2,
      closedAt: at(15),
    });
  });

  it('resets the misses when the warning comes back before the threshold', () => {
    const a = warning('A');
    const first = step([open(a)], answer(), at(5));
    const back = step(first.tracked, answer(a), at(10));
    const missingAgain = step(back.tracked, answer(), at(15));
    expect(missingAgain.result.events).toEqual([]);
    expect(stateOf(missingAgain.tracked, 'A')).toMatchObject({ state: 'open', misses: 1 });
  });

  it('honours a different miss threshold', () => {
    const a = warning('A');
    const settings = { ...DEFAULT_DETECT_SETTINGS, expireAfterMisses: 3 };
    let tracked: TrackedWarning[] = [open(a)];
    const types: string[] = [];
    for (const minute of [5, 10, 15]) {
      const result = detectChanges({ tracked, fetch: answer(), now: at(minute), settings });
      types.push(...eventKeys(result));
      tracked = applyDetectResult(tracked, result, at(minute), settings);
    }
    expect(types).toEqual(['expired:A']);
    expect(stateOf(tracked, 'A')?.closedAt).toEqual(at(15));
  });

  it('expires a missing warning at once when its end time has passed', () => {
    const a = warning('A', { endTime: '2026-07-01T09:00+08:00' });
    const before = step([open(a)], answer(), at(30));
    expect(before.result.events).toEqual([]);
    const after = step([open(a)], answer(), at(HOUR));
    expect(eventKeys(after.result)).toEqual(['expired:A']);
    expect(stateOf(after.tracked, 'A')).toMatchObject({ state: 'expired', misses: 1 });
  });

  it('assumes 24 hours after the start when there is no end time, else after publication', () => {
    const noEnd = warning('A', { endTime: null, startTime: '2026-07-01T08:00+08:00' });
    expect(step([open(noEnd)], answer(), at(24 * HOUR - 1)).result.events).toEqual([]);
    expect(eventKeys(step([open(noEnd)], answer(), at(24 * HOUR)).result)).toEqual(['expired:A']);

    const onlyPub = warning('A', {
      endTime: null,
      startTime: null,
      pubTime: '2026-07-01T09:00+08:00',
    });
    expect(impliedEnd(onlyPub)).toEqual(at(25 * HOUR));
    expect(eventKeys(step([open(onlyPub)], answer(), at(25 * HOUR)).result)).toEqual(['expired:A']);
  });

  it('never ends a warning because its end time passed while the upstream still returns it', () => {
    const a = warning('A', { endTime: '2026-07-01T09:00+08:00' });
    const { result, tracked } = step([open(a)], answer(a), at(5 * HOUR));
    expect(result.events).toEqual([]);
    expect(stateOf(tracked, 'A')?.state).toBe('open');
  });

  it('tells an expired warning that comes back within the window as resumed, one occurrence on', () => {
    const a = warning('A', { endTime: '2026-07-10T08:00+08:00' });
    const expired = open(a, { state: 'expired', misses: 2, closedAt: at(20), lastSeen: at(10) });
    const { result, tracked } = step([expired], answer(a), at(71 * HOUR));
    expect(result.events).toEqual([event('resumed', a, { occurrence: 1 })]);
    expect(stateOf(tracked, 'A')).toMatchObject({
      state: 'open',
      misses: 0,
      closedAt: null,
      firstSeen: T0,
      lastSeen: at(71 * HOUR),
      occurrence: 1,
    });
    // Its next end is told again, under its new occurrence; seen again meanwhile, nothing.
    const again = step(tracked, answer(a), at(71 * HOUR + 5));
    expect(again.result.events).toEqual([]);
    const gone = step(again.tracked, answer(), at(71 * HOUR + 10));
    const ended = step(gone.tracked, answer(), at(71 * HOUR + 25));
    expect(ended.result.events).toEqual([event('expired', a, { occurrence: 1 })]);
  });

  it('never resumes a warning that comes back as a cancel: it stays closed', () => {
    const a = warning('A');
    const expired = open(a, { state: 'expired', misses: 2, closedAt: at(20), lastSeen: at(10) });
    const cancelled = warning('A', { status: 'cancel' });
    const { result, tracked } = step([expired], answer(cancelled), at(60));
    expect(result.events).toEqual([]);
    expect(stateOf(tracked, 'A')).toMatchObject({ state: 'cancelled', occurrence: 0 });
  });

  it('treats a reappearance after the window as a new warning', () => {
    const a = warning('A');
    const expired = open(a, { state: 'expired', misses: 2, closedAt: at(20), lastSeen: at(10) });
    const now = at(10 + 72 * HOUR + 1);
    const { result, tracked } = step([expired], answer(a), now);
    expect(eventKeys(result)).toEqual(['new:A']);
    expect(stateOf(tracked, 'A')).toMatchObject({ state: 'open', firstSeen: now, closedAt: null });
  });

  it('counts the same id twice in one answer once, keeping the latest publication', () => {
    const older = warning('A', { pubTime: '2026-07-01T08:00+08:00', text: 'older' });
    const newer = warning('A', { pubTime: '2026-07-01T08:30+08:00', text: 'newer' });
    for (const order of [
      [older, newer],
      [newer, older],
    ]) {
      const { result } = step([], answer(...order), at(40));
      expect(result.events).toHaveLength(1);
      expect(result.events[0]?.warning.text).toBe('newer');
      expect(result.changes).toHaveLength(1);
    }
  });

  it('does not announce an original first seen together with its own update or cancel', () => {
    const a = warning('A');
    const b = warning('B', { status: 'update', related: ['A'] });
    const x = warning('X');
    const c = warning('C', { status: 'cancel', related: ['X'] });
    const { result, tracked } = step([], answer(a, b, x, c), at(1));
    expect(eventKeys(result)).toEqual(['update:B', 'cancel:C']);
    expect(stateOf(tracked, 'A')?.state).toBe('superseded');
    expect(stateOf(tracked, 'X')?.state).toBe('cancelled');
  });

  it('follows a chain: an update of an update closes the earlier update', () => {
    const a = warning('A');
    const b = warning('B', { status: 'update', related: ['A'] });
    const c = warning('C', { status: 'update', related: ['B'] });
    const first = step([open(a)], answer(b), at(10));
    const second = step(first.tracked, answer(c), at(20));
    expect(eventKeys(second.result)).toEqual(['update:C']);
    expect(stateOf(second.tracked, 'B')).toMatchObject({ state: 'superseded', closedAt: at(20) });
    expect(stateOf(second.tracked, 'A')?.closedAt).toEqual(at(10));
  });

  it('ignores a record that names itself as related', () => {
    const b = warning('B', { status: 'update', related: ['B', ' ', 'A', 'A'] });
    const { result, tracked } = step([], answer(b), at(1));
    expect(result.events[0]?.supersedes).toEqual(['A']);
    expect(stateOf(tracked, 'B')?.state).toBe('open');
  });

  it('orders events: cancel and update first, then new, then expired, ties by id', () => {
    const gone1 = warning('G1', { endTime: null, startTime: null, pubTime: null });
    const gone2 = warning('G0', { endTime: null, startTime: null, pubTime: null });
    const replaced = warning('R');
    const before = [open(gone1, { misses: 1 }), open(gone2, { misses: 1 }), open(replaced)];
    const { result } = step(
      before,
      answer(
        warning('N2'),
        warning('N1'),
        warning('U', { status: 'update', related: ['R'] }),
        warning('C', { status: 'cancel', related: ['nothing'] }),
      ),
      at(15),
    );
    expect(eventKeys(result)).toEqual([
      'cancel:C',
      'update:U',
      'new:N1',
      'new:N2',
      'expired:G0',
      'expired:G1',
    ]);
  });
});

describe('impliedEnd', () => {
  it('reads only instants with an offset, so the server time zone never shifts an end', () => {
    expect(impliedEnd(warning('A', { endTime: '2026-07-01T20:00Z' }))).toEqual(at(20 * HOUR));
    const localOnly = warning('A', {
      endTime: '2026-07-01 20:00',
      startTime: '2026-07-01T08:00+08:00',
    });
    expect(impliedEnd(localOnly)).toEqual(at(24 * HOUR));
    expect(impliedEnd(warning('A', { endTime: null, startTime: '', pubTime: null }))).toBeNull();
  });
});

describe('applyDetectResult', () => {
  it('drops entries last seen longer ago than the window, whatever their state', () => {
    const old = open(warning('OLD'), { state: 'superseded', lastSeen: at(0) });
    const recent = open(warning('RECENT'), { state: 'expired', lastSeen: at(HOUR) });
    const now = at(72 * HOUR + 30);
    const empty: DetectResult = { events: [], changes: [], seen: [] };
    expect(applyDetectResult([old, recent], empty, now).map((entry) => entry.id)).toEqual([
      'RECENT',
    ]);
  });
});
