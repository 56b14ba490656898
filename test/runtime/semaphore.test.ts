import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../src/runtime/semaphore.js';

describe('Semaphore', () => {
  it('never runs more than its permits at once, runs every task, and starts them in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 30 }),
        async (permits, delays) => {
          const slots = new Semaphore(permits);
          let running = 0;
          let peak = 0;
          const started: number[] = [];
          const results = await Promise.all(
            delays.map((ms, i) =>
              slots.run(async () => {
                started.push(i);
                running += 1;
                peak = Math.max(peak, running);
                await sleep(ms);
                running -= 1;
                return i;
              }),
            ),
          );
          expect(results).toEqual(delays.map((_, i) => i));
          expect(peak).toBeLessThanOrEqual(permits);
          expect(peak).toBe(Math.min(permits, delays.length));
          expect(started).toEqual(delays.map((_, i) => i));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('starts callers marked ahead before everyone queued without it, each group in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 30 }),
        async (permits, aheadFlags) => {
          const slots = new Semaphore(permits);
          const started: number[] = [];
          // Every caller queues while the permits are held, then the permits are let go.
          let release!: () => void;
          const held = new Promise<void>((resolve) => (release = resolve));
          const holders = Array.from({ length: permits }, () => slots.run(() => held));
          const callers = aheadFlags.map((ahead, i) =>
            slots.run(
              () => {
                started.push(i);
                return Promise.resolve();
              },
              { ahead },
            ),
          );
          release();
          await Promise.all([...holders, ...callers]);
          const indices = aheadFlags.map((_, i) => i);
          expect(started).toEqual([
            ...indices.filter((i) => aheadFlags[i]),
            ...indices.filter((i) => !aheadFlags[i]),
          ]);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('frees the permit of a task that failed', async () => {
    const slots = new Semaphore(1);
    await expect(slots.run(() => Promise.reject(new Error('send failed')))).rejects.toThrow(
      'send failed',
    );
    await expect(slots.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });

  it('refuses a count that could never run anything', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
    expect(() => new Semaphore(1.5)).toThrow(RangeError);
  });
});
