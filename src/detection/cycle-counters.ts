import { sql } from 'drizzle-orm';
import { PreparedStatement, runOn, type StatementRunner } from '../db/prepared.js';
import { NO_EVENTS, type EventType } from '../domain/detect.js';
import type { PipelineContext } from '../runtime/context.js';
import { releaseCycleMessages } from '../ledger/index.js';
import { GroupCommit } from '../runtime/group-commit.js';

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
async function countChecks(run: StatementRunner, cycleId: string, t: CheckTally): Promise<boolean> {
  const rows = await run<CountValues, { status: string }>(COUNT_CHECKS, {
    cycleId,
    checks: t.checks,
    upstreamErrors: t.upstreamErrors,
    eventsNew: t.events.new,
    eventsUpdate: t.events.update,
    eventsCancel: t.events.cancel,
    eventsExpired: t.events.expired,
    eventsResumed: t.events.resumed,
    skippedRecords: t.skippedRecords,
    englishCalls: t.englishCalls,
    deliveries: t.deliveries,
    now: t.now,
  });
  return rows[0]?.status === 'done';
}

interface CountValues {
  cycleId: string;
  checks: number;
  upstreamErrors: number;
  eventsNew: number;
  eventsUpdate: number;
  eventsCancel: number;
  eventsExpired: number;
  eventsResumed: number;
  skippedRecords: number;
  englishCalls: number;
  deliveries: number;
  now: Date;
}

const COUNT_CHECKS = new PreparedStatement<CountValues>(
  (p) => sql`UPDATE poll_cycles SET
      checked = checked + ${p.checks}::int,
      upstream_calls = upstream_calls + ${p.checks}::int,
      upstream_errors = upstream_errors + ${p.upstreamErrors}::int,
      events_new = events_new + ${p.eventsNew}::int,
      events_update = events_update + ${p.eventsUpdate}::int,
      events_cancel = events_cancel + ${p.eventsCancel}::int,
      events_expired = events_expired + ${p.eventsExpired}::int,
      events_resumed = events_resumed + ${p.eventsResumed}::int,
      skipped_records = skipped_records + ${p.skippedRecords}::int,
      english_calls = english_calls + ${p.englishCalls}::int,
      deliveries_created = deliveries_created + ${p.deliveries}::int,
      status = CASE WHEN checked + ${p.checks}::int >= planned AND status = 'running' THEN 'done'
                    ELSE status END,
      finished_at = CASE WHEN checked + ${p.checks}::int >= planned AND finished_at IS NULL
                         THEN ${p.now}::timestamptz ELSE finished_at END
    WHERE id = ${p.cycleId}::uuid
      AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))
    RETURNING status`,
);

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
  constructor(
    run: StatementRunner,
    onDone: (cycleId: string) => Promise<unknown> = async () => {},
  ) {
    this.#counts = new GroupCommit(async (checks) => {
      for (const [cycleId, tally] of tallies(checks)) {
        if (await countChecks(run, cycleId, tally)) await onDone(cycleId);
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
    counter = new CycleCounter(runOn(ctx.db), (cycleId) => releaseCycleMessages(ctx, cycleId));
    cycleCounters.set(ctx, counter);
  }
  return counter;
}

const isDone = (result: unknown): boolean =>
  (result as { rows: { status: string }[] }).rows[0]?.status === 'done';

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
