interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Writes items many per statement. An item joins whatever is waiting; one write runs at a time,
 * and the items that arrive during it go together in the next. Under load one statement carries
 * hundreds of items; when idle an item is written at once (items added in the same turn of the
 * event loop share the first write). Each caller waits for the write that carries its item and
 * sees that write's failure.
 */
export class GroupCommit<T> {
  readonly #write: (items: T[]) => Promise<void>;
  readonly #maxItems: number;
  #waiting: Waiting<T>[] = [];
  #writing = false;

  constructor(write: (items: T[]) => Promise<void>, maxItems = 1000) {
    this.#write = write;
    this.#maxItems = maxItems;
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
