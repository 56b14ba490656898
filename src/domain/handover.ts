/**
 * The handover from v7 to v1 (INTERFACE §10, DESIGN invariant 10: a source change is not news).
 *
 * Weather Alert v1 gives a warning another id than v7 did. A v1 alert that matches a warning
 * still open from v7 at the same place continues it: it is tracked under the v7 id subscribers
 * know (its own id kept as `v1Id`), so detection sees a known warning again and announces
 * nothing; a later v1 update or cancel naming that alert names the v7 id too, and its expiry is
 * the expiry of the v7 warning. The v1 twin of a v7 warning may never be seen: updated or
 * cancelled between v7's last answer and v1's first, it is gone from v1's answers (an alert a
 * later one supersedes is no longer returned), and the update or cancel names an id nobody
 * knows. That id is then taken for the twin of the open v7 warning the message can replace
 * (`mayReplace`), so the message is told as its update or cancel and the v7 warning closes with
 * it: read as a continuation, a same-level update went untold; read as news, the v7 warning
 * later expired under it, an all-clear while its update was in force. A v7 warning no v1 alert
 * continues or replaces ends by the usual miss rule. Pure: no I/O.
 */
import type { TrackedWarning } from './detect.js';
import { parseInstant, type Warning } from './warning.js';

/** Issue times of one warning as v7 and v1 report it differ by minutes; an hour is generous. */
export const HANDOVER_TIME_TOLERANCE_MS = 60 * 60 * 1000;

/** v7's old type codes 11B01…11B99 are today's 1001…1099. */
function typeCodeOf(warning: Warning): string | null {
  const code = warning.typeCode?.trim();
  if (!code) return null;
  const old = /^11B(\d\d)$/i.exec(code);
  return old ? `10${old[1]}` : code;
}

function sameType(a: Warning, b: Warning): boolean {
  const codeA = typeCodeOf(a);
  const codeB = typeCodeOf(b);
  if (codeA && codeB) return codeA === codeB;
  const nameA = a.typeName?.trim();
  const nameB = b.typeName?.trim();
  return !!nameA && nameA === nameB;
}

/** Same level on the 白色…红色 scale, else the same colour; unknown on both sides is no match. */
function sameLevel(a: Warning, b: Warning): boolean {
  if (a.level !== 'unknown' && b.level !== 'unknown') return a.level === b.level;
  const colorA = a.color?.trim().toLowerCase();
  const colorB = b.color?.trim().toLowerCase();
  return !!colorA && colorA === colorB;
}

/** Compared only when both name one: either source may leave the sender out. */
function sameSender(a: Warning, b: Warning): boolean {
  const senderA = a.sender?.trim();
  const senderB = b.sender?.trim();
  return !senderA || !senderB || senderA === senderB;
}

/** How far apart the two issue times are; null when either is missing (no match then). */
function issueGapMs(a: Warning, b: Warning): number | null {
  const timeA = parseInstant(a.pubTime);
  const timeB = parseInstant(b.pubTime);
  if (!timeA || !timeB) return null;
  return Math.abs(timeA.getTime() - timeB.getTime());
}

/** Whether the v1 alert `next` continues the v7 warning `open` (both at one place). */
export function continues(open: Warning, next: Warning): boolean {
  const gap = issueGapMs(open, next);
  return (
    gap !== null &&
    gap <= HANDOVER_TIME_TOLERANCE_MS &&
    sameType(open, next) &&
    sameLevel(open, next) &&
    sameSender(open, next)
  );
}

/**
 * Whether the v1 update or cancel `next`, which names an alert never seen, may replace the v7
 * warning `open` (both at one place): same type, same sender when both name one, and issued no
 * earlier than the warning (within the tolerance, as the two sources' times differ). The level
 * may differ: an update often changes it.
 */
function mayReplace(open: Warning, next: Warning): boolean {
  const openTime = parseInstant(open.pubTime);
  const nextTime = parseInstant(next.pubTime);
  return (
    openTime !== null &&
    nextTime !== null &&
    nextTime.getTime() >= openTime.getTime() - HANDOVER_TIME_TOLERANCE_MS &&
    sameType(open, next) &&
    sameSender(open, next)
  );
}

interface HandoverPair {
  gap: number;
  v7: string;
  v1: string;
}

/**
 * Takes pairs one to one, the closest issue times first (ties by id, so the result does not
 * depend on order). Returns v1 id → v7 id.
 */
function oneToOne(pairs: HandoverPair[]): Map<string, string> {
  pairs.sort((a, b) => a.gap - b.gap || compare(a.v7, b.v7) || compare(a.v1, b.v1));
  const matched = new Map<string, string>();
  const taken = new Set<string>();
  for (const pair of pairs) {
    if (matched.has(pair.v1) || taken.has(pair.v7)) continue;
    matched.set(pair.v1, pair.v7);
    taken.add(pair.v7);
  }
  return matched;
}

/**
 * Pairs v1 alerts with the open v7 warnings they continue, one to one: among the pairs that
 * match, the closest issue times first. Returns v1 alert id → v7 warning id.
 */
export function matchHandover(
  openV7: readonly Warning[],
  freshV1: readonly Warning[],
): Map<string, string> {
  const pairs: HandoverPair[] = [];
  for (const open of openV7) {
    for (const next of freshV1) {
      if (!continues(open, next)) continue;
      pairs.push({ gap: issueGapMs(open, next)!, v7: open.id, v1: next.id });
    }
  }
  return oneToOne(pairs);
}

/**
 * Pairs v1 updates and cancels that name an alert never seen with the open v7 warnings they may
 * replace (`mayReplace`), one to one, the closest issue times first. Returns message id → v7
 * warning id.
 */
function matchReplacements(
  openV7: readonly Warning[],
  messages: readonly Warning[],
): Map<string, string> {
  const pairs: HandoverPair[] = [];
  for (const open of openV7) {
    for (const next of messages) {
      if (mayReplace(open, next))
        pairs.push({ gap: issueGapMs(open, next)!, v7: open.id, v1: next.id });
    }
  }
  return oneToOne(pairs);
}

/**
 * The answer of one v1 point as detection should see it, given what is tracked there: alerts
 * that continue a v7 warning (known from an earlier answer, or matched now) carry the v7 id,
 * and every link to such an alert names the v7 id first, then the alert's own. So does a link
 * to an alert never seen from an update or cancel matched now with the v7 warning it replaces.
 * A cancel is never a continuation: it is news, told as `cancel`. Alerts first seen now that
 * match no open v7 warning stay as they are. Returns the answer itself when no v7 warning is
 * tracked at the point.
 */
export function continueHandedOver(
  tracked: readonly TrackedWarning[],
  answer: readonly Warning[],
): readonly Warning[] {
  const alias = new Map<string, string>();
  const trackedIds = new Set<string>();
  const candidates: Warning[] = [];
  for (const t of tracked) {
    trackedIds.add(t.id);
    if (t.warning.v1Id) alias.set(t.warning.v1Id, t.id);
    else if (t.state === 'open' && t.warning.source === 'v7') {
      candidates.push({ ...t.warning, id: t.id });
    }
  }
  if (alias.size === 0 && candidates.length === 0) return answer;

  if (candidates.length > 0) {
    const inAnswer = new Set(answer.map((w) => w.id));
    const fresh = answer.filter((w) => w.id !== '' && !trackedIds.has(w.id) && !alias.has(w.id));
    // Links to alerts known nowhere: not tracked, not continued, not in this answer.
    const unseen = new Map(
      fresh.map((w) => [
        w.id,
        w.related.filter(
          (id) =>
            id !== '' && id !== w.id && !trackedIds.has(id) && !alias.has(id) && !inAnswer.has(id),
        ),
      ]),
    );
    const linksUnseen = (w: Warning) => unseen.get(w.id)!.length > 0;
    let open = candidates;
    const take = (matched: Map<string, string>) => {
      const taken = new Set(matched.values());
      open = open.filter((w) => !taken.has(w.id));
      return matched;
    };
    // Twins first: the closest match. A cancel is never a continuation.
    const plain = fresh.filter((w) => w.status !== 'cancel' && !linksUnseen(w));
    for (const [v1Id, v7Id] of take(matchHandover(open, plain))) alias.set(v1Id, v7Id);
    // The twin of a v7 update names what it replaced, which v1 no longer returns either.
    const linking = fresh.filter((w) => w.status !== 'active' && linksUnseen(w));
    const twinsOfUpdates = take(
      matchHandover(
        open.filter((w) => w.related.length > 0),
        linking.filter((w) => w.status !== 'cancel'),
      ),
    );
    for (const [v1Id, v7Id] of twinsOfUpdates) alias.set(v1Id, v7Id);
    // The rest update or cancel the unseen twin of an open v7 warning: the link names it.
    const replacing = linking.filter((w) => !twinsOfUpdates.has(w.id));
    for (const [messageId, v7Id] of take(matchReplacements(open, replacing))) {
      alias.set(unseen.get(messageId)![0]!, v7Id);
    }
  }
  if (alias.size === 0) return answer;

  const linked = (ids: readonly string[]) => [
    ...new Set(ids.flatMap((id) => (alias.has(id) ? [alias.get(id)!, id] : [id]))),
  ];
  return answer.map((w) => {
    const v7Id = alias.get(w.id);
    const related = linked(w.related);
    if (v7Id) return { ...w, id: v7Id, v1Id: w.id, related };
    return related.length === w.related.length ? w : { ...w, related };
  });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
