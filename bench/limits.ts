import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { DEFAULT_JOB_OPTIONS } from '../src/runtime/queues.js';
import type { BothResult, LaneResult, LimitResult, LimitTask } from './limit-child.js';
import { exited, forkTs, nextMessage } from './procs.js';

/**
 * The limits of this machine, measured in the same run as the pipeline (timings here are
 * noisy, ratios less so): each bare operation run by as many processes as the pipeline has
 * workers, at the pipeline's concurrency, against the same receiver, SMTP server, Postgres and
 * Redis.
 */

export interface Limit {
  /** Units per second over all processes. */
  readonly perSecond: number;
  readonly count: number;
  readonly seconds: number;
  readonly errors: number;
  readonly firstError?: string;
}

/** A limit whose client processes' CPU was measured too. */
export interface TimedLimit extends Limit {
  /**
   * CPU seconds of the client processes and of the runner answering them (receiver, SMTP
   * server) from 'go' to the end: for the webhook and email limits, what a bare send costs.
   * A server's own CPU (Postgres) is not in it.
   */
  readonly cpuSeconds: number;
}

/**
 * The bare sends of both channels at once, in the mix the subscriptions have: what a pipeline
 * that did nothing but send could score on the storm's rate measures, each channel timed from
 * the start to its own last send, as the storm's rates are.
 */
export interface BothChannelsLimit {
  readonly webhook: Limit;
  readonly email: Limit;
  /**
   * CPU seconds over that time: the sending processes and the runner, whose receiver and SMTP
   * server answer them (Postgres and Redis have nothing to do).
   */
  readonly cpuSeconds: number;
}

export interface Limits {
  readonly bullmqNoopJobs: Limit;
  readonly undiciPosts: TimedLimit;
  readonly nodemailerSends: TimedLimit;
  readonly bothChannels: BothChannelsLimit;
  readonly postgresInsertRows: Limit;
}

export interface LimitSizes {
  readonly bullmqJobs: number;
  readonly posts: number;
  readonly emails: number;
  readonly insertRows: number;
}

export const FULL_LIMIT_SIZES: LimitSizes = {
  bullmqJobs: 30_000,
  posts: 30_000,
  emails: 6000,
  insertRows: 300_000,
};
export const QUICK_LIMIT_SIZES: LimitSizes = {
  bullmqJobs: 3000,
  posts: 3000,
  emails: 600,
  insertRows: 30_000,
};

interface Setup {
  readonly processes: number;
  /** Email subscriptions per webhook subscription: the mix of the both-channel limit. */
  readonly emailsPerWebhook: number;
  readonly deliveryConcurrency: number;
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly databaseUrl: string;
  readonly receiverOrigin: string;
  readonly smtpUrl: string;
  readonly env: Record<string, string>;
}

/**
 * Starts one child per task, releases them together, and returns what each did, with the CPU
 * time this process (whose receiver and SMTP server answer them) spent from 'go' to the end.
 */
async function runTogether<R>(
  setup: Setup,
  tasks: LimitTask[],
): Promise<{ results: R[]; runnerCpuMs: number }> {
  const children = tasks.map((task) =>
    forkTs('./limit-child.ts', [JSON.stringify(task)], { env: setup.env }),
  );
  try {
    await Promise.all(children.map((c) => nextMessage(c, 'ready')));
    const done = children.map((c) => nextMessage<{ result: R }>(c, 'done', 300_000));
    const cpuAtGo = process.cpuUsage();
    for (const c of children) c.send({ type: 'go' });
    const results = (await Promise.all(done)).map((m) => m.result);
    const runner = process.cpuUsage(cpuAtGo);
    return { results, runnerCpuMs: (runner.user + runner.system) / 1000 };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
  }
}

/** What the processes did together, over the time the slowest of them took. */
function sumLimit(results: readonly LaneResult[]): Limit {
  const count = results.reduce((n, r) => n + r.count, 0);
  const seconds = Math.max(...results.map((r) => r.ms)) / 1000;
  const errors = results.reduce((n, r) => n + r.errors, 0);
  const firstError = results.find((r) => r.firstError)?.firstError;
  return {
    perSecond: count / seconds,
    count,
    seconds,
    errors,
    ...(firstError ? { firstError } : {}),
  };
}

async function together(setup: Setup, tasks: LimitTask[]): Promise<TimedLimit> {
  const { results, runnerCpuMs } = await runTogether<LimitResult>(setup, tasks);
  const childrenCpuMs = results.reduce((n, r) => n + r.cpuMs, 0);
  return { ...sumLimit(results), cpuSeconds: (childrenCpuMs + runnerCpuMs) / 1000 };
}

async function bullmqLimit(setup: Setup, jobs: number): Promise<Limit> {
  const prefix = `qwn-bench-raw-${randomBytes(4).toString('hex')}`;
  const queue = new Queue('noop', { connection: setup.redis, prefix });
  const children = Array.from({ length: setup.processes }, () =>
    forkTs(
      './limit-child.ts',
      [
        JSON.stringify({
          kind: 'bullmq',
          redisUrl: setup.redisUrl,
          prefix,
          queue: 'noop',
          concurrency: setup.deliveryConcurrency,
        } satisfies LimitTask),
      ],
      { env: setup.env },
    ),
  );
  try {
    // Jobs carry an id payload and the pipeline's retention options, like deliver jobs do.
    await queue.pause();
    for (let i = 0; i < jobs; i += 1000) {
      await queue.addBulk(
        Array.from({ length: Math.min(1000, jobs - i) }, (_, j) => ({
          name: 'noop',
          data: { deliveryId: `${i + j}` },
          opts: { ...DEFAULT_JOB_OPTIONS, jobId: `noop-${i + j}` },
        })),
      );
    }
    await Promise.all(children.map((c) => nextMessage(c, 'ready')));
    const started = performance.now();
    await queue.resume();
    for (;;) {
      const counts = await queue.getJobCounts('wait', 'active', 'prioritized');
      if (Object.values(counts).every((n) => n === 0)) break;
      await sleep(10);
    }
    const seconds = (performance.now() - started) / 1000;
    const done = children.map((c) => nextMessage<{ result: LaneResult }>(c, 'done'));
    for (const c of children) c.send({ type: 'stop' });
    const count = (await Promise.all(done)).reduce((n, m) => n + m.result.count, 0);
    return { perSecond: count / seconds, count, seconds, errors: jobs - count };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}

async function insertLimit(setup: Setup, rows: number): Promise<Limit> {
  const client = new pg.Client({ connectionString: setup.databaseUrl });
  await client.connect();
  try {
    await client.query(`
      CREATE TABLE bench_raw_insert (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        subscriber_id uuid NOT NULL,
        warning_id text NOT NULL,
        event_type text NOT NULL,
        channel text NOT NULL,
        place_id text NOT NULL,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (subscriber_id, warning_id, event_type))`);
    const per = Math.ceil(rows / setup.processes);
    return await together(
      setup,
      Array.from({ length: setup.processes }, () => ({
        kind: 'insert' as const,
        databaseUrl: setup.databaseUrl,
        rows: per,
        batch: 1000,
        concurrency: 4,
      })),
    );
  } finally {
    await client.query('DROP TABLE IF EXISTS bench_raw_insert');
    await client.end();
  }
}

/** Each process's task for the webhook and the email limit: its share of the units. */
function channelTasks(setup: Setup, sizes: Pick<LimitSizes, 'posts' | 'emails'>) {
  const per = (n: number) => Math.ceil(n / setup.processes);
  return Array.from({ length: setup.processes }, (_, i) => ({
    webhook: {
      kind: 'undici' as const,
      origin: setup.receiverOrigin,
      requests: per(sizes.posts),
      concurrency: setup.deliveryConcurrency,
      index: i,
    },
    email: {
      kind: 'smtp' as const,
      url: setup.smtpUrl,
      messages: per(sizes.emails),
      concurrency: setup.deliveryConcurrency,
    },
  }));
}

/**
 * Each process sends its share of `posts` webhooks and of the emails the mix puts beside them,
 * both at once, as a worker process does; each channel with the concurrency of its own limit.
 */
async function bothChannelsLimit(setup: Setup, posts: number): Promise<BothChannelsLimit> {
  const emails = Math.round(posts * setup.emailsPerWebhook);
  const { results, runnerCpuMs } = await runTogether<BothResult>(
    setup,
    channelTasks(setup, { posts, emails }).map((t) => ({ kind: 'both' as const, ...t })),
  );
  const webhook = sumLimit(results.map((r) => r.webhook));
  const email = sumLimit(results.map((r) => r.email));
  const childrenCpuMs = results.reduce((n, r) => n + r.cpuMs, 0);
  return {
    webhook,
    email,
    cpuSeconds: (childrenCpuMs + runnerCpuMs) / 1000,
  };
}

export async function measureLimits(setup: Setup, sizes: LimitSizes): Promise<Limits> {
  const bullmqNoopJobs = await bullmqLimit(setup, sizes.bullmqJobs);
  const tasks = channelTasks(setup, sizes);
  const undiciPosts = await together(
    setup,
    tasks.map((t) => t.webhook),
  );
  const nodemailerSends = await together(
    setup,
    tasks.map((t) => t.email),
  );
  const bothChannels = await bothChannelsLimit(setup, sizes.posts);
  const postgresInsertRows = await insertLimit(setup, sizes.insertRows);
  return { bullmqNoopJobs, undiciPosts, nodemailerSends, bothChannels, postgresInsertRows };
}
