import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { runCycleOnce } from '../pipeline/run-once.js';
import { assertRedisAnswers, endpointOf } from '../ops/connection-failure.js';
import { createRuntime } from '../runtime/runtime.js';
import { assertMigrated } from '../db/problems.js';
import { parseCommandLine, positiveSecondsOption, UsageError } from './command.js';
import { refuseWithoutMail } from './mail-setting.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn poll --once [--timeout-seconds S]';

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(
    argv,
    { once: { type: 'boolean' }, 'timeout-seconds': { type: 'string' } },
    'poll',
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!values.once) {
    throw new UsageError('only "poll --once" exists; "qwn worker" polls on a schedule');
  }
  const timeoutMs =
    values['timeout-seconds'] === undefined
      ? undefined
      : positiveSecondsOption(values['timeout-seconds'], 0, '--timeout-seconds');
  const config = loadConfig(io.env);
  // Logs go to stderr: stdout's last line is the summary a script reads.
  const logger = createLogger(config.logLevel, io.logs);
  const runtime = createRuntime(config, logger, io.now ? { now: io.now } : {});
  try {
    const redis = endpointOf(config, 'Redis');
    if (redis) await assertRedisAnswers(runtime.redis, redis);
    await assertMigrated(runtime.ctx.db);
    await refuseWithoutMail(runtime.ctx.db, config);
    const summary = await runCycleOnce(
      runtime.ctx,
      runtime.redis,
      timeoutMs === undefined ? {} : { timeoutMs },
    );
    const { ok, ...line } = summary;
    io.out(JSON.stringify(line));
    return ok ? 0 : 1;
  } finally {
    await runtime.close();
  }
}
