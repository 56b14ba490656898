import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { NO_EVENTS, type EventType } from '../domain/detect.js';
import type { PipelineContext } from '../runtime/context.js';
import { releaseCycleMessages } from '../ledger/index.js';
import { GroupCommit } from '../runtime/group-commit.js';

type Executor = Pick<Db, 'execute'>;

/** What checks add to their cycle's row. */
export interface CheckTally {
  checks: number;
  upstreamErrors: number;
  events: Record<EventType, number>;
  deliveries: number;
  skippedRecords: number;
  englishCalls: number;
  /** When the last of these checks ended: the cycle's finish time if they complete it. */
  now: Date;
}

/** One check as the cycle counts it. */
export interface CheckCount {
  cycleId: string;
  fetchOk: boolean;
  events: Record<EventType, number>;
  deliveries: number;
  skippedRecords: number;
  englishCalls: number;
  now: Date;
}

/**
 * Adds checks to their cycle row; the check that completes the plan closes the cycle. Every
 * check of a cycle updates this one row, so the statement runs on its own, after the checks'
 * commits, and does not wait for its WAL flush (set_config(…, true) applies to the statement's
 * own transaction): the row's lock is held only while the server runs it.
 */
async function countChecks(db: Executor, cycleId: string, t: CheckTally): Promise<boolean> {
  const result = await db.execute(sql`UPDATE poll_cycles SET
      checked = checked + ${t.checks},
      upstream_calls = upstream_calls + ${t.checks},
      upstream_errors = upstream_errors + ${t.upstreamErrors},
      events_new = events_new + ${t.events.new},
      events_update = events_update + ${t.events.update},
      events_cancel = events_cancel + ${t.events.cancel},
      events_expired = events_expired + ${t.events.expired},
      events_resumed = events_resumed + ${t.events.resumed},
      skipped_records = skipped_records + ${t.skippedRecords},
      english_calls = english_calls + ${t.englishCalls},
      deliveries_created = deliveries_created + ${t.deliveries},
      status = CASE WHEN checked + ${t.checks} >= planned AND status = 'running' THEN 'done'
                    ELSE status END,
      finished_at = CASE WHEN checked + ${t.checks} >= planned AND finished_at IS NULL
                         THEN ${t.now} ELSE finished_at END
    WHERE id = ${cycleId}
      AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))
    RETURNING status`);
  return isDone(result);
}

const isDone = (result: unknown): boolean =>
  (result as { rows: { status: string }[] }).rows[0]?.status === 'done';

/** The checks of a batch summed per cycle. */
function tallies(checks: readonly CheckCount[]): Map<string, CheckTally> {
  const byCycle = new Map<string, CheckTally>();
  for (const c of checks) {
    let t = byCycle.get(c.cycleId);
    if (!t) {
      t = {
        checks: 0,
        upstreamErrors: 0,
        events: NO_EVENTS(),
        deliveries: 0,
        skippedRecords: 0,
        englishCalls: 0,
        now: c.now,
      };
      byCycle.set(c.cycleId, t);
    }
    t.checks += 1;
    t.upstreamErrors += c.fetchOk ? 0 : 1;
    for (const type of Object.keys(t.events) as EventType[]) t.events[type] += c.events[type];
    t.deliveries += c.deliveries;
    t.skippedRecords += c.skippedRecords;
    t.englishCalls += c.englishCalls;
    if (c.now > t.now) t.now = c.now;
  }
  return byCycle;
}

/**
 * Counts the checks of one process on their cycle rows, many per statement (a `GroupCommit`,
 * as `SentRecorder` does for sent marks). A quiet cycle is thousands of checks that each changed
 * one number on the same row: one statement per check was a third of its Postgres
 * transactions, each queued on that row's lock. The statements run after the checks'
 * own commits and do not wait for their WAL flush: a process that dies first leaves checks
 * uncounted, and the sweeper closes such a cycle; no notification depends on these counters.
 */
export class CycleCounter {
  readonly #counts: GroupCommit<CheckCount>;

  /** `onDone` runs when a count finds its cycle done (again, if later checks are counted). */
  constructor(db: Executor, onDone: (cycleId: string) => Promise<unknown> = async () => {}) {
    this.#counts = new GroupCommit(async (checks) => {
      for (const [cycleId, tally] of tallies(checks)) {
        if (await countChecks(db, cycleId, tally)) await onDone(cycleId);
      }
    });
  }

  /** Resolves once this check is counted on its cycle row. */
  count(check: CheckCount): Promise<void> {
    return this.#counts.add(check);
  }
}

const cycleCounters = new WeakMap<PipelineContext, CycleCounter>();

/** The process's counter: one per pipeline context, so its checks share statements. */
export function cycleCounterFor(ctx: PipelineContext): CycleCounter {
  let counter = cycleCounters.get(ctx);
  if (!counter) {
    counter = new CycleCounter(ctx.db, (cycleId) => releaseCycleMessages(ctx, cycleId));
    cycleCounters.set(ctx, counter);
  }
  return counter;
}

/**
 * A check that failed for good (the database kept failing) still counts for its cycle, so the
 * cycle ends and `poll --once` does not wait for it forever.
 */
export async function countFailedCheck(
  ctx: PipelineContext,
  cycleId: string,
  what: string,
  error: unknown,
): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  const result = await ctx.db.execute(sql`
    UPDATE poll_cycles SET
      checked = checked + 1,
      error = coalesce(error, ${`check of ${what} failed: ${message.slice(0, 500)}`}),
      status = CASE WHEN checked + 1 >= planned AND status = 'running' THEN 'done' ELSE status END,
      finished_at = CASE WHEN checked + 1 >= planned AND finished_at IS NULL
                         THEN ${ctx.now()}::timestamptz ELSE finished_at END
    WHERE id = ${cycleId}
    RETURNING status`);
  if (isDone(result)) await releaseCycleMessages(ctx, cycleId);
}
