import { sql } from 'drizzle-orm';
import { PreparedStatement, type StatementRunner } from '../db/prepared.js';
import { CLAIM_SECONDS } from '../ledger/index.js';

/**
 * What one sending process knows of its subscribers' changes (`subscriber_changes`, written by
 * migration 0028's triggers): paused, disabled, unsubscribed, deleted, or given another address
 * or secret. A message carries its subscriber as they were read (`Outgoing.readAt`): by its
 * check, for a first attempt sent from the check's process, or by the take. It may then wait for
 * a send slot for up to a third of its lease, and an unsubscribe that landed meanwhile must still
 * stop it (INTERFACE §9: an unsubscribed subscriber receives nothing more). So each send first
 * asks here whether its subscriber changed since the read; if so the message is handed back
 * unsent, and the take that sends it next reads the subscriber as they are then.
 *
 * A change is honoured by every send that starts `CHANGES_FRESH_MS` or more after its commit:
 * a send waits for a read of the table begun no longer ago than that. In a storm that is one
 * small indexed statement a second per process, and a lookup in a map per send.
 */

/** How stale what a send knows of the changes may be. */
export const CHANGES_FRESH_MS = 1000;

/**
 * How far back each read looks. A row carries the time of its change, not of its commit, so a
 * read asks again for every change of the last minutes rather than for those since the last
 * read: a change whose transaction commits later than this after it was made (a seed of tens of
 * thousands of subscribers, say) is passed over by messages already in flight.
 */
export const CHANGES_LOOKBACK_SECONDS = 300;

/**
 * How long a change stays known after this process first saw it: longer than any message read
 * before it may still wait for its send (a third of `CLAIM_SECONDS`), with room to spare.
 */
const REMEMBERED_MS = CLAIM_SECONDS * 1000;

const RECENT_CHANGES = new PreparedStatement<{ seconds: number }>(
  (p) => sql`SELECT subscriber_id, changed_at::text AS changed_at FROM subscriber_changes
    WHERE changed_at > clock_timestamp() - make_interval(secs => ${p.seconds})`,
);

export class SubscriberChanges {
  /** Each change row of the last read (subscriber and change time): when it was first seen. */
  #firstSeen = new Map<string, number>();
  /** Per subscriber, when this process first saw their latest change. */
  readonly #latest = new Map<string, number>();
  /** When the last read that completed began; -Infinity before the first. */
  #readBegan = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;

  constructor(
    private readonly run: StatementRunner,
    private readonly now: () => number,
  ) {}

  /**
   * Undefined when what is known is fresh (`CHANGES_FRESH_MS`); else a promise that resolves
   * once it is, and rejects when the table could not be read (the send must not go unchecked).
   * Not async, so that a storm's sends do not each wait a turn of the event loop for nothing.
   */
  fresh(): Promise<void> | undefined {
    const at = this.now();
    if (at - this.#readBegan <= CHANGES_FRESH_MS) return undefined;
    return this.#freshAt(at);
  }

  /**
   * Whether the subscriber changed after a message read them at `readAt`, as far as this process
   * knows: a change first seen at or after the read may have committed after it.
   */
  changedSince(subscriberId: string, readAt: number): boolean {
    const seen = this.#latest.get(subscriberId);
    return seen !== undefined && seen >= readAt;
  }

  async #freshAt(at: number): Promise<void> {
    // A read under way that began too long ago cannot vouch for `at`: wait for it, then read.
    while (at - this.#readBegan > CHANGES_FRESH_MS) {
      this.#reading ??= this.#read().finally(() => {
        this.#reading = undefined;
      });
      await this.#reading;
    }
  }

  async #read(): Promise<void> {
    const began = this.now();
    const rows = await this.run<{ seconds: number }, { subscriber_id: string; changed_at: string }>(
      RECENT_CHANGES,
      { seconds: CHANGES_LOOKBACK_SECONDS },
    );
    // Seen when the answer came: the read's snapshot, and so every change in it, is older.
    const seen = this.now();
    const read = new Map<string, number>();
    for (const row of rows) {
      const key = `${row.subscriber_id} ${row.changed_at}`;
      const first = this.#firstSeen.get(key);
      read.set(key, first ?? seen);
      if (first === undefined) this.#latest.set(row.subscriber_id, seen);
    }
    // A row the read no longer returns is past the look-back and never comes back as new.
    this.#firstSeen = read;
    for (const [subscriberId, at] of this.#latest) {
      if (at < seen - REMEMBERED_MS) this.#latest.delete(subscriberId);
    }
    this.#readBegan = Math.max(this.#readBegan, began);
  }
}
