import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/runtime/group-commit.js';

describe('GroupCommit', () => {
  it('gives each caller its own item’s answer, one write at a time, never more than maxItems', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        // Items added in waves: each wave in one turn of the event loop, then a pause.
        fc.array(fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 8,
        }),
        async (maxItems, waves) => {
          let writing = 0;
          const sizes: number[] = [];
          const group = new GroupCommit<number, string>(
            async (items) => {
              writing += 1;
              expect(writing).toBe(1);
              sizes.push(items.length);
              await sleep(1);
              writing -= 1;
              return items.map((n) => `answer ${n}`);
            },
            { maxItems },
          );
          const answers: Promise<string>[] = [];
          let next = 0;
          for (const [count, pause] of waves) {
            for (let k = 0; k < count; k += 1) answers.push(group.add(next++));
            await sleep(pause);
          }
          expect(await Promise.all(answers)).toEqual(
            Array.from({ length: next }, (_, n) => `answer ${n}`),
          );
          expect(sizes.reduce((a, b) => a + b, 0)).toBe(next);
          expect(Math.max(...sizes)).toBeLessThanOrEqual(maxItems);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('carries the items added while a write runs in the next write, and fails only that write’s callers', async () => {
    const batches: number[][] = [];
    let fail = true;
    const group = new GroupCommit<number>(async (items) => {
      batches.push(items);
      await sleep(5);
      if (fail) {
        fail = false;
        throw new Error('statement failed');
      }
    });
    const first = group.add(1);
    await sleep(1);
    const later = [group.add(2), group.add(3)];
    await expect(first).rejects.toThrow('statement failed');
    await expect(Promise.all(later)).resolves.toEqual([undefined, undefined]);
    expect(batches).toEqual([[1], [2, 3]]);
  });

  it('lingers after a write only when it was busy: otherwise what arrived during it goes as soon as it ends', async () => {
    const batches: number[][] = [];
    const gates: { started: () => void; finish?: () => void }[] = [];
    const gated = (n: number) => new Promise<void>((started) => (gates[n] = { started }));
    const writeStarted = [gated(0), gated(1)];
    const finish = (n: number) => gates[n]!.finish!();
    // The test ends each linger itself: the order of events, not a timer, decides each batch.
    const lingers: (() => void)[] = [];
    const group = new GroupCommit<number>(
      async (items) => {
        const gate = gates[batches.length];
        batches.push(items);
        if (!gate) return;
        gate.started();
        await new Promise<void>((resolve) => (gate.finish = resolve));
      },
      { lingerMs: 400, busyItems: 3, wait: () => new Promise<void>((end) => lingers.push(end)) },
    );
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setImmediate(resolve));
    };
    const done = [group.add(1), group.add(2)];
    await until(() => lingers.length === 1);
    // Within the linger of a write that found none running: it joins that write.
    done.push(group.add(3));
    lingers[0]!();
    await writeStarted[0];
    done.push(group.add(4));
    finish(0);
    // The first write carried three (busy): the second lingers, and takes this one too.
    await until(() => lingers.length === 2);
    done.push(group.add(5));
    lingers[1]!();
    await writeStarted[1];
    done.push(group.add(6));
    finish(1);
    // The second carried two: the third goes at once, without lingering.
    await until(() => batches.length === 3);
    expect(lingers).toHaveLength(2);
    // A write that finds none running lingers again.
    done.push(group.add(7));
    await until(() => lingers.length === 3);
    lingers[2]!();
    await Promise.all(done);
    expect(batches).toEqual([[1, 2, 3], [4, 5], [6], [7]]);
  });
});
