import { CHANNELS_SHOWN, kindOf, subscriberChannelSql } from '../channels/kinds.js';
import { sql } from 'drizzle-orm';
import { EVENT_TYPES } from '../domain/detect.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { queryRows, transaction, type Db } from '../db/client.js';
import type { PauseSnapshot } from '../channels/channel-pause.js';
import type { Logger } from '../logger.js';
import type { JobObserver } from '../runtime/context.js';
import { dueAndHeld } from '../ledger/index.js';
import { isDeliverQueue, QUEUE_NAMES, type QueueName, type Queues } from '../runtime/queues.js';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  MalformedResponseError,
  NetworkError,
  ParameterError,
  RateLimitError,
  TimeoutError,
  UpstreamServerError,
} from '../qweather/errors.js';
import { readEvictionPolicy } from './redis-policy.js';
import { UpstreamCircuitOpenError } from './upstream.js';
import { withTimeout } from './with-timeout.js';

/**
 * `GET /metrics`. Counters are incremented where things happen (the pipeline's upstream hook
 * and job observer); queue gauges and finished cycles are read on scrape.
 *
 * Cycles are facts of the deployment, not of one process (the last check of a cycle may run
 * anywhere), so they are read from `poll_cycles` and each one is claimed in Redis by the first
 * process that reports it: summing `qwn_cycles_total` over all workers counts every cycle once.
 */

const DELIVERY_OUTCOMES = ['sent', 'retrying', 'dead'] as const;
const CYCLE_STATUSES = ['done', 'failed'] as const;
const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

/** Seconds to an hour: a cycle is one list call plus rate-limited checks. */
const CYCLE_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** A cycle's `finished_at` comes from whichever clock closed it; rows commit late, too. */
const CYCLE_OVERLAP_MS = 60_000;
/** The sweeper closes a cycle an hour after it started, so it finishes at most ~1 h later. */
const CYCLE_MAX_SPAN_MS = 3 * 3600_000;
const CLAIM_TTL_SECONDS = 24 * 3600;
const SCRAPE_STEP_TIMEOUT_MS = 2000;

/** The kinds of `qwn_upstream_errors_total`, each present from the start. */
const UPSTREAM_ERROR_KINDS = [
  'retired',
  'auth_error',
  'rate_limited',
  'timeout',
  'network_error',
  'server_error',
  'malformed',
  'bad_request',
  'error',
] as const;

/** The outcome label of an upstream call: the error's class, never its message. */
export function upstreamOutcome(error: unknown): string {
  if (error === null || error === undefined) return 'ok';
  if (error instanceof UpstreamCircuitOpenError) return 'held_back';
  if (error instanceof DeprecatedEndpointError) return 'retired';
  if (error instanceof AuthError) return 'auth_error';
  if (error instanceof RateLimitError) return 'rate_limited';
  if (error instanceof TimeoutError) return 'timeout';
  if (error instanceof NetworkError) return 'network_error';
  if (error instanceof UpstreamServerError) return 'server_error';
  if (error instanceof MalformedResponseError) return 'malformed';
  if (error instanceof BadRequestError || error instanceof ParameterError) return 'bad_request';
  return 'error';
}

export interface MetricsSources {
  readonly logger: Logger;
  readonly db?: Db;
  readonly queues?: Queues;
  /** Claims finished cycles across processes; without it every cycle seen is counted. */
  readonly redis?: {
    set(key: string, value: string, ex: 'EX', seconds: number, nx: 'NX'): Promise<unknown>;
  };
  readonly prefix?: string;
  /** `CONFIG GET <name>` on the queue's Redis, for the eviction policy gauge. */
  readonly readRedisConfig?: (name: string) => Promise<unknown>;
  readonly now?: () => Date;
  /** Cycles that finished before this are someone else's history. */
  readonly startedAt?: Date;
  readonly defaultMetrics?: boolean;
  /** The warning API the deployment polls now (src/detection/upstream-source.ts). */
  readonly upstreamSource?: () => Promise<'v7' | 'v1'>;
  /** The email channel's pause in this process (src/channels/channel-pause.ts). */
  readonly emailPause?: { snapshot(): PauseSnapshot };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class OpsMetrics implements JobObserver {
  readonly registry = new Registry();
  readonly #sources: MetricsSources;
  readonly #now: () => Date;
  /** Cycles already reported by this process (or claimed by another), by finish time. */
  readonly #seenCycles = new Map<string, number>();
  #cycleHighWater: number;

  readonly cycles: Counter<'status'>;
  readonly cycleDuration: Histogram<'status'>;
  readonly upstreamCalls: Counter<'operation' | 'outcome'>;
  readonly upstreamErrors: Counter<'kind'>;
  readonly recordsSkipped: Counter;
  readonly events: Counter<'type'>;
  readonly deliveries: Counter<'channel' | 'outcome'>;
  readonly queueJobs: Gauge<'queue' | 'state'>;
  readonly oldestWaiting: Gauge<'queue'>;
  readonly oldestDue: Gauge;
  readonly messagesHeld: Gauge;
  readonly subscribersDisabled: Gauge<'channel'>;
  readonly redisPolicy: Gauge<'policy'>;
  readonly upstreamSource: Gauge<'source'>;
  readonly pollInterval: Gauge;
  readonly channelPaused: Gauge<'channel'>;

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    this.#now = sources.now ?? (() => new Date());
    this.#cycleHighWater = (sources.startedAt ?? this.#now()).getTime();
    const registers = [this.registry];
    if (sources.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });

    this.cycles = new Counter({
      name: 'qwn_cycles_total',
      help: 'Poll cycles finished, by outcome',
      labelNames: ['status'],
      registers,
    });
    this.cycleDuration = new Histogram({
      name: 'qwn_cycle_duration_seconds',
      help: 'From the start of a poll cycle to its last check',
      labelNames: ['status'],
      buckets: CYCLE_BUCKETS,
      registers,
    });
    this.upstreamCalls = new Counter({
      name: 'qwn_upstream_calls_total',
      help: 'QWeather calls by operation and outcome (after the client retried)',
      labelNames: ['operation', 'outcome'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'qwn_upstream_errors_total',
      help: 'QWeather calls that failed, by kind (malformed: an answer without its array, bad JSON or gzip)',
      labelNames: ['kind'],
      registers,
    });
    this.recordsSkipped = new Counter({
      name: 'qwn_upstream_records_skipped_total',
      help: 'Records of upstream answers that could not be read and were skipped (the place counts no miss)',
      registers,
    });
    this.events = new Counter({
      name: 'qwn_events_total',
      help: 'Warning events detected, by type',
      labelNames: ['type'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'qwn_deliveries_total',
      help: 'Delivery attempts by channel and the state they left the row in',
      labelNames: ['channel', 'outcome'],
      registers,
    });
    this.queueJobs = new Gauge({
      name: 'qwn_queue_jobs',
      help: 'Jobs per queue and state (read on scrape)',
      labelNames: ['queue', 'state'],
      registers,
    });
    this.upstreamSource = new Gauge({
      name: 'qwn_upstream_source',
      help: 'The warning API the deployment polls: 1 for the source in use (read on scrape)',
      labelNames: ['source'],
      registers,
    });
    const emailPause = sources.emailPause;
    this.channelPaused = new Gauge({
      name: 'qwn_channel_paused',
      help: 'A channel this process has paused because its server refused us (the SMTP login): 1 while paused',
      labelNames: ['channel'],
      registers,
      collect() {
        for (const channel of CHANNELS_SHOWN) {
          if (emailPause && kindOf(channel).pausable) {
            this.set({ channel }, emailPause.snapshot().paused ? 1 : 0);
          }
        }
      },
    });
    this.pollInterval = new Gauge({
      name: 'qwn_poll_interval_seconds',
      help: 'The poll period in use: POLL_INTERVAL_SECONDS, or longer to fit QWEATHER_MONTHLY_CALLS',
      registers,
    });
    this.oldestWaiting = new Gauge({
      name: 'qwn_queue_oldest_waiting_seconds',
      help: 'Age of the oldest job ready to run, per queue; 0 when none waits (read on scrape)',
      labelNames: ['queue'],
      registers,
    });

    this.oldestDue = new Gauge({
      name: 'qwn_deliveries_oldest_due_seconds',
      help: 'How long the oldest message due to be sent (its attempt or hold time passed) has waited; 0 when none (read on scrape)',
      registers,
    });
    this.messagesHeld = new Gauge({
      name: 'qwn_messages_held',
      help: 'Messages still collecting, not yet due: grouping, quiet hours or the hourly limit (read on scrape)',
      registers,
    });
    this.subscribersDisabled = new Gauge({
      name: 'qwn_subscribers_disabled',
      help: 'Subscribers whose delivery stopped on its own (a webhook answering 410), per channel (read on scrape)',
      labelNames: ['channel'],
      registers,
    });
    this.redisPolicy = new Gauge({
      name: 'qwn_redis_maxmemory_policy',
      help: "1 for Redis's maxmemory-policy (only noeviction keeps every queued job); no series when CONFIG GET is refused (read on scrape)",
      labelNames: ['policy'],
      registers,
    });

    // Zero series exist from the start, so rate() and alerts see them before the first event.
    for (const status of CYCLE_STATUSES) this.cycles.inc({ status }, 0);
    for (const kind of UPSTREAM_ERROR_KINDS) this.upstreamErrors.inc({ kind }, 0);
    this.recordsSkipped.inc(0);
    for (const type of EVENT_TYPES) this.events.inc({ type }, 0);
    for (const channel of CHANNELS_SHOWN) {
      for (const outcome of DELIVERY_OUTCOMES) this.deliveries.inc({ channel, outcome }, 0);
    }
  }

  /** The pipeline's `onUpstreamResult`. */
  upstreamCall(operation: string, error: unknown): void {
    const outcome = upstreamOutcome(error);
    this.upstreamCalls.inc({ operation, outcome });
    if (outcome !== 'ok' && outcome !== 'held_back') this.upstreamErrors.inc({ kind: outcome });
  }

  jobCompleted(queue: QueueName, payload: unknown, result: unknown): void {
    try {
      if (queue === QUEUE_NAMES.check) this.#countEvents(result);
      else if (isDeliverQueue(queue)) this.#countDelivery(result);
    } catch (err) {
      // Metrics must never fail a job.
      this.#sources.logger.debug({ err, queue }, 'metrics could not read a job result');
    }
  }

  #countEvents(result: unknown): void {
    if (!isRecord(result) || result.applied !== true || !isRecord(result.events)) return;
    if (typeof result.skippedRecords === 'number' && result.skippedRecords > 0) {
      this.recordsSkipped.inc(result.skippedRecords);
    }
    for (const type of EVENT_TYPES) {
      const n = result.events[type];
      if (typeof n === 'number' && n > 0) this.events.inc({ type }, n);
    }
  }

  /** A deliver job's result counts its rows by outcome and channel (`DeliverResult`). */
  #countDelivery(result: unknown): void {
    if (!isRecord(result)) return;
    for (const outcome of DELIVERY_OUTCOMES) {
      const counts = result[outcome];
      if (!isRecord(counts)) continue;
      for (const channel of CHANNELS_SHOWN) {
        const n = counts[channel];
        if (typeof n === 'number' && n > 0) this.deliveries.inc({ channel, outcome }, n);
      }
    }
  }

  /** Cycles that finished since the last scrape, each counted by one process only. */
  async #collectCycles(): Promise<void> {
    const { db, redis, prefix } = this.#sources;
    if (!db) return;
    const since = new Date(this.#cycleHighWater - CYCLE_OVERLAP_MS);
    const rows = await withTimeout(
      'Postgres',
      SCRAPE_STEP_TIMEOUT_MS,
      queryRows<{
        id: string;
        status: string;
        started_at: Date | string;
        finished_at: Date | string;
      }>(
        db,
        sql`SELECT id, status, started_at, finished_at FROM poll_cycles
            WHERE status <> 'running' AND finished_at > ${since}
              AND started_at > ${new Date(since.getTime() - CYCLE_MAX_SPAN_MS)}
            ORDER BY finished_at`,
      ),
    );
    for (const row of rows) {
      if (this.#seenCycles.has(row.id)) continue;
      const startedAt = new Date(row.started_at).getTime();
      const finishedAt = new Date(row.finished_at).getTime();
      const claimed = redis
        ? (await withTimeout(
            'Redis',
            SCRAPE_STEP_TIMEOUT_MS,
            redis.set(`${prefix ?? 'qwn'}:ops:cycle:${row.id}`, '1', 'EX', CLAIM_TTL_SECONDS, 'NX'),
          )) === 'OK'
        : true;
      this.#seenCycles.set(row.id, finishedAt);
      this.#cycleHighWater = Math.max(this.#cycleHighWater, finishedAt);
      if (!claimed) continue;
      this.cycles.inc({ status: row.status });
      this.cycleDuration.observe(
        { status: row.status },
        Math.max(0, finishedAt - startedAt) / 1000,
      );
    }
    const forgetBefore = this.#cycleHighWater - 2 * CYCLE_OVERLAP_MS;
    for (const [id, finishedAt] of this.#seenCycles) {
      if (finishedAt < forgetBefore) this.#seenCycles.delete(id);
    }
  }

  async #collectQueues(): Promise<void> {
    const queues = this.#sources.queues;
    if (!queues) return;
    const now = this.#now().getTime();
    await Promise.all(
      Object.values(QUEUE_NAMES).map(async (name) => {
        const queue = queues.byName[name];
        const counts = await withTimeout(
          'Redis',
          SCRAPE_STEP_TIMEOUT_MS,
          queue.getJobCounts(...JOB_STATES),
        );
        for (const state of JOB_STATES)
          this.queueJobs.set({ queue: name, state }, counts[state] ?? 0);
        const [oldest] = await withTimeout(
          'Redis',
          SCRAPE_STEP_TIMEOUT_MS,
          queue.getJobs(['waiting'], 0, 0, true),
        );
        // A delayed job becomes ready at timestamp + delay; it has waited only since then.
        const readyAt = oldest ? oldest.timestamp + (oldest.delay || 0) : now;
        this.oldestWaiting.set({ queue: name }, Math.max(0, (now - readyAt) / 1000));
      }),
    );
  }

  /** From the ledger, not the queues: a row whose job was lost or is stuck is due all the same. */
  async #collectOldestDue(): Promise<void> {
    const { db } = this.#sources;
    if (!db) return;
    const [row] = await withTimeout(
      'Postgres',
      SCRAPE_STEP_TIMEOUT_MS,
      transaction(db, async (tx) => {
        // The plan's estimate (a read per event of a cycle the size of the average one) is above
        // jit_above_cost: compiling it took 30 ms of a read that runs in 0.2 ms.
        await tx.execute(sql`SET LOCAL jit = off`);
        return queryRows<{ age: number | string | null; held: number }>(
          tx,
          dueAndHeld(this.#now()),
        );
      }),
    );
    this.oldestDue.set(Math.max(0, Number(row?.age ?? 0)));
    this.messagesHeld.set(row?.held ?? 0);
  }

  async #collectSubscribers(): Promise<void> {
    const { db } = this.#sources;
    if (!db) return;
    const rows = await withTimeout(
      'Postgres',
      SCRAPE_STEP_TIMEOUT_MS,
      queryRows<{ channel: string; n: number }>(
        db,
        sql`SELECT ${sql.raw(subscriberChannelSql('u'))} AS channel, count(*)::int AS n
            FROM subscribers u WHERE disabled_reason IS NOT NULL GROUP BY 1`,
      ),
    );
    for (const channel of CHANNELS_SHOWN) {
      this.subscribersDisabled.set({ channel }, rows.find((r) => r.channel === channel)?.n ?? 0);
    }
  }

  async #collectRedisPolicy(): Promise<void> {
    const read = this.#sources.readRedisConfig;
    if (!read) return;
    // Refused (managed Redis often renames CONFIG) or unreadable: no series rather than a guess,
    // and no warning on every scrape; the worker warned once at start.
    const policy = await readEvictionPolicy(read, SCRAPE_STEP_TIMEOUT_MS).catch(() => null);
    this.redisPolicy.reset();
    if (policy !== null) this.redisPolicy.set({ policy }, 1);
  }

  async #collectSource(): Promise<void> {
    if (!this.#sources.upstreamSource) return;
    const current = await this.#sources.upstreamSource();
    for (const source of ['v7', 'v1'] as const) {
      this.upstreamSource.set({ source }, source === current ? 1 : 0);
    }
  }

  /** Brings the read-on-scrape series up to date; a failing source leaves its last values. */
  async collect(): Promise<void> {
    const results = await Promise.allSettled([
      this.#collectCycles(),
      this.#collectQueues(),
      this.#collectOldestDue(),
      this.#collectSubscribers(),
      this.#collectRedisPolicy(),
      this.#collectSource(),
    ]);
    for (const r of results) {
      if (r.status === 'rejected') {
        this.#sources.logger.warn({ err: r.reason as unknown }, 'metrics collection incomplete');
      }
    }
  }

  async scrape(): Promise<{ contentType: string; body: string }> {
    await this.collect();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
