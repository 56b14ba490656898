import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { queryRows } from '../db/client.js';
import type { PipelineContext } from './context.js';
import { ATTEMPT_UNDER_WAY } from './deliver.js';
import { runPoll } from './poll.js';
import { DELIVER_QUEUES } from './queues.js';
import { startWorkers } from './workers.js';

/** The `poll --once` summary line (INTERFACE §1). */
export interface CycleSummary {
  cycle: string;
  listed: number;
  checked: number;
  upstreamCalls: number;
  upstreamErrors: number;
  events: { new: number; update: number; cancel: number; expired: number };
  deliveries: { sent: number; failed: number; pending: number };
  /** The warning API the cycle polled (INTERFACE §10); null if it failed before choosing. */
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
  error: string | null;
  source: 'v7' | 'v1' | null;
}

async function readCycle(ctx: PipelineContext, cycleId: string): Promise<CycleRow> {
  const [row] = await queryRows<CycleRow>(
    ctx.db,
    sql`SELECT status, listed, checked, upstream_calls, upstream_errors, events_new,
          events_update, events_cancel, events_expired, error, source
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
      await waitFor(
        async () => {
          const [row] = await queryRows<{ n: number }>(
            ctx.db,
            sql`SELECT count(*)::int AS n FROM deliveries
                WHERE cycle_id = ${cycleId} AND ${ATTEMPT_UNDER_WAY}`,
          );
          return (row?.n ?? 0) === 0;
        },
        timeoutMs,
        'the first delivery attempts',
      );
    }
    const cycle = await readCycle(ctx, cycleId);
    const counts = await queryRows<{ status: string; n: number }>(
      ctx.db,
      sql`SELECT status, count(*)::int AS n FROM deliveries WHERE cycle_id = ${cycleId}
          GROUP BY status`,
    );
    const count = (status: string) => counts.find((c) => c.status === status)?.n ?? 0;
    return {
      cycle: cycleId,
      listed: cycle.listed,
      checked: cycle.checked,
      upstreamCalls: cycle.upstream_calls,
      upstreamErrors: cycle.upstream_errors,
      events: {
        new: cycle.events_new,
        update: cycle.events_update,
        cancel: cycle.events_cancel,
        expired: cycle.events_expired,
      },
      deliveries: {
        sent: count('sent'),
        failed: count('retrying') + count('dead'),
        pending: count('pending'),
      },
      source: cycle.source,
      ok: outcome.ok,
      ...(outcome.ok ? {} : { error: outcome.error }),
    };
  } finally {
    await workers.close();
  }
}
