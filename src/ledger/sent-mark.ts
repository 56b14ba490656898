import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import {
  plainArray,
  PreparedStatement,
  type ArrayText,
  type StatementRunner,
} from '../db/prepared.js';
import { GroupCommit } from '../runtime/group-commit.js';

/** Bounded statements: a flush after a slow commit can find thousands of marks waiting. */
const MAX_ROWS_PER_FLUSH = 1000;

/**
 * How long a mark waits for others before its statement starts, when no statement runs or the
 * last one was busy (`MARK_BUSY_ROWS`). A storm's sends finish a few per millisecond in each
 * process, and without the wait a statement carried about 16 marks: the marks were a quarter of
 * the storm's statements, each a round trip that costs both processes far more CPU than its
 * rows. A job waits this much longer for its ledger, and a crash in that time sends those
 * messages again, under the same ids: at 10 ms a worker killed mid-cycle in the fault suite
 * resent 13–18 on a fast machine (bound 16), at 2 ms 8, and the storm's Postgres CPU rose 4 %
 * where no wait at all cost 11 % (docs/benchmarks-history.md, items 34 and 57).
 */
export const MARK_LINGER_MS = 2;

/**
 * Marks the last statement must have carried for the next to wait `MARK_LINGER_MS` as well.
 * Where sends finish a few at a time (a small storm, a loaded machine), the wait after every
 * statement gathered one or two more marks and kept each 13–17 ms (p50) behind its send, 9–11
 * without it, in the hostile fault storm (2–5 marks a statement), whose kills then resent whole
 * batches. Where they finish by the dozen (the bench's storms), dropping that wait cost the
 * storm 10 % more Postgres CPU per notification (docs/RELIABILITY.md). 8 is half the 16 marks a
 * storm's statement carried with no wait at all, so a storm whose statement once goes out
 * without the wait is back to waiting at the next.
 */
export const MARK_BUSY_ROWS = 8;

/**
 * Pauses before a failed mark is written again. The sends it records have happened: a mark lost
 * to a dropped connection or a terminated session would have its rows sent a second time once
 * their claims run out (the fault suite's terminated sessions: 17 duplicates of 771 before).
 * The write is idempotent, so trying again is always safe; the pauses stay far inside a claim.
 */
export const MARK_RETRY_DELAYS_MS: readonly number[] = [100, 500, 2000];

/**
 * Marks messages sent, many per statement (a `GroupCommit`): those made within
 * `MARK_LINGER_MS` of each other, and those made while a statement runs, go together. The
 * caller waits for its own row's write, so a job never finishes ahead of its ledger, and the
 * window in which a crash loses an accepted send stays at most the running statement, a linger
 * and its own statement wide.
 */
export class SentRecorder {
  readonly #marks: GroupCommit<Mark>;

  constructor(
    run: StatementRunner,
    {
      retryDelaysMs = MARK_RETRY_DELAYS_MS,
      lingerMs = MARK_LINGER_MS,
      wait,
    }: {
      retryDelaysMs?: readonly number[];
      lingerMs?: number;
      /** How a statement waits out its linger (a timer unless a test ends it). */
      wait?: (ms: number) => Promise<unknown>;
    } = {},
  ) {
    this.#marks = new GroupCommit(
      async (marks) => {
        let attempt = 0;
        for (;;) {
          try {
            await run(MARK_SENT, markValues(marks));
            return;
          } catch (err) {
            const pause = retryDelaysMs[attempt];
            if (pause === undefined) throw err;
            attempt += 1;
            await sleep(pause);
          }
        }
      },
      { maxItems: MAX_ROWS_PER_FLUSH, lingerMs, busyItems: MARK_BUSY_ROWS, wait },
    );
  }

  /**
   * Resolves once the message is recorded as sent at `at`; rejects when that write failed for
   * good (after `MARK_RETRY_DELAYS_MS`).
   */
  markSent(id: string, at: Date): Promise<void> {
    return this.#marks.add({ id, at });
  }
}

interface Mark {
  id: string;
  at: Date;
}

interface MarkValues {
  ids: ArrayText;
  /** When each was sent, in ISO text (no character of it needs quoting in an array). */
  sentAt: ArrayText;
}

function markValues(marks: readonly Mark[]): MarkValues {
  return {
    ids: plainArray(marks.map((m) => m.id)),
    sentAt: plainArray(marks.map((m) => m.at.toISOString())),
  };
}

/**
 * The statement of a flush. The ANY() beside the join lets the planner look the rows up by
 * primary key rather than join the whole table when its statistics lag behind a storm's inserts.
 */
export const MARK_SENT = new PreparedStatement<MarkValues>(
  (p) => sql`UPDATE messages d SET status = 'sent', sent_at = v.at, claimed_until = NULL,
      -- A first attempt sent by the job that owns it was not claimed, so not yet counted.
      attempts = greatest(d.attempts, 1), last_error = NULL, updated_at = v.at
    FROM unnest(${p.ids}::uuid[], ${p.sentAt}::timestamptz[]) AS v(id, at)
    WHERE d.id = v.id AND d.id = ANY(${p.ids}::uuid[])`,
);
