import { kindOf, type Channel } from '../channels/kinds.js';
import { EMAIL_DELIVER_JOBS } from '../channels/registry.js';
import { enqueueBatches, knownOf } from '../ledger/index.js';
import type { FirstAttemptBatch, FirstAttemptSender, PipelineContext } from '../runtime/context.js';
import { QUEUE_NAMES } from '../runtime/queues.js';
import { deliverKnown, runDeliver, SEND_START_DEADLINE_MS } from './deliver.js';

/**
 * The first attempts a check commits, sent by the process that made the check: straight after
 * the commit, from the process's send slots, with no deliver job in between, and from what the
 * check knows of them (`KnownBatch.known`) rather than a take that reads them back. A
 * BullMQ job and a take per batch before the first send were the largest share of a webhook's
 * CPU that delivery added (issue 38). The check's statement wrote these messages claimed by this process for
 * `CLAIM_SECONDS` (`RecordInput.leased`): no other job or sweep takes them meanwhile, and a
 * process that dies leaves them to the sweeper when the lease is over (`requeueDueMessages`).
 * Whatever one send cannot finish (a failure, no send slot in time) the deliver job's outcomes
 * hand to BullMQ, as for any attempt.
 */
export class InProcessFirstAttempts implements FirstAttemptSender {
  readonly channels: readonly Channel[];
  readonly #ctx: PipelineContext;
  /** One per channel, as the deliver queues are: a stalled mail server holds no webhook back. */
  readonly #queues = new Map<Channel, FirstAttemptQueue>();

  /** `ctx` is the one the sends run with; `channels`, those whose deliver queue runs here. */
  constructor(ctx: Omit<PipelineContext, 'firstAttempts'>, channels: readonly Channel[]) {
    this.#ctx = { ...ctx, firstAttempts: this };
    // A robot's first attempt is claimed, not owned (its rate limit and splits decide it).
    this.channels = channels.filter((c) => kindOf(c).ownedFirstAttempt);
    const sending = this.#ctx;
    for (const channel of this.channels) {
      this.#queues.set(
        channel,
        new FirstAttemptQueue({
          // As many batches at a time as the channel's deliver worker takes jobs.
          maxRunning:
            kindOf(channel).queue === 'deliverEmail'
              ? EMAIL_DELIVER_JOBS
              : sending.config.deliveryConcurrency,
          now: () => sending.now().getTime(),
          run: (batch) => this.#sendBatch(batch),
          handOff: (batches) => this.#enqueue(batches),
        }),
      );
    }
  }

  /** The context whose checks send their first attempts here. */
  get context(): PipelineContext {
    return this.#ctx;
  }

  send(batches: readonly FirstAttemptBatch[]): void {
    for (const [channel, queue] of this.#queues) {
      queue.add(batches.filter((b) => b.channel === channel));
    }
  }

  /** Hands the batches not yet begun to BullMQ and waits for those under way. */
  async drain(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((q) => q.drain()));
  }

  async #sendBatch(batch: FirstAttemptBatch): Promise<void> {
    const ctx = this.#ctx;
    const payload = { messageIds: batch.messageIds };
    try {
      const known = knownOf(batch);
      const result = known
        ? await deliverKnown(ctx, batch.jobId, known)
        : await runDeliver(ctx, payload, batch.jobId);
      ctx.metrics?.jobCompleted(QUEUE_NAMES[kindOf(batch.channel).queue], payload, result);
    } catch (err) {
      // A ledger write failed: the batch's leases run out and the sweeper sends what is left.
      ctx.logger.warn(
        { err, jobId: batch.jobId, messages: batch.messageIds.length },
        'first attempts left to the sweeper',
      );
    }
  }

  /** Batches as the deliver jobs they were planned as: a job with the batch's id owns them. */
  async #enqueue(batches: readonly FirstAttemptBatch[]): Promise<void> {
    const now = this.#ctx.now();
    try {
      await enqueueBatches(
        this.#ctx.queues,
        batches.map((b) => ({ ...b, dueAt: now.getTime() })),
        now,
      );
    } catch (err) {
      this.#ctx.logger.warn({ err, batches: batches.length }, 'first attempts left to the sweeper');
    }
  }
}

/**
 * Messages known to their check (`KnownBatch.known`) that may wait in one queue: about
 * 650 bytes each (two objects and the subscriber's strings; the event's record is shared). A
 * storm's checks commit batches far faster than they can be sent, and with every waiting batch
 * known a worker's peak RSS grew by 30–40 MB (413–419 against 370–386 MB in the bench's runs).
 * Holding less of each (its subscriber's columns, the message built when it starts) bought
 * nothing measurable (BENCHMARKS.md). A known message carries its subscriber as the check
 * read them; should they change while it waits (an unsubscribe, a pause, another address), its
 * send hands it back to be taken again (`SubscriberChanges`, src/pipeline/subscriber-changes.ts).
 */
export const KNOWN_WAITING_MESSAGES = 2000;

/**
 * The batches waiting to be sent by this process, at most `maxRunning` under way. A batch waits
 * with its messages as its check knew them while fewer than `knownWaiting` such messages wait;
 * behind them, as its ids only, read by the take when it starts. One that has waited past
 * `SEND_START_DEADLINE_MS` since its lease began goes to BullMQ instead, as do those still
 * waiting when the process stops: its lease must outlast its sends.
 */
export class FirstAttemptQueue {
  readonly #waiting: { batch: FirstAttemptBatch; since: number }[] = [];
  readonly #running = new Set<Promise<void>>();
  readonly #handingOff = new Set<Promise<void>>();
  /** Messages of `#waiting` that carry what their check knew. */
  #knownWaiting = 0;

  constructor(
    private readonly o: {
      maxRunning: number;
      now: () => number;
      run: (batch: FirstAttemptBatch) => Promise<void>;
      handOff: (batches: readonly FirstAttemptBatch[]) => Promise<void>;
      /** `KNOWN_WAITING_MESSAGES` unless given. */
      knownWaiting?: number;
    },
  ) {}

  add(batches: readonly FirstAttemptBatch[]): void {
    const since = this.o.now();
    const limit = this.o.knownWaiting ?? KNOWN_WAITING_MESSAGES;
    for (const batch of batches) {
      // A batch that starts at once never waits, whatever the number waiting.
      const startsNow = this.#running.size < this.o.maxRunning && this.#waiting.length === 0;
      const known = knownOf(batch)?.length ?? 0;
      if (known > 0 && !startsNow && this.#knownWaiting + known > limit) {
        const idsOnly = {
          jobId: batch.jobId,
          channel: batch.channel,
          messageIds: batch.messageIds,
        };
        this.#waiting.push({ batch: idsOnly, since });
      } else {
        this.#knownWaiting += known;
        this.#waiting.push({ batch, since });
      }
      this.#pump();
    }
  }

  /** Batches waiting and under way; the waiting messages that carry what their check knew. */
  get size(): { waiting: number; running: number; knownWaiting: number } {
    return {
      waiting: this.#waiting.length,
      running: this.#running.size,
      knownWaiting: this.#knownWaiting,
    };
  }

  async drain(): Promise<void> {
    this.#knownWaiting = 0;
    this.#handOff(this.#waiting.splice(0).map((w) => w.batch));
    while (this.#running.size > 0 || this.#handingOff.size > 0) {
      await Promise.allSettled([...this.#running, ...this.#handingOff]);
    }
  }

  #pump(): void {
    const overdue: FirstAttemptBatch[] = [];
    while (this.#running.size < this.o.maxRunning && this.#waiting.length > 0) {
      const { batch, since } = this.#waiting.shift()!;
      this.#knownWaiting -= knownOf(batch)?.length ?? 0;
      if (this.o.now() - since > SEND_START_DEADLINE_MS) {
        overdue.push(batch);
        continue;
      }
      const running: Promise<void> = this.o.run(batch).finally(() => {
        this.#running.delete(running);
        this.#pump();
      });
      this.#running.add(running);
    }
    this.#handOff(overdue);
  }

  #handOff(batches: readonly FirstAttemptBatch[]): void {
    if (batches.length === 0) return;
    const handing: Promise<void> = this.o
      .handOff(batches)
      .finally(() => this.#handingOff.delete(handing));
    this.#handingOff.add(handing);
  }
}
