import { sql } from 'drizzle-orm';
import { queryPrepared } from '../db/client.js';
import type { EventType } from '../domain/detect.js';
import { tellAs, type ToldNotification } from '../domain/told.js';
import type { NewNotification } from './record.js';
import type { Tx } from '../db/client.js';

/**
 * What a check's notifications become once each subscriber's part of the story is known
 * (src/domain/told.ts): an update of a warning they never heard is their `new`, and a cancel,
 * end or resumption of a story they never heard is nothing (docs/design.md, invariant 12).
 */

/** What the subscribers were told of these warnings: one statement through `deliveries_once`. */
export async function toldOf(
  tx: Tx,
  subscriberIds: readonly string[],
  warningIds: readonly string[],
): Promise<Map<string, ToldNotification[]>> {
  const told = new Map<string, ToldNotification[]>();
  if (subscriberIds.length === 0 || warningIds.length === 0) return told;
  const rows = await queryPrepared<{
    subscriber_id: string;
    warning_id: string;
    event_type: EventType;
    occurrence: number;
  }>(
    tx,
    sql`SELECT subscriber_id, warning_id, event_type, occurrence FROM deliveries
        WHERE subscriber_id = ANY(${sql.param([...subscriberIds])}::uuid[])
          AND warning_id = ANY(${sql.param([...warningIds])}::text[])`,
  );
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
    [...new Set(asked.map((r) => r.subscriberId))],
    [...new Set(asked.flatMap((r) => [r.warningId, ...r.chain]))],
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
