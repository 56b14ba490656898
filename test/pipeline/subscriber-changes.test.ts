import { describe, expect, it } from 'vitest';
import type { StatementRunner } from '../../src/db/prepared.js';
import {
  CHANGES_FRESH_MS,
  CHANGES_LOOKBACK_SECONDS,
  SubscriberChanges,
} from '../../src/pipeline/subscriber-changes.js';

type Row = { subscriber_id: string; changed_at: string };

/**
 * What the table holds is the test's to say (`rows`), the clock is the test's to move, and each
 * read may be held open (`hold`) to see what waits for it.
 */
function harness() {
  let clock = 1_000_000;
  let rows: Row[] = [];
  let reads = 0;
  let fail: Error | undefined;
  let held: { release: () => void } | undefined;
  const run = (async (_statement: unknown, values: { seconds: number }) => {
    expect(values.seconds).toBe(CHANGES_LOOKBACK_SECONDS);
    reads += 1;
    const answer = rows;
    if (held) await new Promise<void>((resolve) => (held!.release = resolve));
    if (fail) throw fail;
    return answer;
  }) as unknown as StatementRunner;
  const changes = new SubscriberChanges(run, () => clock);
  return {
    changes,
    at: () => clock,
    move: (ms: number) => (clock += ms),
    set: (next: Row[]) => (rows = next),
    reads: () => reads,
    failWith: (err: Error | undefined) => (fail = err),
    hold: () => {
      held = { release: () => {} };
      return () => {
        const h = held!;
        held = undefined;
        h.release();
      };
    },
  };
}

const change = (subscriber: string, at = '2026-11-29 12:00:00.000001+00'): Row => ({
  subscriber_id: subscriber,
  changed_at: at,
});

describe('what a sending process knows of its subscribers’ changes', () => {
  it('reads before the first send, then again only once what it read is older than CHANGES_FRESH_MS', async () => {
    const h = harness();
    await h.changes.fresh();
    expect(h.reads()).toBe(1);
    h.move(CHANGES_FRESH_MS);
    expect(h.changes.fresh()).toBeUndefined();
    h.move(1);
    await h.changes.fresh();
    expect(h.reads()).toBe(2);
  });

  it('counts a change as after a read when it was first seen at or after it', async () => {
    const h = harness();
    await h.changes.fresh();
    const readBefore = h.at();
    h.move(10);
    const readLater = h.at();
    h.set([change('a')]);
    h.move(CHANGES_FRESH_MS + 1);
    await h.changes.fresh();
    // Seen now: later than both reads, so both may have missed it.
    expect(h.changes.changedSince('a', readBefore)).toBe(true);
    expect(h.changes.changedSince('a', readLater)).toBe(true);
    expect(h.changes.changedSince('b', readBefore)).toBe(false);
    // A message read after the process saw it carries the subscriber as changed.
    h.move(5);
    expect(h.changes.changedSince('a', h.at())).toBe(false);
  });

  it('never takes a change it has seen for a new one: each later read keeps when it was first seen', async () => {
    const h = harness();
    h.set([change('a')]);
    await h.changes.fresh();
    const seenAt = h.at();
    h.move(CHANGES_FRESH_MS + 1);
    const readBetween = h.at();
    h.move(CHANGES_FRESH_MS + 1);
    await h.changes.fresh();
    expect(h.reads()).toBe(2);
    expect(h.changes.changedSince('a', seenAt)).toBe(true);
    expect(h.changes.changedSince('a', readBetween)).toBe(false);
    // A second change of the same subscriber is new.
    h.set([change('a'), change('a', '2026-11-29 12:00:05.5+00')]);
    h.move(CHANGES_FRESH_MS + 1);
    await h.changes.fresh();
    expect(h.changes.changedSince('a', readBetween)).toBe(true);
  });

  it('has every send that finds it stale wait for one read, and a read begun too long ago for another', async () => {
    const h = harness();
    const release = h.hold();
    const first = h.changes.fresh();
    const second = h.changes.fresh();
    expect(first).toBeInstanceOf(Promise);
    expect(second).toBeInstanceOf(Promise);
    // The read under way began before `CHANGES_FRESH_MS` ran out for a send that came later.
    h.move(CHANGES_FRESH_MS + 1);
    const late = h.changes.fresh();
    release();
    await Promise.all([first, second]);
    await late;
    expect(h.reads()).toBe(2);
    expect(h.changes.fresh()).toBeUndefined();
  });

  it('fails the send when the table cannot be read, and reads again at the next', async () => {
    const h = harness();
    h.failWith(new Error('connection terminated'));
    await expect(h.changes.fresh()).rejects.toThrow('connection terminated');
    h.failWith(undefined);
    h.set([change('a')]);
    await h.changes.fresh();
    expect(h.reads()).toBe(2);
    expect(h.changes.changedSince('a', h.at())).toBe(true);
  });
});
