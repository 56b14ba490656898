import { constants } from 'node:os';
import { resolve } from 'node:path';
import { DemoDatabaseError } from '../demo/database.js';
import { RedisUnavailableError } from '../demo/redis.js';
import { DemoFailedError, DemoInterruptedError, runDemo } from '../demo/run.js';
import { scrub } from '../logger.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn demo [--mail-dir DIR]';

const HELP = `${USAGE}

Runs the real pipeline (BullMQ workers, Postgres, the email and webhook channels) against the
built-in QWeather simulator playing a storyline, and prints what happens cycle by cycle.

  Postgres  DATABASE_URL unset: an embedded Postgres (PGlite) in memory. Set: a throwaway
            database qwn_demo_<random> is created on that server and dropped at the end; the
            database the URL names is never touched.
  Redis     REDIS_URL (default redis://127.0.0.1:6379) when it answers, under a private queue
            prefix whose keys are deleted at the end; otherwise a redis-server started for the
            demo on a free port and stopped at the end.
  Mail      an SMTP sink saving .eml files in --mail-dir (default .demo/mail/<time>/).
  Webhooks  a sink verifying every Standard Webhooks signature.
  Logs      LOG_LEVEL (default warn for the demo), on stderr.

Ctrl-C stops after the current cycle and stops everything the demo started; a second Ctrl-C
exits at once (a redis-server the demo started is still killed).`;

function timestamp(now: Date): string {
  return now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
}

/**
 * The signals that stop the demo as Ctrl-C does, every server it started with it. SIGHUP is a
 * closed terminal: left to its default, it ended the demo at once and left a redis-server the
 * demo had started running (that server has a process group of its own, so no signal reaches it).
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];
/** A shell's code for a process a signal stopped. */
const exitCodeOf = (signal: StopSignal): number => 128 + constants.signals[signal];

/**
 * `qwn demo` (docs/operations.md): the whole pipeline on built-in defaults. Exit 0 when the story ran
 * to its end, 1 when something it needs is missing or a cycle failed, 128 + the signal's number
 * when stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129).
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(argv, { 'mail-dir': { type: 'string' } }, 'demo');
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  // One folder per run, so the messages of one story stay together.
  const mailDir = resolve(values['mail-dir'] ?? `.demo/mail/${timestamp(new Date())}`);

  const interrupt = new AbortController();
  let stoppedBy: StopSignal = 'SIGINT';
  const onSignal = (signal: StopSignal) => {
    if (interrupt.signal.aborted) {
      // A second signal means now: the exit hook still stops a redis-server the demo started.
      process.exit(exitCodeOf(signal));
    }
    stoppedBy = signal;
    io.err('qwn demo: interrupted, stopping everything it started…');
    interrupt.abort();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    await runDemo({
      env: io.env,
      print: (line) => io.out(line),
      mailDir,
      signal: interrupt.signal,
    });
    return 0;
  } catch (err) {
    if (err instanceof DemoInterruptedError) return exitCodeOf(stoppedBy);
    if (
      err instanceof RedisUnavailableError ||
      err instanceof DemoDatabaseError ||
      err instanceof DemoFailedError
    ) {
      io.err(`qwn demo: ${scrub(err.message)}`);
      return 1;
    }
    throw err;
  } finally {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
  }
}
