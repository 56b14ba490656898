/**
 * A counting semaphore: at most `permits` callers run at once, the rest wait in arrival order.
 * Deliver jobs carry many rows; this bounds what one process has in flight.
 */
export class Semaphore {
  readonly #waiting: (() => void)[] = [];
  #free: number;

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new RangeError(`a semaphore needs at least one permit, not ${permits}`);
    }
    this.#free = permits;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      // The permit passes straight to the next waiter, so a newcomer cannot overtake it.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free += 1;
    }
  }
}
