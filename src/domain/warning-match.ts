/**
 * Whether two warning records are one warning, or one replaces the other, when no id links
 * them: the v7 → v1 handover (src/domain/handover.ts) and an update or cancel whose link names
 * only warnings never seen (`linkMissedReplacements`, src/domain/detect.ts). Pure: no I/O.
 */
import { parseInstant, type Warning } from './warning.js';

/** Issue times of one warning as v7 and v1 report it differ by minutes; an hour is generous. */
export const ISSUE_TIME_TOLERANCE_MS = 60 * 60 * 1000;

/** v7's old type codes 11B01…11B99 are today's 1001…1099. */
function typeCodeOf(warning: Warning): string | null {
  const code = warning.typeCode?.trim();
  if (!code) return null;
  const old = /^11B(\d\d)$/i.exec(code);
  return old ? `10${old[1]}` : code;
}

export function sameType(a: Warning, b: Warning): boolean {
  const codeA = typeCodeOf(a);
  const codeB = typeCodeOf(b);
  if (codeA && codeB) return codeA === codeB;
  const nameA = a.typeName?.trim();
  const nameB = b.typeName?.trim();
  return !!nameA && nameA === nameB;
}

/** Same level on the 白色…红色 scale, else the same colour; unknown on both sides is no match. */
export function sameLevel(a: Warning, b: Warning): boolean {
  if (a.level !== 'unknown' && b.level !== 'unknown') return a.level === b.level;
  const colorA = a.color?.trim().toLowerCase();
  const colorB = b.color?.trim().toLowerCase();
  return !!colorA && colorA === colorB;
}

/** Compared only when both name one: either source may leave the sender out. */
export function sameSender(a: Warning, b: Warning): boolean {
  const senderA = a.sender?.trim();
  const senderB = b.sender?.trim();
  return !senderA || !senderB || senderA === senderB;
}

/** How far apart the two issue times are; null when either is missing (no match then). */
export function issueGapMs(a: Warning, b: Warning): number | null {
  const timeA = parseInstant(a.pubTime);
  const timeB = parseInstant(b.pubTime);
  if (!timeA || !timeB) return null;
  return Math.abs(timeA.getTime() - timeB.getTime());
}

/**
 * Whether the update or cancel `next`, which names only warnings never seen, may replace the
 * open warning `open` (both at one place): same type, same sender when both name one, and issued
 * no earlier than the warning (within the tolerance, as the two sources' times differ). The
 * level may differ: an update often changes it.
 */
export function mayReplace(open: Warning, next: Warning): boolean {
  const openTime = parseInstant(open.pubTime);
  const nextTime = parseInstant(next.pubTime);
  return (
    openTime !== null &&
    nextTime !== null &&
    nextTime.getTime() >= openTime.getTime() - ISSUE_TIME_TOLERANCE_MS &&
    sameType(open, next) &&
    sameSender(open, next)
  );
}

/** A known warning and a newer record that may continue or replace it, `gap` apart in issue time. */
export interface MatchPair {
  gap: number;
  known: string;
  next: string;
}

/**
 * Takes pairs one to one, the closest issue times first (ties by id, so the result does not
 * depend on order). Returns the next record's id → the known warning's id.
 */
export function oneToOne(pairs: MatchPair[]): Map<string, string> {
  pairs.sort((a, b) => a.gap - b.gap || compare(a.known, b.known) || compare(a.next, b.next));
  const matched = new Map<string, string>();
  const taken = new Set<string>();
  for (const pair of pairs) {
    if (matched.has(pair.next) || taken.has(pair.known)) continue;
    matched.set(pair.next, pair.known);
    taken.add(pair.known);
  }
  return matched;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
