import type { EventType } from './detect.js';

/**
 * Who hears what of a warning's story (README, promises, docs/design.md invariant 12): nobody is told an
 * update, cancel or end of a warning they were not told, and a subscriber's first message about
 * a warning is a `new`. Pure: the caller reads what each subscriber was told from the ledger.
 */

/** A notification a subscriber has in the ledger (sent or still to be sent: it was decided). */
export interface ToldNotification {
  readonly warningId: string;
  readonly eventType: EventType;
  readonly occurrence: number;
}

/** A detected event as far as telling it goes. */
export interface StoryEvent {
  readonly type: EventType;
  readonly warningId: string;
  /** Every earlier id of the warning's chain, as detection knows it (`DetectedEvent.chain`). */
  readonly chain: readonly string[];
  readonly occurrence: number;
}

/**
 * What a subscriber is told of an event, given what they were told of the warning's story: the
 * event's own type, `new` for an update of a story they never heard (their first message about
 * it), or null when it ends or brings back a story they never heard.
 */
export function tellAs(event: StoryEvent, told: readonly ToldNotification[]): EventType | null {
  const story = new Set([event.warningId, ...event.chain]);
  const knowsStory = told.some((t) => story.has(t.warningId));
  const earlier = new Set(event.chain);
  switch (event.type) {
    case 'new':
      return 'new';
    case 'update':
      // Told this very warning already (its first news came as a new, reported at another of
      // their points): there is nothing left to tell.
      if (told.some((t) => t.warningId === event.warningId)) return null;
      return told.some((t) => earlier.has(t.warningId)) ? 'update' : 'new';
    case 'cancel':
    case 'expired':
      return knowsStory ? event.type : null;
    case 'resumed':
      // Back in force is news only to who was told it had ended.
      return told.some(
        (t) =>
          t.warningId === event.warningId &&
          t.eventType === 'expired' &&
          t.occurrence === event.occurrence - 1,
      )
        ? 'resumed'
        : null;
  }
}
