import type { Logger } from '../logger.js';

/** How long failures of one kind are counted before their count is logged. */
export const FAILURE_WINDOW_MS = 10_000;

/** The part of a failed job that the log line carries. */
export interface FailedJob {
  queue: string;
  jobId: string | undefined;
  attempt: number | undefined;
}

/**
 * The log of failed jobs. During an outage every job fails with the same error ("connect
 * ECONNREFUSED 127.0.0.1:5432", with its stack) and a worker wrote one warning per job: hundreds
 * a second that buried the line that said what was wrong. The first failure of a kind (queue
 * and error) is logged in full, as before; the same failure again within `windowMs` is counted,
 * and the count is logged once the window ends: `job failures repeated`, with the error's
 * message, the count and the window. A different error is a new kind and is logged at once.
 */
export class JobFailureLog {
  readonly #logger: Logger;
  readonly #windowMs: number;
  readonly #repeats = new Map<string, { queue: string; error: string; count: number }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: Logger, windowMs = FAILURE_WINDOW_MS) {
    this.#logger = logger;
    this.#windowMs = windowMs;
  }

  failed(job: FailedJob, err: Error): void {
    const error = `${err.name}: ${err.message}`;
    const kind = `${job.queue}\u0000${error}`;
    const repeat = this.#repeats.get(kind);
    if (repeat) {
      repeat.count += 1;
      return;
    }
    this.#logger.warn(
      { err, queue: job.queue, jobId: job.jobId, attempt: job.attempt },
      'job failed',
    );
    this.#repeats.set(kind, { queue: job.queue, error, count: 0 });
    if (!this.#timer) {
      this.#timer = setTimeout(() => this.flush(), this.#windowMs);
      // A count waiting to be logged never keeps a stopping process alive.
      this.#timer.unref();
    }
  }

  /** Logs the counts of the window now and starts a new one (also when the workers close). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const repeats = [...this.#repeats.values()];
    this.#repeats.clear();
    for (const r of repeats) {
      if (r.count === 0) continue;
      this.#logger.warn(
        { queue: r.queue, error: r.error, count: r.count, windowMs: this.#windowMs },
        'job failures repeated',
      );
    }
  }
}
