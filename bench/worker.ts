import { loadConfig, readEnvironment } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { DELIVER_QUEUES } from '../src/runtime/queues.js';
import { startWorkers } from '../src/pipeline/workers.js';

/**
 * A pipeline worker process for the bench: the same `createRuntime` and `startWorkers` as
 * `qwn worker`, without the scheduler (the bench starts each cycle itself, so that a cycle
 * begins exactly when it measures) and without the sweeper (nothing is lost in a bench; a
 * sweep would only add noise). Its own process, so CPU and peak RSS are measured per worker.
 */
const config = loadConfig(readEnvironment());
const logger = createLogger(config.logLevel);
const runtime = createRuntime(config, logger);
const workers = startWorkers(runtime.ctx, runtime.redis, ['check', ...DELIVER_QUEUES]);
await Promise.all(workers.workers.map((w) => w.waitUntilReady()));
process.send?.({ type: 'ready' });

const stop = async () => {
  await workers.close(10_000);
  await runtime.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
// The runner owns this process: when it goes, so does the worker.
process.once('disconnect', () => void stop());
