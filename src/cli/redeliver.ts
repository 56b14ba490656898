import { getDeliveries } from '../ledger/index.js';
import { redeliver, waitForAttempts, type RedeliverSelection } from '../ledger/index.js';
import { loadConfig } from '../config.js';
import { assertRedisAnswers, endpointOf } from '../ops/connection-failure.js';
import { createLogger } from '../logger.js';
import { DELIVER_QUEUES } from '../runtime/queues.js';
import { createRuntime } from '../runtime/runtime.js';
import { startWorkers } from '../pipeline/workers.js';
import { parseCommandLine, positiveSecondsOption, UsageError } from './command.js';
import { ledgerColumns, parseSince, parseStatus } from './deliveries.js';
import { formatTable } from './table.js';
import type { CliIo } from './io.js';

const USAGE = `usage: qwn redeliver <delivery id>... [--dry-run] [--enqueue-only] [--timeout-seconds N]
       qwn redeliver --since <time> [--status S | --include-sent] [--dry-run] [--enqueue-only]
                     [--timeout-seconds N]

Sends messages again under their own ids (receivers see the same webhook-id / Message-ID).
By id: those messages. --since: those created since then that failed (retrying or dead);
--status picks one status instead, --include-sent adds the sent ones. --dry-run lists what
would be sent and changes nothing. A time without an offset is in the terminal's zone (TZ).`;

const DEFAULT_TIMEOUT_SECONDS = 120;

const OUTCOME_HEADERS = new Set([
  'id',
  'status',
  'attempts',
  'channel',
  'subscriber',
  'event',
  'next attempt',
  'last error',
]);
const outcomeColumns = (timeZone: string) =>
  ledgerColumns(timeZone).filter((c) => OUTCOME_HEADERS.has(c.header));

function parse(argv: string[], timeZone: string) {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      since: { type: 'string' },
      status: { type: 'string' },
      'include-sent': { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      'enqueue-only': { type: 'boolean' },
      'timeout-seconds': { type: 'string' },
    },
    'redeliver',
    { positionals: true },
  );
  if (values.help) return { help: true as const };
  let selection: RedeliverSelection;
  const includeSent = values['include-sent'] === true;
  if (values.since !== undefined) {
    if (positionals.length > 0) throw new UsageError(`give delivery ids or --since, not both`);
    const since = parseSince(values.since, timeZone);
    if (values.status !== undefined) {
      const status = parseStatus(values.status);
      if (status === 'sent' && !includeSent) {
        throw new UsageError('--status sent resends what already arrived: add --include-sent');
      }
      selection = { since, status };
    } else {
      selection = { since, includeSent };
    }
  } else {
    if (values.status !== undefined) throw new UsageError('--status goes with --since');
    if (includeSent) throw new UsageError('--include-sent goes with --since');
    if (positionals.length === 0) throw new UsageError(`a delivery id or --since is required`);
    selection = { ids: positionals.map((id) => id.trim()) };
  }
  return {
    help: false as const,
    selection,
    enqueueOnly: values['enqueue-only'] === true,
    dryRun: values['dry-run'] === true,
    timeoutMs: positiveSecondsOption(
      values['timeout-seconds'],
      DEFAULT_TIMEOUT_SECONDS,
      '--timeout-seconds',
    ),
  };
}

/**
 * `qwn redeliver`: sends ledger rows again under their own ids (docs/operations.md). By default
 * it runs deliver workers in the foreground until each row has had its attempt and prints the
 * outcome; `--enqueue-only` leaves the sending to a running `qwn worker`.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const options = parse(argv, io.timeZone);
  if (options.help) {
    io.out(USAGE);
    return 0;
  }

  const config = loadConfig(io.env);
  // stdout is the outcome; the pipeline's own log lines are for debugging only.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const logger = createLogger(verbose ? config.logLevel : 'error', io.logs);
  const runtime = createRuntime(config, logger, { upstream: 'none' });
  const redisEndpoint = endpointOf(config, 'Redis');
  if (redisEndpoint) {
    await assertRedisAnswers(runtime.redis, redisEndpoint).catch(async (err: unknown) => {
      await runtime.close();
      throw err;
    });
  }
  // Workers first, so the jobs enqueued below are taken at once.
  const workers =
    options.enqueueOnly || options.dryRun
      ? undefined
      : startWorkers(runtime.ctx, runtime.redis, [...DELIVER_QUEUES]);
  try {
    const result = await redeliver(runtime.ctx, options.selection, { dryRun: options.dryRun });
    for (const id of result.unknown) io.err(`qwn redeliver: no delivery ${id}`);
    for (const s of result.skipped) io.out(`skipped ${s.id}: ${s.detail}`);

    const ids = result.requeued.map((r) => r.id);
    if (options.dryRun) {
      if (ids.length > 0) {
        io.out(formatTable(await getDeliveries(runtime.ctx.db, ids), outcomeColumns(io.timeZone)));
      }
      io.out(
        `dry run (nothing sent or changed): would redeliver ${ids.length} ` +
          `${ids.length === 1 ? 'message' : 'messages'}`,
      );
      return result.unknown.length > 0 ? 1 : 0;
    }
    if (ids.length === 0) {
      if (result.unknown.length === 0 && result.skipped.length === 0) {
        io.out('nothing to redeliver');
      }
      return 'ids' in options.selection ? 1 : 0;
    }
    if (options.enqueueOnly) {
      io.out(
        `${ids.length} ${ids.length === 1 ? 'delivery' : 'deliveries'} set back to pending and ` +
          'enqueued; a running qwn worker sends them',
      );
      return result.unknown.length > 0 ? 1 : 0;
    }

    const { rows, timedOut } = await waitForAttempts(runtime.ctx.db, ids, {
      timeoutMs: options.timeoutMs,
    });
    io.out(formatTable(rows, outcomeColumns(io.timeZone)));
    const count = (status: string) => rows.filter((r) => r.status === status).length;
    const parts = [
      `${count('sent')} sent`,
      `${count('retrying')} retrying`,
      `${count('dead')} dead`,
      ...(count('pending') > 0 ? [`${count('pending')} still pending`] : []),
      ...(result.skipped.length > 0 ? [`${result.skipped.length} skipped`] : []),
    ];
    io.out(`redelivered ${ids.length}: ${parts.join(', ')}`);
    if (timedOut) {
      io.err(
        'qwn redeliver: timed out waiting for the attempts; a running qwn worker or the sweeper ' +
          'finishes them',
      );
    }
    const failed = rows.some((r) => r.status !== 'sent');
    return failed || timedOut || result.unknown.length > 0 ? 1 : 0;
  } finally {
    await workers?.close();
    await runtime.close();
  }
}
