import { setTimeout as sleep } from 'node:timers/promises';

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  /** Most items one write carries. */
  maxItems?: number;
  /**
   * How long a write waits for more items before it starts, unless it is full already. Zero:
   * an item that finds no write running is written at once (with those added in the same turn
   * of the event loop).
   */
  lingerMs?: number;
}

/**
 * Writes items many per statement. An item joins whatever is waiting; one write runs at a time,
 * and the items that arrive during it (and its linger) go together in the next. Each caller
 * waits for the write that carries its item and sees that write's failure.
 */
export class GroupCommit<T> {
  readonly #write: (items: T[]) => Promise<void>;
  readonly #maxItems: number;
  readonly #lingerMs: number;
  #waiting: Waiting<T>[] = [];
  #writing = false;

  constructor(write: (items: T[]) => Promise<void>, options: GroupCommitOptions = {}) {
    this.#write = write;
    this.#maxItems = options.maxItems ?? 1000;
    this.#lingerMs = options.lingerMs ?? 0;
  }

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#writing) {
        this.#writing = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      if (this.#lingerMs > 0 && this.#waiting.length < this.#maxItems) await sleep(this.#lingerMs);
      const batch = this.#waiting.splice(0, this.#maxItems);
      try {
        await this.#write(batch.map((w) => w.item));
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.#writing = false;
  }
}
