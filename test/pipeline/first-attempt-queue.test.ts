import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SEND_START_DEADLINE_MS } from '../../src/pipeline/deliver.js';
import { FirstAttemptQueue } from '../../src/pipeline/first-attempts.js';
import { knownOf, type KnownBatch, type Outgoing } from '../../src/ledger/index.js';
import type { FirstAttemptBatch } from '../../src/runtime/context.js';

const batch = (n: number): FirstAttemptBatch => ({
  jobId: `job${n}`,
  channel: 'webhook',
  messageIds: [`m${n}`],
});

/** A batch of `size` messages its check knew (`FirstAttemptBatch.known`). */
const knownBatch = (n: number, size = 2): KnownBatch => {
  const messageIds = Array.from({ length: size }, (_, i) => `m${n}_${i}`);
  return {
    jobId: `job${n}`,
    channel: 'webhook',
    messageIds,
    known: messageIds.map((id) => ({ id }) as Outgoing),
  };
};

/** A queue whose runs finish when the test says so, on a clock the test moves. */
function harness(maxRunning: number, knownWaiting?: number) {
  let clock = 0;
  const finish = new Map<string, () => void>();
  const ran: string[] = [];
  /** The jobs that ran with what their check knew. */
  const ranKnown: string[] = [];
  const handed: string[] = [];
  let peak = 0;
  const queue = new FirstAttemptQueue({
    maxRunning,
    ...(knownWaiting === undefined ? {} : { knownWaiting }),
    now: () => clock,
    run: (b) => {
      ran.push(b.jobId);
      const known = knownOf(b);
      if (known) {
        expect(known.map((m) => m.id)).toEqual(b.messageIds);
        ranKnown.push(b.jobId);
      }
      peak = Math.max(peak, queue.size.running + 1);
      return new Promise<void>((resolve) => finish.set(b.jobId, resolve));
    },
    handOff: (bs) => {
      handed.push(...bs.map((b) => b.jobId));
      return Promise.resolve();
    },
  });
  return {
    queue,
    ran,
    ranKnown,
    handed,
    peak: () => peak,
    tick: (ms: number) => (clock += ms),
    async finishOne(): Promise<boolean> {
      const [first] = finish.keys();
      if (first === undefined) return false;
      finish.get(first)!();
      finish.delete(first);
      // The run's `finally` and the next pump.
      await new Promise((resolve) => setImmediate(resolve));
      return true;
    },
  };
}

describe('the first attempts waiting in the checking process', () => {
  it('runs at most maxRunning batches at a time, in the order they came', async () => {
    const h = harness(2);
    h.queue.add([batch(1), batch(2), batch(3), batch(4)]);
    expect(h.ran).toEqual(['job1', 'job2']);
    expect(h.queue.size).toEqual({ waiting: 2, running: 2, knownWaiting: 0 });
    while (await h.finishOne());
    expect(h.ran).toEqual(['job1', 'job2', 'job3', 'job4']);
    expect(h.handed).toEqual([]);
  });

  it('keeps what checks knew for a bounded number of waiting messages, ids behind them', async () => {
    const h = harness(1, 4);
    // job1 starts at once; job2 and job3 wait known (4 messages); job4 waits as ids only.
    h.queue.add([knownBatch(1), knownBatch(2), knownBatch(3), knownBatch(4)]);
    await h.finishOne();
    // job2 left the waiting: job5 has room to wait known again.
    h.queue.add([knownBatch(5)]);
    while (await h.finishOne());
    expect(h.ran).toEqual(['job1', 'job2', 'job3', 'job4', 'job5']);
    expect(h.ranKnown).toEqual(['job1', 'job2', 'job3', 'job5']);
  });

  it('hands a batch to BullMQ once it has waited past the deadline, and runs the others', async () => {
    const h = harness(1);
    h.queue.add([batch(1), batch(2)]);
    h.tick(SEND_START_DEADLINE_MS + 1);
    h.queue.add([batch(3)]);
    await h.finishOne();
    // job2 waited too long for a send slot; job3 came later and has time.
    expect(h.handed).toEqual(['job2']);
    expect(h.ran).toEqual(['job1', 'job3']);
  });

  it('hands what still waits to BullMQ when the process stops, and waits for what runs', async () => {
    const h = harness(1);
    h.queue.add([batch(1), batch(2), batch(3)]);
    let drained = false;
    const draining = h.queue.drain().then(() => (drained = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.handed).toEqual(['job2', 'job3']);
    expect(drained).toBe(false);
    await h.finishOne();
    await draining;
    expect(drained).toBe(true);
    expect(h.ran).toEqual(['job1']);
  });

  it('sends or hands off every batch exactly once, never more at a time than allowed', async () => {
    const step = fc.oneof(
      fc.record({ add: fc.integer({ min: 1, max: 4 }), known: fc.boolean() }),
      fc.record({ finish: fc.constant(true) }),
      fc.record({ tick: fc.integer({ min: 0, max: SEND_START_DEADLINE_MS }) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(step, { maxLength: 40 }),
        async (max, knownWaiting, steps) => {
          const h = harness(max, knownWaiting);
          let n = 0;
          for (const s of steps) {
            if ('add' in s) {
              h.queue.add(
                Array.from({ length: s.add }, () => (s.known ? knownBatch : batch)((n += 1))),
              );
            } else if ('finish' in s) await h.finishOne();
            else h.tick(s.tick);
            // What waits known stays within the bound (two messages a known batch).
            expect(h.queue.size.knownWaiting).toBeLessThanOrEqual(knownWaiting);
          }
          const draining = h.queue.drain();
          while (await h.finishOne());
          await draining;
          const all = [...h.ran, ...h.handed].sort();
          expect(all).toEqual(Array.from({ length: n }, (_, i) => `job${i + 1}`).sort());
          expect(new Set(all).size).toBe(n);
          expect(h.peak()).toBeLessThanOrEqual(max);
        },
      ),
      { numRuns: 200 },
    );
  });
});
