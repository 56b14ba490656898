import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plannedBatches } from '../../src/ledger/dispatch.js';
import type { Outgoing } from '../../src/ledger/take.js';

/**
 * The batches a writer planned its messages into (`first_job_id`), as BullMQ's jobs and the
 * checking process's first attempts both take them: every message in exactly one batch, the
 * batch of its job id, in the order the writer returned them; the messages themselves when the
 * writer knows every one.
 */

const message = fc.record({
  id: fc.uuid(),
  job: fc.constantFrom('a', 'b', 'c', 'd'),
  /** Known to its writer (`CreatedMessage.known`): its first attempt needs no take. */
  known: fc.boolean(),
});

describe('plannedBatches', () => {
  it('puts each message in the batch of its job, once, keeping their order', () => {
    fc.assert(
      fc.property(fc.uniqueArray(message, { selector: (m) => m.id, maxLength: 40 }), (rows) => {
        const created = rows.map((m) => ({
          id: m.id,
          // A job's messages share one channel and one due time, as the writers plan them.
          channel: m.job === 'd' ? ('email' as const) : ('webhook' as const),
          firstJobId: m.job,
          dueAt: new Date(Date.UTC(2026, 6, 1, 8, m.job.charCodeAt(0))),
          ...(m.known ? { known: { id: m.id } as Outgoing } : {}),
        }));
        const batches = plannedBatches(created);
        expect(batches.map((b) => b.jobId)).toEqual([...new Set(rows.map((m) => m.job))]);
        for (const b of batches) {
          const mine = created.filter((m) => m.firstJobId === b.jobId);
          expect(b.messageIds).toEqual(mine.map((m) => m.id));
          expect(b.channel).toBe(mine[0]!.channel);
          expect(b.dueAt).toBe(mine[0]!.dueAt.getTime());
          // Carried only whole: a batch with one message unknown is read through the take.
          const known = mine.every((m) => m.known) ? mine.map((m) => m.known?.id) : undefined;
          expect(b.known?.map((m) => m.id)).toEqual(known);
        }
      }),
    );
  });
});
