/**
 * A counting semaphore: at most `permits` callers run at once, the rest wait in arrival order.
 * Deliver jobs carry many rows; this bounds what one process has in flight.
 */
export class Semaphore {
  readonly #waiting: (() => void)[] = [];
  /** Waiters served before `#waiting`; see `run`. */
  readonly #waitingAhead: (() => void)[] = [];
  #free: number;

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new RangeError(`a semaphore needs at least one permit, not ${permits}`);
    }
    this.#free = permits;
  }

  /**
   * Runs `task` with a permit. With `ahead`, the caller waits only behind other such callers:
   * it takes the next free permit before anyone queued without it.
   */
  async run<T>(task: () => Promise<T>, o: { ahead?: boolean } = {}): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else {
      const queue = o.ahead ? this.#waitingAhead : this.#waiting;
      await new Promise<void>((resolve) => queue.push(resolve));
    }
    try {
      return await task();
    } finally {
      // The permit passes straight to the next waiter, so a newcomer cannot overtake it.
      const next = this.#waitingAhead.shift() ?? this.#waiting.shift();
      if (next) next();
      else this.#free += 1;
    }
  }
}
