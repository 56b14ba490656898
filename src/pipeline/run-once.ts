import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { queryRows } from '../db/client.js';
import type { PipelineContext } from '../runtime/context.js';
import {
  cycleStatus,
  firstAttemptsOwed,
  releaseOverdueCycles,
  requeueDueMessages,
} from '../ledger/index.js';
import { runPoll } from './poll.js';
import { DELIVER_QUEUES } from '../runtime/queues.js';
import { startWorkers } from './workers.js';

interface MessageStates {
  sent: number;
  failed: number;
  pending: number;
  held: number;
}

/** The `poll --once` summary line (docs/operations.md). */
export interface CycleSummary {
  cycle: string;
  listed: number;
  checked: number;
  upstreamCalls: number;
  upstreamErrors: number;
  /** Records of the cycle's answers that could not be read (README, promises). */
  skippedRecords: number;
  /** Calls in English for English subscribers, beside `upstreamCalls` (README, promises). */
  englishCalls: number;
  events: { new: number; update: number; cancel: number; expired: number; resumed: number };
  /** The cycle's notifications by the state of their messages; `held` still collecting. */
  deliveries: MessageStates;
  /** The messages that carry them, and the held messages sent because their hold ended. */
  messages: MessageStates & { released: number };
  /** The warning API the cycle polled (docs/configuration.md); null if it failed before choosing. */
  source: 'v7' | 'v1' | null;
  ok: boolean;
  error?: string;
}

interface CycleRow {
  status: string;
  listed: number;
  checked: number;
  upstream_calls: number;
  upstream_errors: number;
  events_new: number;
  events_update: number;
  events_cancel: number;
  events_expired: number;
  events_resumed: number;
  skipped_records: number;
  english_calls: number;
  error: string | null;
  source: 'v7' | 'v1' | null;
}

async function readCycle(ctx: PipelineContext, cycleId: string): Promise<CycleRow> {
  const [row] = await queryRows<CycleRow>(
    ctx.db,
    sql`SELECT status, listed, checked, upstream_calls, upstream_errors, events_new,
          events_update, events_cancel, events_expired, events_resumed, skipped_records, english_calls, error,
          source
        FROM poll_cycles WHERE id = ${cycleId}`,
  );
  if (!row) throw new Error(`cycle ${cycleId} vanished`);
  return row;
}

async function waitFor(
  condition: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * One whole cycle in the foreground: the list call here, the checks and first delivery attempts
 * on in-process workers (any other worker process may take some of them too: the outcome is
 * read from Postgres).
 */
export async function runCycleOnce(
  ctx: PipelineContext,
  connection: Redis,
  options: { timeoutMs?: number } = {},
): Promise<CycleSummary> {
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  // Messages whose hold ended while no worker ran (quiet hours overnight, a lost job, a
  // cycle's collecting that no release ended) go now. Counted before this process's workers
  // start: a held message whose delayed job is due was otherwise often taken by one of them
  // first, and then not counted as released (test/pipeline/quiet-hours.int.test.ts failed so
  // on a slow machine).
  await releaseOverdueCycles(ctx, 0);
  const { due: released } = await requeueDueMessages(ctx, 0);
  const workers = startWorkers(ctx, connection, ['check', ...DELIVER_QUEUES]);
  try {
    const outcome = await runPoll(ctx, { jobKey: `once-${randomUUID()}` });
    const cycleId = outcome.cycleId;
    if (outcome.ok) {
      await waitFor(
        async () => (await readCycle(ctx, cycleId)).status !== 'running',
        timeoutMs,
        'the checks of the cycle',
      );
    }
    await waitFor(
      async () =>
        (await firstAttemptsOwed(
          ctx.db,
          ctx.now(),
          cycleId,
          released.map((m) => m.id),
        )) === 0,
      timeoutMs,
      'the first delivery attempts',
    );
    const cycle = await readCycle(ctx, cycleId);
    const { notifications, messages } = await cycleStatus(
      ctx.db,
      cycleId,
      released.map((m) => m.id),
    );
    return {
      cycle: cycleId,
      listed: cycle.listed,
      checked: cycle.checked,
      upstreamCalls: cycle.upstream_calls,
      upstreamErrors: cycle.upstream_errors,
      skippedRecords: cycle.skipped_records,
      englishCalls: cycle.english_calls,
      events: {
        new: cycle.events_new,
        update: cycle.events_update,
        cancel: cycle.events_cancel,
        expired: cycle.events_expired,
        resumed: cycle.events_resumed,
      },
      deliveries: states(notifications),
      messages: { ...states(messages), released: released.length },
      source: cycle.source,
      ok: outcome.ok,
      ...(outcome.ok ? {} : { error: outcome.error }),
    };
  } finally {
    await workers.close();
  }
}

function states(counts: readonly { status: string; n: number }[]): MessageStates {
  const count = (status: string) => counts.find((c) => c.status === status)?.n ?? 0;
  return {
    sent: count('sent'),
    failed: count('retrying') + count('dead'),
    pending: count('pending'),
    held: count('open'),
  };
}
