/**
 * The handover from v7 to v1 (INTERFACE §10, DESIGN invariant 10: a source change is not news).
 *
 * Weather Alert v1 gives a warning another id than v7 did. A v1 alert that matches a warning
 * still open from v7 at the same place continues it: it is tracked under the v7 id subscribers
 * know (its own id kept as `v1Id`), so detection sees a known warning again and announces
 * nothing; a later v1 update or cancel naming that alert names the v7 id too, and its expiry is
 * the expiry of the v7 warning. A v7 warning no v1 alert continues ends by the usual miss rule.
 * Pure: no I/O.
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
 * Pairs v1 alerts with the open v7 warnings they continue, one to one: among the pairs that
 * match, the closest issue times first (ties by id, so the result does not depend on order).
 * Returns v1 alert id → v7 warning id.
 */
export function matchHandover(
  openV7: readonly Warning[],
  freshV1: readonly Warning[],
): Map<string, string> {
  const pairs: { gap: number; v7: string; v1: string }[] = [];
  for (const open of openV7) {
    for (const next of freshV1) {
      if (!continues(open, next)) continue;
      pairs.push({ gap: issueGapMs(open, next)!, v7: open.id, v1: next.id });
    }
  }
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
 * The answer of one v1 point as detection should see it, given what is tracked there: alerts
 * that continue a v7 warning (known from an earlier answer, or matched now) carry the v7 id,
 * and every link to such an alert names the v7 id first, then the alert's own. Alerts first
 * seen now that match no open v7 warning, and cancel messages, stay as they are (a cancel is
 * never a continuation: it is news, told as `cancel`). Returns the answer itself when no v7
 * warning is tracked at the point.
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
    const fresh = answer.filter(
      (w) => w.id !== '' && w.status !== 'cancel' && !trackedIds.has(w.id) && !alias.has(w.id),
    );
    for (const [v1Id, v7Id] of matchHandover(candidates, fresh)) alias.set(v1Id, v7Id);
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
