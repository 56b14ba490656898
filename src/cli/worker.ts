import { parseArgs } from 'node:util';
import { loadConfig, readEnvironment } from '../config.js';
import { createLogger } from '../logger.js';
import { MissingSettingError, createRuntime } from '../pipeline/runtime.js';
import { scheduleRecurring, startWorkers } from '../pipeline/workers.js';
import { UsageError } from './command.js';

/** How long in-flight jobs get to finish after SIGTERM before they are handed back to Redis. */
const SHUTDOWN_GRACE_MS = 25_000;

export async function run(argv: string[]): Promise<number> {
  try {
    parseArgs({ args: argv, options: {}, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const config = loadConfig(readEnvironment());
  const logger = createLogger(config.logLevel);
  let runtime;
  try {
    runtime = createRuntime(config, logger);
  } catch (err) {
    if (err instanceof MissingSettingError) throw new UsageError(err.message);
    throw err;
  }
  const { ctx, redis } = runtime;
  process.on('unhandledRejection', (reason) =>
    logger.error({ err: reason }, 'unhandled rejection'),
  );

  await scheduleRecurring(ctx);
  const workers = startWorkers(ctx, redis, ['poll', 'check', 'deliver', 'sweep']);
  logger.info(
    { pollIntervalSeconds: config.pollIntervalSeconds, source: config.qweather.alertSource },
    'worker started',
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  logger.info({ signal }, 'worker stopping');
  await workers.close(SHUTDOWN_GRACE_MS);
  await runtime.close();
  logger.info('worker stopped');
  return 0;
}
