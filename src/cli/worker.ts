import os from 'node:os';
import v8 from 'node:v8';
import { createUnsubscribeEndpoint } from '../admin/unsubscribe.js';
import { loadConfig, type Config } from '../config.js';
import { createLogger, registerSecret, type Logger } from '../logger.js';
import { probeHealth } from '../ops/health.js';
import { PortInUseError, startOpsServer, type OpsServer } from '../ops/http-server.js';
import { OpsMetrics } from '../ops/metrics.js';
import { checkEvictionPolicy } from '../ops/redis-policy.js';
import { smallHeapWarning } from '../ops/memory.js';
import { UpstreamMonitor } from '../ops/upstream.js';
import { DELIVER_QUEUES } from '../runtime/queues.js';
import { fitPollToBudget } from '../pipeline/poll-budget.js';
import { currentSource } from '../detection/upstream-source.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import {
  ensureRecurring,
  scheduleRecurring,
  startWorkers,
  type WorkerSet,
} from '../pipeline/workers.js';
import { assertMigrated } from '../db/problems.js';
import { parseCommandLine } from './command.js';
import { refuseWithoutMail } from './mail-setting.js';
import type { CliIo } from './io.js';

const HELP = `usage: qwn worker

The long-running service: polls QWeather every POLL_INTERVAL_SECONDS, checks the places that
matter, delivers every notification, and serves GET /healthz and GET /metrics on
HTTP_HOST:HTTP_PORT (default 127.0.0.1:9464). Run several for redundancy: they share the work
through Redis. SIGTERM lets the jobs in flight finish for up to 25 s.

It refuses to start on a database that is not migrated (run qwn migrate), and without SMTP_URL
while email subscribers exist.`;

/**
 * How long in-flight jobs get to finish after SIGTERM before they are handed back to Redis.
 * Orchestrators must wait longer than this before SIGKILL (compose: stop_grace_period).
 */
const SHUTDOWN_GRACE_MS = 25_000;
/** Closing queues, Redis and Postgres after the workers; past this the process just exits. */
const CLOSE_MARGIN_MS = 10_000;
/** How often the worker makes sure Redis still holds the poll and sweep schedulers. */
const SCHEDULER_CHECK_MS = 10_000;

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(argv, {}, 'worker');
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  const config = loadConfig(io.env);
  const logger = createLogger(config.logLevel);
  registerSecret(config.unsubscribeSecret);
  const startedAt = new Date();
  warnWithoutUnsubscribe(config, logger);
  warnOfSmallHeap(logger);

  // Held back calls and health both read what the upstream last answered.
  const upstream = new UpstreamMonitor();
  // `metrics` is built on the runtime's connections below; no job runs before that.
  const runtime: Runtime = createRuntime(config, logger, {
    onUpstreamResult: (operation, error) => {
      upstream.record(operation, error);
      metrics.upstreamCall(operation, error);
    },
    metrics: {
      jobCompleted: (queue, payload, result) => metrics.jobCompleted(queue, payload, result),
    },
    upstreamGate: upstream,
  });
  const { ctx, redis } = runtime;
  const metrics = new OpsMetrics({
    logger,
    db: ctx.db,
    queues: ctx.queues,
    redis,
    prefix: config.queuePrefix,
    readRedisConfig: (name) => redis.config('GET', name),
    startedAt,
    upstreamSource: () => currentSource(ctx.db, config),
    emailPause: ctx.emailPause,
  });

  try {
    await refuseToStartBroken(ctx.db, config);
  } catch (err) {
    await runtime.close();
    throw err;
  }

  // Production hygiene: nothing dies silently or unstructured.
  const onRejection = (reason: unknown) => logger.error({ err: reason }, 'unhandled rejection');
  const onException = (err: Error) => {
    logger.fatal({ err }, 'uncaught exception, exiting');
    process.exit(1);
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);

  // Listening from the start: a SIGTERM during a hung startup must still stop the process.
  let signalled = false;
  let onSignal: (signal: NodeJS.Signals) => void = () => undefined;
  const stopping = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = (signal) => {
      if (signalled) {
        logger.warn({ signal }, 'second signal, exiting without waiting for jobs');
        process.exit(1);
      }
      signalled = true;
      resolve(signal);
    };
  });
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let server: OpsServer | undefined;
  let workers: WorkerSet | undefined;
  let schedulerCheck: NodeJS.Timeout | undefined;
  let exitCode = 0;
  let startError: PortInUseError | undefined;
  try {
    server = await startOpsServer({
      host: config.httpHost,
      port: config.httpPort,
      logger,
      health: () =>
        probeHealth({
          db: ctx.db,
          redis,
          upstream,
          emailPause: ctx.emailPause,
          pollIntervalSeconds: config.pollIntervalSeconds,
          startedAt,
        }),
      metrics: () => metrics.scrape(),
      ...(config.unsubscribeSecret
        ? {
            unsubscribe: createUnsubscribeEndpoint({
              db: ctx.db,
              secret: config.unsubscribeSecret,
              logger,
            }),
          }
        : {}),
    });
    await checkEvictionPolicy((name) => redis.config('GET', name), logger);

    const started = await Promise.race([
      scheduleRecurring(ctx).then(() => 'started' as const),
      stopping.then(() => 'stopped' as const),
    ]);
    if (started === 'started') {
      workers = startWorkers(ctx, redis, ['poll', 'check', ...DELIVER_QUEUES, 'sweep']);
      // Redis losing its keys (restart without persistence, flush) would otherwise stop all
      // polling for good (found by the fault suite: test/faults/infrastructure.test.ts).
      // QWEATHER_MONTHLY_CALLS: the v1 cycle is lengthened to fit (src/pipeline/poll-budget.ts).
      metrics.pollInterval.set(await fitPollToBudget(ctx, logger));
      schedulerCheck = setInterval(() => {
        ensureRecurring(ctx)
          .then((declared) => {
            if (declared) logger.warn('recurring jobs were missing from Redis, declared again');
            return fitPollToBudget(ctx, logger);
          })
          .then(
            (seconds) => metrics.pollInterval.set(seconds),
            (err: unknown) => logger.warn({ err }, 'could not check the recurring jobs'),
          );
      }, SCHEDULER_CHECK_MS);
      logger.info(
        {
          pollIntervalSeconds: config.pollIntervalSeconds,
          source: config.qweather.alertSource,
          httpPort: server.port,
        },
        'worker started',
      );
    }
  } catch (err) {
    // A port in use is the operator's to fix, said in one line by the CLI after the cleanup.
    if (err instanceof PortInUseError) startError = err;
    else logger.error({ err }, 'worker could not start');
    exitCode = 1;
  }

  const signal = exitCode === 0 ? await stopping : null;
  logger.info({ signal }, 'worker stopping');
  const hardStop = setTimeout(() => {
    logger.error({ timeoutMs: SHUTDOWN_GRACE_MS + CLOSE_MARGIN_MS }, 'shutdown hung, exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS + CLOSE_MARGIN_MS);
  hardStop.unref();

  clearInterval(schedulerCheck);
  await server?.close();
  await workers?.close(SHUTDOWN_GRACE_MS);
  await runtime.close();
  clearTimeout(hardStop);
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  process.off('unhandledRejection', onRejection);
  process.off('uncaughtException', onException);
  logger.info({ exitCode }, 'worker stopped');
  if (startError) throw startError;
  return exitCode;
}

/**
 * What would make every cycle fail or every email dead is refused before the first job: a
 * database behind the code's migrations, and email subscribers with no SMTP_URL to send with.
 */
async function refuseToStartBroken(db: Runtime['ctx']['db'], config: Config): Promise<void> {
  await assertMigrated(db);
  await refuseWithoutMail(db, config);
}

/**
 * A worker whose heap Node sized from a small container limit runs a storm at the heap's edge,
 * slowly and with nothing said: once at start, it says so (docs/operations.md, "Memory").
 */
function warnOfSmallHeap(logger: Logger): void {
  const small = smallHeapWarning({
    heapLimitBytes: v8.getHeapStatistics().heap_size_limit,
    memoryLimitBytes: process.constrainedMemory(),
    totalMemoryBytes: os.totalmem(),
  });
  if (small) logger.warn(small, 'heap too small for a national storm: give the worker 1 GiB');
}

/**
 * Without both settings emails carry no List-Unsubscribe at all: a header pointing at a mailbox
 * nobody reads would promise an unsubscribe that never happens (docs/subscribers.md).
 */
function warnWithoutUnsubscribe(config: Config, logger: Logger): void {
  const missing = [
    ...(config.publicUrl ? [] : ['PUBLIC_URL']),
    ...(config.unsubscribeSecret ? [] : ['UNSUBSCRIBE_SECRET']),
  ];
  if (missing.length === 0) return;
  logger.warn(
    { missing },
    'emails carry no working unsubscribe link: set PUBLIC_URL and UNSUBSCRIBE_SECRET',
  );
}
