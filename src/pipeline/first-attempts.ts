import { kindOf, type Channel } from '../channels/kinds.js';
import type { FirstAttemptBatch, FirstAttemptSender, PipelineContext } from '../runtime/context.js';
import { QUEUE_NAMES } from '../runtime/queues.js';
import { runDeliver } from './deliver.js';

/**
 * The first attempts a check commits, sent by the process that made the check: straight after
 * the commit, from the process's send slots, with no deliver job in between. A BullMQ job and a
 * take per batch before the first send were the largest share of a webhook's CPU that delivery
 * added (issue 38). The check's statement wrote these messages claimed by this process for
 * `CLAIM_SECONDS` (`RecordInput.leased`): no other job or sweep takes them meanwhile, and a
 * process that dies leaves them to the sweeper when the lease is over (`requeueDueMessages`).
 * Whatever one send cannot finish (a failure, no send slot in time) the deliver job's outcomes
 * hand to BullMQ, as for any attempt.
 */
export class InProcessFirstAttempts implements FirstAttemptSender {
  readonly channels: readonly Channel[];
  readonly #ctx: PipelineContext;
  readonly #running = new Set<Promise<void>>();

  /** `ctx` is the one the sends run with; `channels`, those whose deliver queue runs here. */
  constructor(ctx: Omit<PipelineContext, 'firstAttempts'>, channels: readonly Channel[]) {
    this.#ctx = { ...ctx, firstAttempts: this };
    // A robot's first attempt is claimed, not owned (its rate limit and splits decide it).
    this.channels = channels.filter((c) => kindOf(c).ownedFirstAttempt);
  }

  /** The context whose checks send their first attempts here. */
  get context(): PipelineContext {
    return this.#ctx;
  }

  send(batches: readonly FirstAttemptBatch[]): void {
    for (const batch of batches) {
      const sending = this.#sendBatch(batch).finally(() => this.#running.delete(sending));
      this.#running.add(sending);
    }
  }

  async #sendBatch(batch: FirstAttemptBatch): Promise<void> {
    const ctx = this.#ctx;
    const payload = { messageIds: batch.messageIds };
    try {
      const result = await runDeliver(ctx, payload, batch.jobId);
      ctx.metrics?.jobCompleted(QUEUE_NAMES[kindOf(batch.channel).queue], payload, result);
    } catch (err) {
      // A ledger write failed: the batch's leases run out and the sweeper sends what is left.
      ctx.logger.warn(
        { err, jobId: batch.jobId, messages: batch.messageIds.length },
        'first attempts left to the sweeper',
      );
    }
  }

  /** Waits for the sends under way: a process that stops lets them finish first. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }
}
