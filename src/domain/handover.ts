/**
 * The handover from v7 to v1 (docs/configuration.md, docs/design.md invariant 10: a source change is not news).
 *
 * Weather Alert v1 gives a warning another id than v7 did. A v1 alert that matches a warning
 * still open from v7 at the same place continues it: it is tracked under the v7 id subscribers
 * know (its own id kept as `v1Id`), so detection sees a known warning again and announces
 * nothing; a later v1 update or cancel naming that alert names the v7 id too, and its expiry is
 * the expiry of the v7 warning. The v1 twin of a v7 warning may never be seen: updated or
 * cancelled between v7's last answer and v1's first, it is gone from v1's answers (an alert a
 * later one supersedes is no longer returned), and the update or cancel names an id nobody
 * knows. Detection links such a message to the open v7 warning it can replace, as it does for
 * any source (`linkMissedReplacements`, src/domain/detect.ts), so it is told as that warning's
 * update or cancel; only the twin of a v7 update, which names an unseen alert too, is matched
 * here. A v7 warning no v1 alert continues or replaces ends by the usual miss rule. Pure: no
 * I/O.
 */
import type { TrackedWarning } from './detect.js';
import type { Warning } from './warning.js';
import {
  ISSUE_TIME_TOLERANCE_MS,
  issueGapMs,
  oneToOne,
  sameLevel,
  sameSender,
  sameType,
  type MatchPair,
} from './warning-match.js';

/** Issue times of one warning as v7 and v1 report it differ by minutes; an hour is generous. */
export const HANDOVER_TIME_TOLERANCE_MS = ISSUE_TIME_TOLERANCE_MS;

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
 * match, the closest issue times first. Returns v1 alert id → v7 warning id.
 */
export function matchHandover(
  openV7: readonly Warning[],
  freshV1: readonly Warning[],
): Map<string, string> {
  const pairs: MatchPair[] = [];
  for (const open of openV7) {
    for (const next of freshV1) {
      if (!continues(open, next)) continue;
      pairs.push({ gap: issueGapMs(open, next)!, known: open.id, next: next.id });
    }
  }
  return oneToOne(pairs);
}

/**
 * The answer of one v1 point as detection should see it, given what is tracked there: alerts
 * that continue a v7 warning (known from an earlier answer, or matched now) carry the v7 id,
 * and every link to such an alert names the v7 id first, then the alert's own. A cancel is
 * never a continuation: it is news, told as `cancel`. Alerts first seen now that
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
    // Whether it links to an alert known nowhere: not tracked, not continued, not in the answer.
    const linksUnseen = (w: Warning) =>
      w.related.some(
        (id) =>
          id !== '' && id !== w.id && !trackedIds.has(id) && !alias.has(id) && !inAnswer.has(id),
      );
    // Twins first: the closest match. A cancel is never a continuation.
    const plain = fresh.filter((w) => w.status !== 'cancel' && !linksUnseen(w));
    const twins = matchHandover(candidates, plain);
    for (const [v1Id, v7Id] of twins) alias.set(v1Id, v7Id);
    // The twin of a v7 update names what it replaced, which v1 no longer returns either.
    const continued = new Set(twins.values());
    const openUpdates = candidates.filter((w) => w.related.length > 0 && !continued.has(w.id));
    const linking = fresh.filter((w) => w.status === 'update' && linksUnseen(w));
    for (const [v1Id, v7Id] of matchHandover(openUpdates, linking)) alias.set(v1Id, v7Id);
    // The rest may update or cancel the unseen twin of an open v7 warning: detection links
    // such a message to the warning it replaces (`linkMissedReplacements`), whatever the source.
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
