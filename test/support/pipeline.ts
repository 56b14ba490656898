import { randomBytes } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { loadConfig, type Config } from '../../src/config.js';
import { queryRows, type Db } from '../../src/db/client.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { UpstreamMonitor } from '../../src/ops/upstream.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { deletePrefixKeys } from '../../src/runtime/queues.js';
import type { PipelineContext } from '../../src/runtime/context.js';
import { SHOWN_STATUS } from '../../src/ledger/list.js';
import { runDeliver } from '../../src/pipeline/deliver.js';
import {
  startSimulator,
  type Simulator,
  type SimulatorOptions,
} from '../../src/simulator/index.js';
import { sampleWarning } from '../channels/fixtures.js';
import { qwnInProcess } from './cli.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { startSmtpSink, type SmtpSink } from './smtp-sink.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export const TEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface DeliveryRow {
  id: string;
  message_id: string;
  subscriber: string;
  warning_id: string;
  event_type: string;
  channel: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

export interface QwnResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface PollResult extends QwnResult {
  summary: Record<string, unknown> & {
    events: Record<string, number>;
    deliveries: Record<string, number>;
  };
}

/**
 * Real parts for pipeline tests: a fresh database, a private BullMQ prefix on the local Redis,
 * the simulator over HTTP, an SMTP sink and a webhook receiver.
 */
/** The subscriber's `group` seed field, as stored (`group_mode`, `group_window_seconds`). */
export type GroupMode = 'none' | 'cycle' | { windowSeconds: number };

/** A clock for a command: `now` instead of the system's. */
export interface Clock {
  now?: () => Date;
}

export interface PipelineHarness {
  readonly database: TestDatabase;
  readonly sim: Simulator;
  readonly smtp: SmtpSink;
  readonly hooks: WebhookReceiver;
  readonly prefix: string;
  /** The environment a `qwn` child process needs to use all of the above. */
  readonly env: Record<string, string>;
  readonly config: Config;
  /** An in-process runtime on the same parts (closed with the harness). */
  runtime(overrides?: Record<string, string>, options?: { now?: () => Date }): Runtime;
  /** A runtime whose upstream results feed a monitor that gates its calls, as the worker's. */
  monitoredRuntime(logger?: Logger): { runtime: Runtime; monitor: UpstreamMonitor };
  addPlace(id: string, name: string, tz?: string): Promise<void>;
  /** An email subscriber; it groups by cycle unless `group` says otherwise (docs/messages.md). */
  addEmailSubscriber(
    email: string,
    places: string[],
    filter?: { minLevel?: string; types?: string[]; events?: string[] },
    group?: GroupMode,
  ): Promise<string>;
  /** A webhook subscriber; one message per notification unless `group` says otherwise. */
  addWebhookSubscriber(
    path: string,
    places: string[],
    filter?: { minLevel?: string; types?: string[]; events?: string[] },
    group?: GroupMode,
  ): Promise<string>;
  /** A chat-robot subscriber (docs/messages.md) posting to `url`; its grouping as given. */
  addRobotSubscriber(
    vendor: 'wecom' | 'dingtalk' | 'feishu',
    url: string,
    places: string[],
    options?: { name?: string; secret?: string; groupMode?: 'none' | 'cycle' },
  ): Promise<string>;
  deliveries(): Promise<DeliveryRow[]>;
  /**
   * `qwn <args>` on the harness environment, in this process (test/support/cli.ts); a failed
   * exit is not thrown.
   */
  qwn(args: string[], extraEnv?: Record<string, string>, clock?: Clock): Promise<QwnResult>;
  /** `qwn poll --once`, on the system's clock or on `clock.now` (a test moving time). */
  pollOnce(extraEnv?: Record<string, string>, clock?: Clock): Promise<PollResult>;
  close(): Promise<void>;
}

export async function startPipelineHarness(
  options: { env?: Record<string, string>; simulator?: SimulatorOptions } = {},
): Promise<PipelineHarness> {
  const database = await createTestDatabase();
  const sim = await startSimulator(options.simulator);
  const smtp = await startSmtpSink();
  const hooks = await startWebhookReceiver({ secret: TEST_SECRET });
  const prefix = `qwn-test-${randomBytes(5).toString('hex')}`;
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    QWEATHER_API_URL: sim.url,
    SMTP_URL: smtp.url,
    MAIL_FROM: 'qwn alerts <alerts@qwn.test>',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    QWEATHER_TIMEOUT_MS: '3000',
    // Small pools: test files run side by side on one Postgres (max_connections 100).
    CHECK_CONCURRENCY: '4',
    DELIVERY_CONCURRENCY: '8',
    LOG_LEVEL: 'warn',
    // Cycles here follow one another within seconds: an end after two misses is told at once
    // (tests of the time rule set their own).
    EXPIRE_AFTER_SECONDS: '0',
    ...options.env,
  };
  const config = loadConfig(env);
  const runtimes: Runtime[] = [];

  const subscribe = async (
    subscriberId: string,
    places: string[],
    filter: { minLevel?: string; types?: string[]; events?: string[] } = {},
  ) => {
    for (const place of places) {
      await database.db.execute(sql`
        INSERT INTO subscriptions (subscriber_id, place_id, min_level, types, events)
        VALUES (${subscriberId}, ${place}, ${filter.minLevel ?? null},
                ${sql.param(filter.types ?? null)}, ${sql.param(filter.events ?? null)})`);
    }
  };

  const qwn: PipelineHarness['qwn'] = async (args, extraEnv = {}, clock = {}) => {
    const result = await qwnInProcess(args, { env: { ...env, ...extraEnv }, ...clock });
    return { ...result, code: result.code ?? 1 };
  };

  return {
    database,
    sim,
    smtp,
    hooks,
    prefix,
    env,
    config,
    runtime(overrides = {}, options = {}) {
      const runtime = createRuntime(
        loadConfig({ ...env, ...overrides }),
        createLogger(overrides.LOG_LEVEL ?? 'silent'),
        { database, ...options },
      );
      runtimes.push(runtime);
      return runtime;
    },
    monitoredRuntime(logger = createLogger('silent')) {
      const monitor = new UpstreamMonitor();
      const runtime = createRuntime(config, logger, {
        database,
        onUpstreamResult: (operation, error) => monitor.record(operation, error),
        upstreamGate: monitor,
      });
      runtimes.push(runtime);
      return { runtime, monitor };
    },
    async addPlace(id, name, tz = 'Asia/Shanghai') {
      await database.db.execute(
        sql`INSERT INTO places (id, name, tz) VALUES (${id}, ${name}, ${tz}) ON CONFLICT DO NOTHING`,
      );
    },
    async addEmailSubscriber(email, places, filter, group) {
      const [row] = await queryRows<{ id: string }>(
        database.db,
        sql`INSERT INTO subscribers (name, email, group_mode, group_window_seconds)
            VALUES (${email}, ${email}, ${groupMode(group)}, ${groupWindow(group)}) RETURNING id`,
      );
      await subscribe(row!.id, places, filter);
      return row!.id;
    },
    async addWebhookSubscriber(path, places, filter, group) {
      const [row] = await queryRows<{ id: string }>(
        database.db,
        sql`INSERT INTO subscribers (name, webhook_url, webhook_secret, group_mode,
              group_window_seconds)
            VALUES (${path}, ${hooks.url(path)}, ${TEST_SECRET}, ${groupMode(group)},
              ${groupWindow(group)}) RETURNING id`,
      );
      await subscribe(row!.id, places, filter);
      return row!.id;
    },
    async addRobotSubscriber(vendor, url, places, options = {}) {
      const [row] = await queryRows<{ id: string }>(
        database.db,
        sql`INSERT INTO subscribers (name, robot_kind, robot_url, robot_secret, group_mode)
            VALUES (${options.name ?? `${vendor} robot`}, ${vendor}, ${url},
                    ${options.secret ?? null}, ${options.groupMode ?? null})
            RETURNING id`,
      );
      await subscribe(row!.id, places);
      return row!.id;
    },
    deliveries() {
      return queryRows<DeliveryRow>(
        database.db,
        sql`SELECT d.id, d.message_id, coalesce(s.email, s.name) AS subscriber, d.warning_id,
              d.event_type, d.channel,
              ${SHOWN_STATUS} AS status, coalesce(m.attempts, 0) AS attempts, m.last_error
            FROM deliveries d JOIN subscribers s ON s.id = d.subscriber_id
            LEFT JOIN messages m ON m.id = d.message_id
            ORDER BY d.created_at, subscriber, d.warning_id, d.event_type`,
      );
    },
    qwn,
    async pollOnce(extraEnv = {}, clock = {}) {
      const result = await qwn(['poll', '--once'], extraEnv, clock);
      const lines = result.stdout.trim().split('\n');
      let summary: PollResult['summary'];
      try {
        summary = JSON.parse(lines[lines.length - 1] ?? '') as PollResult['summary'];
      } catch {
        throw new Error(
          `poll --once printed no summary (exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
        );
      }
      return { ...result, summary };
    },
    async close() {
      for (const r of runtimes) await r.close();
      const redis = new Redis(env.REDIS_URL!);
      try {
        await deletePrefixKeys(redis, prefix);
      } finally {
        redis.disconnect();
      }
      await Promise.allSettled([sim.close(), smtp.close(), hooks.close()]);
      await database.drop();
    },
  };
}

const groupMode = (group: GroupMode | undefined): string | null =>
  group === undefined ? null : typeof group === 'string' ? group : 'window';
const groupWindow = (group: GroupMode | undefined): number | null =>
  typeof group === 'object' ? group.windowSeconds : null;

/**
 * Notifications whose cycle is not their event's. `createdInCycle` (src/ledger/lookups.ts)
 * finds a cycle's notifications through its events, so there must be none.
 */
export async function notificationsOutsideTheirEventsCycle(db: Db): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`SELECT d.id FROM deliveries d
        WHERE NOT EXISTS (SELECT 1 FROM events e
                          WHERE e.id = d.event_id AND e.cycle_id IS NOT DISTINCT FROM d.cycle_id)`,
  );
  return rows.map((r) => r.id);
}

/** A running poll cycle that plans `planned` checks, for tests that run checks by hand; its id. */
export async function newCycle(db: Db, planned = 1): Promise<string> {
  const [cycle] = await queryRows<{ id: string }>(
    db,
    sql`INSERT INTO poll_cycles (planned) VALUES (${planned}) RETURNING id`,
  );
  return cycle!.id;
}

/**
 * A running poll cycle and one `new` event of it at `placeId`, its record a sample warning, as a
 * check would have written them before its notifications; the warning id is the cycle's unless
 * given.
 */
export async function insertCycleEvent(
  db: Db,
  placeId: string,
  warningId?: string,
): Promise<{ cycleId: string; eventId: number }> {
  const [cycle] = await queryRows<{ id: string }>(
    db,
    sql`INSERT INTO poll_cycles (status) VALUES ('running') RETURNING id`,
  );
  const id = warningId ?? cycle!.id;
  const [event] = await queryRows<{ id: number }>(
    db,
    sql`INSERT INTO events (cycle_id, place_id, warning_id, type, record)
        VALUES (${cycle!.id}, ${placeId}, ${id}, 'new',
                ${JSON.stringify(sampleWarning({ id }))}::jsonb) RETURNING id`,
  );
  return { cycleId: cycle!.id, eventId: event!.id };
}

/** The job that owns message `id`'s first attempt (an SQL expression of type uuid). */
export function firstJobOf(id: SQL): SQL {
  return sql`(SELECT f.first_job_id FROM messages f WHERE f.id = ${id})`;
}

/**
 * One deliver job for one message, and what it did with it: run as the job that owns the
 * message's first attempt, when one does, as BullMQ would run that job.
 */
export async function deliverOne(
  ctx: PipelineContext,
  messageId: string,
): Promise<'sent' | 'retrying' | 'dead' | 'released' | 'waiting' | 'skipped'> {
  const [owner] = await queryRows<{ first_job_id: string | null }>(
    ctx.db,
    sql`SELECT ${firstJobOf(sql`${messageId}::uuid`)} AS first_job_id`,
  );
  const r = await runDeliver(ctx, { messageIds: [messageId] }, owner?.first_job_id ?? undefined);
  for (const outcome of ['sent', 'retrying', 'dead'] as const) {
    if (r[outcome].email + r[outcome].webhook + r[outcome].robot > 0) return outcome;
  }
  if (r.waiting > 0) return 'waiting';
  return r.released > 0 ? 'released' : 'skipped';
}
