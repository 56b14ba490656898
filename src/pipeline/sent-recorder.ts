import { sql, type SQL } from 'drizzle-orm';

/** What the recorder needs of the database: `Db` fits. */
export interface StatementRunner {
  execute(query: SQL): PromiseLike<unknown>;
}

interface PendingMark {
  id: string;
  at: Date;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Bounded statements: a flush after a slow commit can find thousands of marks waiting. */
const MAX_ROWS_PER_FLUSH = 1000;

/**
 * Marks delivery rows sent, many per statement (a group commit). A send's mark joins whatever
 * is waiting; one flush runs at a time per process, and the marks that arrive during it go out
 * together in the next. Under load one statement records hundreds of sends; when idle, a mark
 * is written at once. The caller waits for its own row's write, so a job never finishes ahead of
 * its ledger, and the window in which a crash loses an accepted send stays one statement wide.
 */
export class SentRecorder {
  readonly #db: StatementRunner;
  #pending: PendingMark[] = [];
  #flushing = false;

  constructor(db: StatementRunner) {
    this.#db = db;
  }

  /** Resolves once the row is recorded as sent at `at`; rejects when that write failed. */
  markSent(id: string, at: Date): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ id, at, resolve, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        // Sends that finish in the same turn of the event loop share the first statement.
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, MAX_ROWS_PER_FLUSH);
      // The ANY() beside the join lets the planner look the rows up by primary key rather than
      // join the whole table when its statistics lag behind a storm's inserts.
      try {
        await this.#db.execute(sql`
          UPDATE deliveries d SET status = 'sent', sent_at = v.at, claimed_until = NULL,
            last_error = NULL, updated_at = now()
          FROM unnest(${sql.param(batch.map((m) => m.id))}::uuid[],
                      ${sql.param(batch.map((m) => m.at.toISOString()))}::timestamptz[]) AS v(id, at)
          WHERE d.id = v.id AND d.id = ANY(${sql.param(batch.map((m) => m.id))}::uuid[])`);
        for (const mark of batch) mark.resolve();
      } catch (err) {
        for (const mark of batch) mark.reject(err);
      }
    }
    this.#flushing = false;
  }
}
