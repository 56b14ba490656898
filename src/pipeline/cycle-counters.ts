import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { EventType } from '../domain/detect.js';

type Executor = Pick<Db, 'execute'>;

/**
 * Counts one check on its cycle row; the check that completes the plan closes the cycle.
 * Every check of a cycle updates this one row, so callers keep the row lock short.
 */
export async function countCheck(
  db: Executor,
  input: {
    cycleId: string;
    fetchOk: boolean;
    events: Record<EventType, number>;
    deliveries: number;
    now: Date;
    /**
     * Let the statement's own implicit transaction commit without waiting for its WAL flush:
     * the row's lock is then not held through one. Only bookkeeping is at stake.
     */
    asyncCommit?: boolean;
  },
): Promise<void> {
  const async = input.asyncCommit
    ? sql`AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))`
    : sql``;
  await db.execute(sql`
    UPDATE poll_cycles SET
      checked = checked + 1,
      upstream_calls = upstream_calls + 1,
      upstream_errors = upstream_errors + ${input.fetchOk ? 0 : 1},
      events_new = events_new + ${input.events.new},
      events_update = events_update + ${input.events.update},
      events_cancel = events_cancel + ${input.events.cancel},
      events_expired = events_expired + ${input.events.expired},
      deliveries_created = deliveries_created + ${input.deliveries},
      status = CASE WHEN checked + 1 >= planned AND status = 'running' THEN 'done' ELSE status END,
      finished_at = CASE WHEN checked + 1 >= planned AND finished_at IS NULL THEN ${input.now}
                         ELSE finished_at END
    WHERE id = ${input.cycleId} ${async}`);
}

/**
 * A check that failed for good (the database kept failing) still counts for its cycle, so the
 * cycle ends and `poll --once` does not wait for it forever.
 */
export async function countFailedCheck(
  db: Executor,
  cycleId: string,
  what: string,
  error: unknown,
): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  await db.execute(sql`
    UPDATE poll_cycles SET
      checked = checked + 1,
      error = coalesce(error, ${`check of ${what} failed: ${message.slice(0, 500)}`}),
      status = CASE WHEN checked + 1 >= planned AND status = 'running' THEN 'done' ELSE status END,
      finished_at = CASE WHEN checked + 1 >= planned AND finished_at IS NULL THEN now()
                         ELSE finished_at END
    WHERE id = ${cycleId}`);
}
