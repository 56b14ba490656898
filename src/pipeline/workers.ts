import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { isConnectionError } from '../ops/outage-log.js';
import type { PipelineContext } from '../runtime/context.js';
import { checkPayload, runCheck } from './check.js';
import { countFailedCheck } from '../detection/cycle-counters.js';
import { releaseCycleMessages, releasePayload, deliverPayload } from '../ledger/index.js';
import { EMAIL_DELIVER_JOBS } from '../channels/registry.js';
import { runDeliver } from './deliver.js';
import { JobFailureLog } from '../runtime/job-failure-log.js';
import { pollPayload, runPoll } from './poll.js';
import { QUEUE_NAMES, type QueueName } from '../runtime/queues.js';
import { CHANNELS, kindOf } from '../channels/kinds.js';
import { InProcessFirstAttempts } from './first-attempts.js';
import { runSweep, sweepPayload } from './sweep.js';

interface JobDefinition<S extends z.ZodType> {
  readonly payload: S;
  /** `token` is the BullMQ run's hold on the job's lock. */
  readonly run: (
    ctx: PipelineContext,
    payload: z.infer<S>,
    job: Job,
    token: string | undefined,
  ) => Promise<unknown>;
}

const define = <S extends z.ZodType>(d: JobDefinition<S>) => d as JobDefinition<z.ZodType>;

/**
 * How long a job's lock lasts without renewal (BullMQ's default, stated so that the deliver
 * job's own renewal matches it): a stalled process's job runs again after about this long.
 */
export const JOB_LOCK_MS = 30_000;

/**
 * Both channels' deliver queues run the same job; a batch holds rows of one channel. Its id says
 * which first attempts it owns (src/ledger/take.ts).
 */
const deliver = define({
  payload: deliverPayload,
  run: (ctx, p, job, token) =>
    runDeliver(ctx, p, job.id, async () => {
      // Renews the lock as BullMQ's own timer does; 0 when another run holds it, or none does.
      return token !== undefined && (await job.extendLock(token, JOB_LOCK_MS)) === 1;
    }),
});

/** One queue, one job kind, one processor. */
export const JOBS: Record<QueueName, JobDefinition<z.ZodType>> = {
  // A cycle's own jobs: opening it, and releasing what it collected when its 60 s are up.
  poll: define({
    payload: z.union([releasePayload, pollPayload]),
    run: (ctx, p, job) =>
      'releaseCycle' in p
        ? releaseCycleMessages(ctx, p.releaseCycle)
        : // A scheduler job's id is stable across its retries: the cycle it opens is reused.
          runPoll(ctx, { jobKey: p.jobKey ?? job.id }),
  }),
  // A place (v7) or a watched point (v1, src/detection/point-subject.ts): one job kind, "check
  // what is watched", sharing the queue's rate limit, which is the upstream's QPM budget.
  check: define({
    payload: checkPayload,
    run: async (ctx, p, job) => {
      try {
        return await runCheck(ctx, p);
      } catch (err) {
        if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
          // A check that failed for good (the database kept failing) still counts for its
          // cycle, so the cycle ends and `poll --once` does not wait for it forever.
          const what = 'pointId' in p ? `point ${p.pointId}` : p.placeId;
          await countFailedCheck(ctx, p.cycleId, what, err).catch(() => undefined);
        }
        throw err;
      }
    },
  }),
  'deliver-webhook': deliver,
  'deliver-email': deliver,
  sweep: define({ payload: sweepPayload, run: (ctx, p) => runSweep(ctx, p) }),
};

export class UnknownJobError extends Error {
  override name = 'UnknownJobError';
}

export function jobDefinition(queue: string): JobDefinition<z.ZodType> {
  const job = JOBS[queue as QueueName];
  if (!job) throw new UnknownJobError(`no job is registered for queue "${queue}"`);
  return job;
}

export interface WorkerSet {
  readonly workers: readonly Worker[];
  /** Lets running jobs finish (up to `timeoutMs`), then stops; BullMQ re-queues what is left. */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * Starts a worker per queue. A process that runs checks and deliveries sends the first attempts
 * of its checks itself (src/pipeline/first-attempts.ts); its jobs run with that context.
 */
export function startWorkers(
  base: PipelineContext,
  connection: Redis,
  queues: readonly QueueName[],
): WorkerSet {
  const delivering = CHANNELS.filter((c) => queues.includes(QUEUE_NAMES[kindOf(c).queue]));
  const firstAttempts =
    queues.includes('check') && delivering.length > 0
      ? new InProcessFirstAttempts(base, delivering)
      : undefined;
  const ctx = firstAttempts?.context ?? base;
  const concurrency: Record<QueueName, number> = {
    poll: 1,
    check: ctx.config.checkConcurrency,
    'deliver-webhook': ctx.config.deliveryConcurrency,
    // Enough jobs to keep the mail pool busy even when each carries a single row (a retry).
    'deliver-email': EMAIL_DELIVER_JOBS,
    sweep: 1,
  };
  const failures = new JobFailureLog(ctx.logger);
  const workers = queues.map((name) => {
    const definition = jobDefinition(name);
    const worker = new Worker(
      name,
      async (job: Job, token?: string) => {
        const parsed = definition.payload.safeParse(job.data);
        if (!parsed.success) {
          // A payload that does not parse never will: retrying it only hides the bug.
          throw new UnrecoverableError(`invalid ${name} payload: ${parsed.error.message}`);
        }
        const result = await definition.run(ctx, parsed.data, job, token);
        ctx.metrics?.jobCompleted(name, parsed.data, result);
        return result;
      },
      {
        connection,
        prefix: ctx.queues.prefix,
        concurrency: concurrency[name],
        lockDuration: JOB_LOCK_MS,
        // The upstream's budget is per project, so the limit is global across all workers.
        ...(name === 'check'
          ? { limiter: { max: ctx.config.qweather.qpm, duration: 60_000 } }
          : {}),
      },
    );
    // Without an 'error' listener a Redis hiccup would surface as an unhandled error; a lost
    // connection is the outage log's to say, once.
    worker.on('error', (err) => {
      if (isConnectionError(err)) ctx.redisOutage.failed(err, { queue: name });
      else ctx.logger.error({ err, queue: name }, 'worker error');
    });
    worker.on('failed', (job, err) =>
      failures.failed({ queue: name, jobId: job?.id, attempt: job?.attemptsMade }, err),
    );
    return worker;
  });
  return {
    workers,
    async close(timeoutMs = 25_000) {
      let timer: NodeJS.Timeout | undefined;
      const graceful = Promise.all(workers.map((w) => w.close()));
      const forced = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      const result = await Promise.race([graceful, forced]);
      clearTimeout(timer);
      if (result === 'timeout') {
        ctx.logger.warn({ timeoutMs }, 'workers did not finish in time, forcing close');
        await Promise.all(workers.map((w) => w.close(true)));
      }
      // No check runs any more: the first attempts under way finish, or their leases lapse.
      await firstAttempts?.drain();
      failures.flush();
    },
  };
}

const POLL_SCHEDULER_ID = 'poll-cycle';
const SWEEP_SCHEDULER_ID = 'sweep';

/**
 * Declares the recurring jobs. Every worker process may call this: job schedulers are upserts,
 * so one poll runs per period however many processes run (docs/design.md).
 */
export async function scheduleRecurring(ctx: PipelineContext): Promise<void> {
  await schedulePoll(ctx, ctx.config.pollIntervalSeconds);
  await ctx.queues.sweep.upsertJobScheduler(
    SWEEP_SCHEDULER_ID,
    { every: SWEEP_EVERY_MS },
    { name: 'sweep', data: {} },
  );
}

/** Declares (or re-declares with another period) the poll scheduler. */
export async function schedulePoll(ctx: PipelineContext, everySeconds: number): Promise<void> {
  await ctx.queues.poll.upsertJobScheduler(
    POLL_SCHEDULER_ID,
    { every: everySeconds * 1000 },
    {
      name: 'poll',
      data: {},
      opts: { attempts: 2, backoff: { type: 'exponential', delay: 5000 } },
    },
  );
}

/** The poll scheduler's period now, in seconds; null when Redis holds none. */
export async function scheduledPollSeconds(ctx: PipelineContext): Promise<number | null> {
  const scheduler = await ctx.queues.poll.getJobScheduler(POLL_SCHEDULER_ID);
  return scheduler?.every ? Number(scheduler.every) / 1000 : null;
}

/** Often enough that a lost delivery is found again within a minute. */
export const SWEEP_EVERY_MS = 30_000;

/**
 * Declares the recurring jobs again when Redis lost them (restarted without persistence,
 * flushed, keys evicted): with the schedulers gone nothing would ever poll or sweep again.
 * Live schedulers are left alone, since declaring one again could move its next run.
 * Resolves to whether they had to be declared.
 */
export async function ensureRecurring(ctx: PipelineContext): Promise<boolean> {
  const [poll, sweep] = await Promise.all([
    ctx.queues.poll.getJobScheduler(POLL_SCHEDULER_ID),
    ctx.queues.sweep.getJobScheduler(SWEEP_SCHEDULER_ID),
  ]);
  if (poll && sweep) return false;
  await scheduleRecurring(ctx);
  return true;
}
