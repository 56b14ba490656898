import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig, type Config } from '../src/config.js';
import { openPostgres } from '../src/db/client.js';
import { createScratchDatabase, type ScratchDatabase } from '../src/db/scratch.js';
import { createLogger } from '../src/logger.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { deletePrefixKeys } from '../src/runtime/queues.js';
import { insertData, type BenchData, type BenchSource } from './data.js';
import { exited, forkTs, leaveToJanitor, nextMessage } from './procs.js';
import { BENCH_SESSION_NAME } from './stats.js';

/**
 * One pipeline under test: a database of its own holding the bench data, a Redis key prefix of
 * its own, the runner's statistics connections, and the worker processes. The run's main
 * pipeline measures the three scenarios; with `--peer`, a second one measures the storm again
 * for webhook subscribers only.
 */
export interface BenchPipeline {
  readonly database: ScratchDatabase;
  readonly config: Config;
  readonly runtime: ReturnType<typeof createRuntime>;
  /** Table statistics and backend CPU. */
  readonly stats: pg.Client;
  /** Backend activity, sampled while a cycle runs. */
  readonly activity: pg.Client;
  /** The uuid of each bench subscriber, by index. */
  readonly subscriberIds: readonly string[];
  /** Starts `count` worker processes and resolves with their pids once each is ready. */
  startWorkers(count: number, options: { nodeArgs: string[]; logName: string }): Promise<number[]>;
  /** Stops the workers, closes the connections, removes the Redis keys and the database. */
  close(): Promise<void>;
}

export interface PipelineOptions {
  /** Any database of the Postgres server: the pipeline's own is created there. */
  serverUrl: string;
  redisUrl: string;
  /** The runner's Redis connection, for removing the pipeline's keys at the end. */
  redis: Redis;
  upstreamUrl: string;
  smtpUrl: string;
  webhookOrigin: string;
  logLevel: string;
  checkConcurrency?: string | undefined;
  deliveryConcurrency?: string | undefined;
  /** v7 runs as the default configuration does (auto, which polls v7 until it is retired). */
  source: BenchSource;
  data: BenchData;
  /** Leave the database behind (its URL is said). */
  keep: boolean;
  say: (line: string) => void;
}

export async function openPipeline(o: PipelineOptions): Promise<BenchPipeline> {
  const database = await createScratchDatabase(o.serverUrl, 'qwn_bench');
  if (!o.keep) leaveToJanitor({ type: 'database', serverUrl: o.serverUrl, name: database.name });
  const prefix = `qwn-bench-${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: o.redisUrl,
    QUEUE_PREFIX: prefix,
    QWEATHER_API_URL: o.upstreamUrl,
    // The default 3000 a minute would make the quiet cycle alone last a minute (issue 6).
    QWEATHER_QPM: '1000000',
    SMTP_URL: o.smtpUrl,
    MAIL_FROM: 'qwn alerts <alerts@bench.qwn.test>',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: o.logLevel,
    TZ: 'UTC',
    ...(o.checkConcurrency ? { CHECK_CONCURRENCY: o.checkConcurrency } : {}),
    ...(o.deliveryConcurrency ? { DELIVERY_CONCURRENCY: o.deliveryConcurrency } : {}),
    ...(o.source === 'v1' ? { QWEATHER_ALERT_SOURCE: 'v1' } : {}),
  };
  const config = loadConfig(env);
  const stats = new pg.Client({
    connectionString: database.url,
    application_name: `${BENCH_SESSION_NAME} stats`,
  });
  const activity = new pg.Client({
    connectionString: database.url,
    application_name: `${BENCH_SESSION_NAME} activity`,
  });
  const runtime = createRuntime(config, createLogger('error'));
  const workers: ChildProcess[] = [];
  const logFds: number[] = [];

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const w of workers) if (w.exitCode === null) w.kill('SIGTERM');
      await Promise.all(workers.map(exited));
      for (const fd of logFds) closeSync(fd);
      await runtime.close();
      await stats.end().catch(() => undefined);
      await activity.end().catch(() => undefined);
      await deletePrefixKeys(o.redis, prefix);
      if (o.keep) o.say(`kept ${database.url}`);
      else await database.drop();
    })());

  try {
    o.say(`database ${database.url}, queue prefix ${prefix}`);
    const migrator = openPostgres(database.url, { poolSize: 2 });
    await migrator.migrate();
    await migrator.close();
    // A lost connection surfaces on the next query; without listeners it would end the process.
    stats.on('error', (err) => o.say(`stats connection: ${err.message}`));
    activity.on('error', (err) => o.say(`activity connection: ${err.message}`));
    await stats.connect();
    await activity.connect();
    const subscriberIds = await insertData(runtime.ctx.db, o.data, o.webhookOrigin);
    return {
      database,
      config,
      runtime,
      stats,
      activity,
      subscriberIds,
      async startWorkers(count, options) {
        // Only these wait for 'ready': a worker started by an earlier call sent it long ago.
        const started = Array.from({ length: count }, (_, i) => {
          const fd = openSync(join(os.tmpdir(), `qwn-bench-${options.logName}-${i}.log`), 'w');
          logFds.push(fd);
          return forkTs('./worker.ts', [], { env, logFd: fd, nodeArgs: options.nodeArgs });
        });
        workers.push(...started);
        await Promise.all(started.map((w) => nextMessage(w, 'ready')));
        return started.map((w) => w.pid!);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
