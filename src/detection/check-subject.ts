import type { SQL } from 'drizzle-orm';
import type { Tx } from '../db/client.js';
import type { FetchOutcome, TrackedState, TrackedWarning } from '../domain/detect.js';
import type { Warning } from '../domain/warning.js';
import type { KnownSubscriber, SubscriptionRow } from '../ledger/index.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';
import type { CheckedTable } from './quiet-check.js';

/**
 * What one check is of: a v7 place (src/detection/place-subject.ts) or a v1 point
 * (src/detection/point-subject.ts). `applyCheck` (src/detection/apply-check.ts) does the rest
 * the same way for both: the unlocked read, detection once, the locked write, the ledger's
 * record. A subject supplies the answer and the matching rule, nothing else.
 */
export interface CheckSubject<W extends Watcher = Watcher> {
  /** The row the check keeps its bookkeeping on; its id is `key`. */
  readonly table: CheckedTable;
  readonly key: string;
  /** The check's log fields (`placeId` or `pointId`) and its log line's phrase. */
  readonly logFields: Readonly<Record<string, string>>;
  readonly said: string;

  /** The upstream call and, for English subscribers, its English texts. Never throws. */
  fetch(ctx: PipelineContext, log: Logger, request: FetchRequest): Promise<Fetched>;
  /** The answer's warnings as detection compares them with what is tracked here. */
  continuing(tracked: readonly TrackedWarning[], warnings: readonly Warning[]): readonly Warning[];
  /** Whether what v7 told here must be taken over (under the lock) before detection. */
  mustAdopt(row: { v7_adopted_at?: Date | null }): boolean;
  adopt(tx: Tx, now: Date): Promise<void>;
  /** Makes the row a check found missing; false when the subject has no such row to make. */
  createRow(tx: Tx): Promise<boolean>;

  /** The statement of the subscriptions that may watch the subject, ordered by subscriber and place. */
  watchers(): SQL;
  /** Whether a row `watchers` found does watch it. */
  watches(row: W): boolean;
  /**
   * For each (subscriber, warning id) as `subscriber\0warning`: the warning's states at the
   * other places or points the subscriber watches. Its end is theirs when it ended at all.
   */
  statesElsewhere(
    tx: Tx,
    warningIds: readonly string[],
    subscriberIds: readonly string[],
  ): Promise<Map<string, TrackedState[]>>;
  /**
   * The events of `warningIds` that cycle `cycleId` wrote elsewhere (one v1 alert is reported at
   * every point of its area): they are not news for the cycle's counters. Null where every
   * report counts (v7 places).
   */
  reportedElsewhere(cycleId: string, warningIds: readonly string[]): SQL | null;
}

export interface FetchRequest {
  cycleId: string;
  english: boolean;
}

/** v1's answer besides its alerts: the tag of its content and its attributions. */
export interface AnswerTag {
  tag: string | null;
  attributions: string[];
}

/** What a check's calls brought: the outcome, v1's tag, and how many English calls it made. */
export interface Fetched {
  fetch: FetchOutcome;
  answer: AnswerTag | null;
  englishCalls: number;
}

/**
 * A subscription that may be told of an event of the subject; its place names the location.
 * With what a first attempt sent from the check's process needs of its subscriber and place.
 */
export interface Watcher extends SubscriptionRow, KnownSubscriber {
  place_id: string;
}

/** `subscriber\0warning`, the key of `statesElsewhere`. */
export const subscriberWarning = (subscriberId: string, warningId: string): string =>
  `${subscriberId}\u0000${warningId}`;
