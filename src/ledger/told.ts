import { sql } from 'drizzle-orm';
import { PreparedStatement, plainArray, type ArrayText } from '../db/prepared.js';
import type { EventType } from '../domain/detect.js';
import { tellAs, type ToldNotification } from '../domain/told.js';
import type { NewNotification } from './record.js';
import type { Tx } from '../db/client.js';

/**
 * What a check's notifications become once each subscriber's part of the story is known
 * (src/domain/told.ts): an update of a warning they never heard is their `new`, and a cancel,
 * end or resumption of a story they never heard is nothing (docs/design.md, invariant 12).
 */

/** A subscriber and the warning ids of one story (a warning and its chain) to read. */
export interface StoryAsked {
  subscriberId: string;
  story: readonly string[];
}

/**
 * One probe of `deliveries_once` per (subscriber, warning) pair asked. Asking for every
 * subscriber's notifications of any of the warnings (`subscriber_id = ANY … AND warning_id =
 * ANY …`) let the generic plan of the prepared statement look up the subscribers alone and
 * filter their rows: a national desk's thousands of notifications read to find two, 4 ms a
 * check of an escalation (BENCHMARKS.md, "Side by side: what a subscriber was told").
 */
export const TOLD = new PreparedStatement<{ subscriberIds: ArrayText; warningIds: string[] }>(
  (p) => sql`SELECT d.subscriber_id, d.warning_id, d.event_type, d.occurrence
    FROM unnest(${p.subscriberIds}::uuid[], ${p.warningIds}::text[]) AS a(subscriber_id, warning_id)
    JOIN deliveries d ON d.subscriber_id = a.subscriber_id AND d.warning_id = a.warning_id`,
);

/**
 * What each subscriber was told of the stories asked: every notification they have of a
 * warning of the story. Nothing else of theirs is read, and nothing else is needed: `tellAs`
 * judges an event by its own story alone.
 */
export async function toldOf(
  tx: Tx,
  asked: readonly StoryAsked[],
): Promise<Map<string, ToldNotification[]>> {
  const told = new Map<string, ToldNotification[]>();
  const seen = new Set<string>();
  const subscriberIds: string[] = [];
  const warningIds: string[] = [];
  for (const a of asked) {
    for (const w of a.story) {
      const pair = `${a.subscriberId}\u0000${w}`;
      if (seen.has(pair)) continue;
      seen.add(pair);
      subscriberIds.push(a.subscriberId);
      warningIds.push(w);
    }
  }
  if (seen.size === 0) return told;
  const rows = await TOLD.run<{
    subscriber_id: string;
    warning_id: string;
    event_type: EventType;
    occurrence: number;
  }>(tx, { subscriberIds: plainArray(subscriberIds), warningIds });
  for (const r of rows) {
    const list = told.get(r.subscriber_id) ?? [];
    list.push({ warningId: r.warning_id, eventType: r.event_type, occurrence: r.occurrence });
    told.set(r.subscriber_id, list);
  }
  return told;
}

/** Telling a warning in force before its ends: what one check tells is told in this order. */
const TELLING_ORDER: Record<EventType, number> = {
  new: 0,
  update: 0,
  resumed: 0,
  cancel: 1,
  expired: 1,
};

/**
 * The notifications of `rows` that their subscribers are owed, as they are to be told. A
 * `new` needs nothing read; any other row reads what its subscriber was told of its story.
 * What this same check tells counts too: a cancel beside the update that is a subscriber's
 * first news of the warning follows it.
 */
export async function tellTheStoryTold(
  tx: Tx,
  rows: readonly NewNotification[],
): Promise<NewNotification[]> {
  const asked = rows.filter((r) => r.eventType !== 'new');
  if (asked.length === 0) return [...rows];
  const told = await toldOf(
    tx,
    asked.map((r) => ({ subscriberId: r.subscriberId, story: [r.warningId, ...r.chain] })),
  );
  const out: NewNotification[] = [];
  const ordered = rows
    .map((row, index) => ({ row, index }))
    .sort(
      (a, b) =>
        TELLING_ORDER[a.row.eventType] - TELLING_ORDER[b.row.eventType] || a.index - b.index,
    );
  for (const { row } of ordered) {
    const mine = told.get(row.subscriberId) ?? [];
    const as = tellAs(
      {
        type: row.eventType,
        warningId: row.warningId,
        chain: row.chain,
        occurrence: row.occurrence,
      },
      mine,
    );
    if (as === null) continue;
    const owed = as === row.eventType ? row : { ...row, eventType: as, occurrence: 0 };
    out.push(owed);
    mine.push({
      warningId: owed.warningId,
      eventType: owed.eventType,
      occurrence: owed.occurrence,
    });
    told.set(row.subscriberId, mine);
  }
  return out;
}
