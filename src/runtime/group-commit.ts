import { setTimeout as sleep } from 'node:timers/promises';

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
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
  /**
   * Items the last write must have carried for the next to linger too; one that finds no write
   * running always does. Below it, items come too slowly for the wait to gather many: those that
   * arrived during the last write have waited for company already and go as soon as it ends.
   * Zero (the default): every write lingers.
   */
  busyItems?: number;
  /** How a write waits out its linger: a timer, unless a test ends the wait itself. */
  wait?: (ms: number) => Promise<unknown>;
}

/**
 * Writes items many per statement. An item joins whatever is waiting; one write runs at a time,
 * and the items that arrive during it (and its linger) go together in the next. Each caller
 * waits for the write that carries its item and sees that write's failure, or its own result:
 * a write that answers for each item returns the answers in the items' order.
 */
export class GroupCommit<T, R = void> {
  readonly #write: (items: T[]) => Promise<readonly R[] | void>;
  readonly #maxItems: number;
  readonly #lingerMs: number;
  readonly #busyItems: number;
  readonly #wait: (ms: number) => Promise<unknown>;
  #waiting: Waiting<T, R>[] = [];
  #writing = false;

  constructor(
    write: (items: T[]) => Promise<readonly R[] | void>,
    options: GroupCommitOptions = {},
  ) {
    this.#write = write;
    this.#maxItems = options.maxItems ?? 1000;
    this.#lingerMs = options.lingerMs ?? 0;
    this.#busyItems = options.busyItems ?? 0;
    this.#wait = options.wait ?? sleep;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#writing) {
        this.#writing = true;
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    let linger = this.#lingerMs > 0;
    while (this.#waiting.length > 0) {
      if (linger && this.#waiting.length < this.#maxItems) await this.#wait(this.#lingerMs);
      const batch = this.#waiting.splice(0, this.#maxItems);
      linger = this.#lingerMs > 0 && batch.length >= this.#busyItems;
      try {
        const results = await this.#write(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(results?.[i] as R));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.#writing = false;
  }
}
