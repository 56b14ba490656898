import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FIRST_ATTEMPT_BATCH, planFirstAttempts } from '../../src/pipeline/deliver.js';

describe('planFirstAttempts', () => {
  it('puts every row in one batch of its own channel, none over the batch size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('email' as const, 'webhook' as const), { maxLength: 400 }),
        (channels) => {
          const rows = channels.map((channel, n) => ({ channel, n }));
          const planned = planFirstAttempts(rows, 'cycle_101010100');
          expect(planned.map((r) => r.n)).toEqual(rows.map((r) => r.n));

          const batches = new Map<string, typeof planned>();
          for (const row of planned) {
            expect(row.firstJobId.startsWith('cycle_101010100_')).toBe(true);
            // BullMQ uses ':' as its key separator.
            expect(row.firstJobId).not.toContain(':');
            batches.set(row.firstJobId, [...(batches.get(row.firstJobId) ?? []), row]);
          }
          for (const batch of batches.values()) {
            const channel = batch[0]!.channel;
            expect(batch.every((r) => r.channel === channel)).toBe(true);
            expect(batch.length).toBeLessThanOrEqual(FIRST_ATTEMPT_BATCH[channel]);
          }
          for (const channel of ['email', 'webhook'] as const) {
            const count = channels.filter((c) => c === channel).length;
            const used = [...batches.values()].filter((b) => b[0]!.channel === channel).length;
            expect(used).toBe(Math.ceil(count / FIRST_ATTEMPT_BATCH[channel]));
          }
        },
      ),
    );
  });
});
