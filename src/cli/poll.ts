import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig, readEnvironment } from '../config.js';
import { createLogger } from '../logger.js';
import { runCycleOnce } from '../pipeline/run-once.js';
import { MissingSettingError, createRuntime } from '../pipeline/runtime.js';
import { UsageError } from './command.js';

export async function run(argv: string[]): Promise<number> {
  let values: { once?: boolean; 'timeout-seconds'?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { once: { type: 'boolean' }, 'timeout-seconds': { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (!values.once) {
    throw new UsageError('only "poll --once" exists; "qwn worker" polls on a schedule');
  }
  const timeoutSeconds = Number(values['timeout-seconds'] ?? 600);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    throw new UsageError('--timeout-seconds must be a positive number');
  }
  const config = loadConfig(readEnvironment());
  // Logs go to stderr: stdout's last line is the summary a script reads.
  const logger = createLogger(config.logLevel, pino.destination(2));
  let runtime;
  try {
    runtime = createRuntime(config, logger);
  } catch (err) {
    if (err instanceof MissingSettingError) throw new UsageError(err.message);
    throw err;
  }
  try {
    const summary = await runCycleOnce(runtime.ctx, runtime.redis, {
      timeoutMs: timeoutSeconds * 1000,
    });
    const { ok, error, ...line } = summary;
    console.log(JSON.stringify(error ? { ...line, error } : line));
    return ok ? 0 : 1;
  } finally {
    await runtime.close();
  }
}
