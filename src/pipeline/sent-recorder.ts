import { sql, type SQL } from 'drizzle-orm';
import { GroupCommit } from './group-commit.js';

/** What the recorder needs of the database: `Db` fits. */
export interface StatementRunner {
  execute(query: SQL): PromiseLike<unknown>;
}

/** Bounded statements: a flush after a slow commit can find thousands of marks waiting. */
const MAX_ROWS_PER_FLUSH = 1000;

/**
 * Marks delivery rows sent, many per statement (a `GroupCommit`). Under load one statement
 * records hundreds of sends; when idle, a mark is written at once. The caller waits for its own
 * row's write, so a job never finishes ahead of its ledger, and the window in which a crash
 * loses an accepted send stays one statement wide.
 */
export class SentRecorder {
  readonly #marks: GroupCommit<{ id: string; at: Date }>;

  constructor(db: StatementRunner) {
    this.#marks = new GroupCommit(async (marks) => {
      const ids = sql.param(marks.map((m) => m.id));
      // The ANY() beside the join lets the planner look the rows up by primary key rather than
      // join the whole table when its statistics lag behind a storm's inserts.
      await db.execute(sql`
        UPDATE deliveries d SET status = 'sent', sent_at = v.at, claimed_until = NULL,
          last_error = NULL, updated_at = now()
        FROM unnest(${ids}::uuid[],
                    ${sql.param(marks.map((m) => m.at.toISOString()))}::timestamptz[]) AS v(id, at)
        WHERE d.id = v.id AND d.id = ANY(${ids}::uuid[])`);
    }, MAX_ROWS_PER_FLUSH);
  }

  /** Resolves once the row is recorded as sent at `at`; rejects when that write failed. */
  markSent(id: string, at: Date): Promise<void> {
    return this.#marks.add({ id, at });
  }
}
