/**
 * Change detection: the warnings we track for one place, plus one upstream answer, give the
 * events to announce and the new state to store. Pure: the clock and the cycle are passed in.
 *
 * docs/design.md § Invariants 3 (only a well-formed answer can end a warning, and only when it is an
 * end: misses in answers of different, later cycles over a minimum time, or an end time in the
 * past; a warning told as ended that comes back is told as resumed) and 4 (update and cancel
 * follow the `related` chain).
 */
import { impliedEnd, parseInstant, type Warning } from './warning.js';
import { issueGapMs, mayReplace, oneToOne, type MatchPair } from './warning-match.js';

export type TrackedState = 'open' | 'superseded' | 'cancelled' | 'expired';

export interface TrackedWarning {
  id: string;
  state: TrackedState;
  /** Latest normalized record seen. */
  warning: Warning;
  firstSeen: Date;
  lastSeen: Date;
  /** Successful answers of different cycles without it since it was last seen (`countsAsMiss`). */
  misses: number;
  /** When the cycle whose answer counted the last miss started; null with no miss. */
  lastMissAt: Date | null;
  closedAt: Date | null;
  /**
   * How often it came back after its end was told: 0, then 1 after its first `resumed`. An
   * occurrence's `resumed` and `expired` are told once each (README, promises, "Back in force").
   */
  occurrence: number;
}

/**
 * A successful answer, or a failed call. `skipped`: records of the answer that could not be
 * read (src/qweather/records.ts); any one of them may be a tracked warning, so such an answer
 * says nothing about what ended (README, promises).
 */
export type FetchOutcome =
  { ok: true; warnings: readonly Warning[]; skipped?: number } | { ok: false };

export interface DetectSettings {
  expireAfterMisses: number;
  /** The least time from a warning's last sighting to the miss that ends it (EXPIRE_AFTER_SECONDS). */
  expireAfterMs: number;
  reappearWindowMs: number;
}

const HOUR_MS = 60 * 60 * 1000;

/** Upstream ids are valid at most 72 hours, so a warning back within that time is the same one. */
export const DEFAULT_DETECT_SETTINGS: DetectSettings = Object.freeze({
  expireAfterMisses: 2,
  expireAfterMs: 15 * 60 * 1000,
  reappearWindowMs: 72 * HOUR_MS,
});

export type EventType = 'new' | 'update' | 'cancel' | 'expired' | 'resumed';

export const EVENT_TYPES: readonly EventType[] = Object.freeze([
  'new',
  'update',
  'cancel',
  'expired',
  'resumed',
]);

/** A count per event type, all zero. */
export const NO_EVENTS = (): Record<EventType, number> => ({
  new: 0,
  update: 0,
  cancel: 0,
  expired: 0,
  resumed: 0,
});

export interface DetectedEvent {
  type: EventType;
  /** The notification key, together with the subscriber and the type. */
  warningId: string;
  /** The record the notification is about. */
  warning: Warning;
  /** Earlier ids this one updates or cancels ([] for new, expired and resumed). */
  supersedes: string[];
  /**
   * The warning's occurrence (`TrackedWarning.occurrence`): part of the notification key, so the
   * `expired` of a warning that resumed is told again. 0 for new, update and cancel.
   */
  occurrence: number;
  /**
   * Every earlier id of the chain known at this place, nearest first: who was told any of them
   * was told this story (README, promises, "no end of a story they were not told"). Not stored.
   */
  chain: string[];
}

export interface DetectResult {
  events: DetectedEvent[];
  /**
   * New state of every tracked warning that changed or was created (to upsert): state, misses,
   * closedAt or content. Entries here already carry the refreshed lastSeen and misses.
   */
  changes: TrackedWarning[];
  /**
   * Ids of tracked warnings seen in this answer: store lastSeen = now and misses = 0 for each
   * (those whose content or state also changed are in `changes` as well).
   */
  seen: string[];
}

export interface DetectInput {
  /** Every warning of this place last seen within the reappear window, any state. */
  tracked: readonly TrackedWarning[];
  fetch: FetchOutcome;
  now: Date;
  /**
   * When the poll cycle this answer belongs to started (default: `now`). A miss counts only in
   * a cycle that began after the warning was last seen and after the cycle of its last miss: a
   * re-run or a check job left over from an earlier cycle is never a second miss.
   */
  cycleStartedAt?: Date;
  settings?: DetectSettings;
}

type ClosedByLink = 'superseded' | 'cancelled';

export function detectChanges(input: DetectInput): DetectResult {
  const { tracked, fetch, now } = input;
  const cycleStartedAt = input.cycleStartedAt ?? now;
  const settings = input.settings ?? DEFAULT_DETECT_SETTINGS;
  // Invariant 3: a failed call says nothing about whether a warning is still in force.
  if (!fetch.ok) return { events: [], changes: [], seen: [] };
  // Nor does an answer with a record it could not read: that record may be any of them.
  const evidenceOfEnds = (fetch.skipped ?? 0) === 0;

  // A threshold below one would expire a warning on the very answer that first lacks it.
  const expireAfterMisses = Math.max(1, Math.floor(settings.expireAfterMisses));
  const known = indexTracked(tracked);
  const deduped = dedupeAnswer(fetch.warnings);
  const answer = evidenceOfEnds ? linkMissedReplacements(known, deduped) : deduped;
  const replaced = replacedIds(answer);

  const next = new Map<string, TrackedWarning>();
  const events: DetectedEvent[] = [];
  const seen: string[] = [];

  for (const warning of answer.values()) {
    const previous = known.get(warning.id);
    if (previous) seen.push(warning.id);
    if (previous && !isPastReappearWindow(previous, now, settings)) {
      const again = seenAgain(previous, warning, now);
      next.set(warning.id, again);
      if (previous.state === 'expired' && again.state === 'open') {
        // Back in force after its end was told: said once per reappearance, and its next end
        // is told again (README, promises).
        events.push(eventOf('resumed', again, []));
      }
      continue;
    }
    const fresh = freshWarning(warning, replaced.get(warning.id), now);
    next.set(warning.id, fresh.tracked);
    if (fresh.event) events.push(fresh.event);
  }

  // Invariant 4: the link closes what it replaces, so those are never reported as expired.
  // Links from records seen before are applied again: harmless for closed warnings, and it keeps
  // a replaced warning that reappears from being reopened.
  for (const [id, closedAs] of replaced) {
    const current = next.get(id) ?? known.get(id);
    if (current?.state === 'open') next.set(id, { ...current, state: closedAs, closedAt: now });
  }

  for (const previous of known.values()) {
    if (answer.has(previous.id) || next.has(previous.id) || previous.state !== 'open') continue;
    if (!evidenceOfEnds || !countsAsMiss(previous, cycleStartedAt)) continue;
    const missed = { ...previous, misses: previous.misses + 1, lastMissAt: cycleStartedAt };
    const enoughMisses =
      missed.misses >= expireAfterMisses &&
      now.getTime() - previous.lastSeen.getTime() >= settings.expireAfterMs;
    if (enoughMisses || hasEnded(previous.warning, now)) {
      const ended = { ...missed, state: 'expired' as const, closedAt: now };
      next.set(previous.id, ended);
      events.push(eventOf('expired', ended, []));
    } else {
      next.set(previous.id, missed);
    }
  }

  const changes = [...next.values()]
    .filter((candidate) => {
      const previous = known.get(candidate.id);
      return !previous || changedMaterially(previous, candidate);
    })
    .sort((a, b) => compareIds(a.id, b.id));

  if (events.length > 0) {
    const links = new Map([...known.values(), ...next.values()].map((t) => [t.id, t.warning]));
    for (const event of events) event.chain = chainOf(event.warning, links);
  }
  return { events: events.sort(compareEvents), changes, seen: seen.sort(compareIds) };
}

/**
 * Whether an answer of the cycle that started at `cycleStartedAt` without this warning is one
 * more miss: only when that cycle began after the warning was last seen and after the cycle
 * that counted its last miss. A check job of an earlier cycle that runs late, or the same
 * cycle's check again, is no new evidence (README, promises).
 */
export function countsAsMiss(entry: TrackedWarning, cycleStartedAt: Date): boolean {
  const after = Math.max(entry.lastSeen.getTime(), entry.lastMissAt?.getTime() ?? -Infinity);
  return cycleStartedAt.getTime() > after;
}

function eventOf(
  type: EventType,
  entry: Pick<TrackedWarning, 'id' | 'warning' | 'occurrence'>,
  supersedes: string[],
): DetectedEvent {
  const occurrence = type === 'expired' || type === 'resumed' ? entry.occurrence : 0;
  return { type, warningId: entry.id, warning: entry.warning, supersedes, occurrence, chain: [] };
}

/** The ids a warning replaces, and theirs, as far as `links` knows them; nearest first. */
export function chainOf(warning: Warning, links: ReadonlyMap<string, Warning>): string[] {
  const chain: string[] = [];
  const seen = new Set([warning.id]);
  let frontier = relatedIds(warning);
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const id of frontier) {
      if (seen.has(id)) continue;
      seen.add(id);
      chain.push(id);
      const earlier = links.get(id);
      if (earlier) next.push(...relatedIds(earlier));
    }
    frontier = next;
  }
  return chain;
}

/**
 * The tracked list after a detection result: seen warnings refreshed, changes applied, and
 * entries last seen more than the reappear window ago dropped (their ids may be reused).
 */
export function applyDetectResult(
  tracked: readonly TrackedWarning[],
  result: DetectResult,
  now: Date,
  settings: DetectSettings = DEFAULT_DETECT_SETTINGS,
): TrackedWarning[] {
  const byId = indexTracked(tracked);
  for (const id of result.seen) {
    const previous = byId.get(id);
    if (previous) byId.set(id, { ...previous, lastSeen: now, misses: 0, lastMissAt: null });
  }
  for (const change of result.changes) byId.set(change.id, change);
  return [...byId.values()].filter(
    (entry) => now.getTime() - entry.lastSeen.getTime() <= settings.reappearWindowMs,
  );
}

/** The ids a record updates or cancels: unique, non-empty, never itself. */
export function relatedIds(warning: Warning): string[] {
  const ids = new Set<string>();
  for (const raw of warning.related) {
    const id = raw.trim();
    if (id !== '' && id !== warning.id) ids.add(id);
  }
  return [...ids];
}

/** The later of two records by pubTime (a missing pubTime is the earliest); ties keep `a`. */
function laterRecord(a: Warning, b: Warning): Warning {
  const aTime = parseInstant(a.pubTime)?.getTime() ?? Number.NEGATIVE_INFINITY;
  const bTime = parseInstant(b.pubTime)?.getTime() ?? Number.NEGATIVE_INFINITY;
  return bTime > aTime ? b : a;
}

/** The same id twice in one answer counts once: the latest publication wins. */
function dedupeAnswer(warnings: readonly Warning[]): Map<string, Warning> {
  const byId = new Map<string, Warning>();
  for (const warning of warnings) {
    // An id is the notification key; a record without one cannot be tracked or announced.
    if (warning.id === '') continue;
    const other = byId.get(warning.id);
    byId.set(warning.id, other ? laterRecord(other, warning) : warning);
  }
  return new Map([...byId].sort(([a], [b]) => compareIds(a, b)));
}

/** Tracked rows by id; should the store hand over one id twice, the last seen wins. */
function indexTracked(tracked: readonly TrackedWarning[]): Map<string, TrackedWarning> {
  const byId = new Map<string, TrackedWarning>();
  for (const entry of tracked) {
    const other = byId.get(entry.id);
    if (!other || entry.lastSeen.getTime() >= other.lastSeen.getTime()) byId.set(entry.id, entry);
  }
  return byId;
}

/**
 * Links an update or cancel that names only warnings never seen to the open warning it
 * replaces. Between two answers a warning may be updated twice, or updated while the call
 * failed: the answer then holds the second update, naming the first, which was never seen, and
 * nothing names the warning we track. Left alone, that warning would expire under its own
 * update, an all-clear while the update is in force. An open tracked warning missing from the
 * answer and named by nothing in it is taken as replaced by such a message when the message
 * may replace it (same type, same sender when both name one, issued no earlier: `mayReplace`),
 * one to one, the closest issue times first. The message's link then names it first, so it is
 * closed by the link and the event supersedes it. v1 points see this across the v7 handover
 * too, where the twin of a v7 warning may never be seen (src/domain/handover.ts).
 */
function linkMissedReplacements(
  known: ReadonlyMap<string, TrackedWarning>,
  answer: Map<string, Warning>,
): Map<string, Warning> {
  // A message linked so before keeps its link: its record as stored names the warning first.
  for (const w of answer.values()) {
    const stored = known.get(w.id)?.warning.related;
    const extra = stored ? stored.length - w.related.length : 0;
    if (extra > 0 && w.related.every((id, i) => stored![extra + i] === id)) {
      answer.set(w.id, { ...w, related: [...stored!] });
    }
  }
  const named = new Set([...answer.values()].flatMap((w) => relatedIds(w)));
  const orphans = [...known.values()].filter(
    (t) => t.state === 'open' && !answer.has(t.id) && !named.has(t.id),
  );
  if (orphans.length === 0) return answer;
  const messages = [...answer.values()].filter((w) => {
    if (w.status === 'active' || known.has(w.id)) return false;
    const links = relatedIds(w);
    return links.length > 0 && links.every((id) => !known.has(id) && !answer.has(id));
  });
  const pairs: MatchPair[] = [];
  for (const orphan of orphans) {
    for (const message of messages) {
      if (!mayReplace(orphan.warning, message)) continue;
      pairs.push({ gap: issueGapMs(orphan.warning, message)!, known: orphan.id, next: message.id });
    }
  }
  for (const [messageId, orphanId] of oneToOne(pairs)) {
    const message = answer.get(messageId)!;
    answer.set(messageId, { ...message, related: [orphanId, ...message.related] });
  }
  return answer;
}

/** Ids that an update or cancel in this answer replaces; a cancel outranks an update. */
function replacedIds(answer: Map<string, Warning>): Map<string, ClosedByLink> {
  const replaced = new Map<string, ClosedByLink>();
  for (const warning of answer.values()) {
    if (warning.status === 'active') continue;
    const closedAs: ClosedByLink = warning.status === 'cancel' ? 'cancelled' : 'superseded';
    for (const id of relatedIds(warning)) {
      if (replaced.get(id) !== 'cancelled') replaced.set(id, closedAs);
    }
  }
  return replaced;
}

/** Ids are valid upstream at most 72 hours: an expired one back after that is a new warning. */
function isPastReappearWindow(entry: TrackedWarning, now: Date, settings: DetectSettings): boolean {
  return (
    entry.state === 'expired' &&
    now.getTime() - entry.lastSeen.getTime() > settings.reappearWindowMs
  );
}

/**
 * A tracked warning in this answer again: fresher content and timestamps. Superseded and
 * cancelled warnings the upstream still returns stay closed, silently; an expired one back
 * within the window is in force again, one occurrence later (the caller tells it as resumed),
 * unless it comes back as a cancel.
 */
function seenAgain(previous: TrackedWarning, warning: Warning, now: Date): TrackedWarning {
  const refreshed = { ...previous, warning, lastSeen: now, misses: 0, lastMissAt: null };
  if (previous.state !== 'expired') return refreshed;
  return warning.status === 'cancel'
    ? { ...refreshed, state: 'cancelled', closedAt: previous.closedAt ?? now }
    : { ...refreshed, state: 'open', closedAt: null, occurrence: previous.occurrence + 1 };
}

function freshWarning(
  warning: Warning,
  replacedAs: ClosedByLink | undefined,
  now: Date,
): { tracked: TrackedWarning; event: DetectedEvent | null } {
  const base = {
    id: warning.id,
    warning,
    firstSeen: now,
    lastSeen: now,
    misses: 0,
    lastMissAt: null,
    occurrence: 0,
  };
  if (warning.status === 'cancel') {
    // Stored closed at once: a cancel message is never announced as new and never expires.
    return {
      tracked: { ...base, state: 'cancelled', closedAt: now },
      event: eventOf('cancel', base, relatedIds(warning)),
    };
  }
  if (warning.status === 'update') {
    return {
      tracked: { ...base, state: 'open', closedAt: null },
      event: eventOf('update', base, relatedIds(warning)),
    };
  }
  if (replacedAs) {
    // First seen together with its own update or cancel: that message carries the news, and
    // announcing the stale original as new would contradict it.
    return { tracked: { ...base, state: replacedAs, closedAt: now }, event: null };
  }
  return {
    tracked: { ...base, state: 'open', closedAt: null },
    event: eventOf('new', base, []),
  };
}

function hasEnded(warning: Warning, now: Date): boolean {
  const end = impliedEnd(warning);
  return end !== null && end.getTime() <= now.getTime();
}

function changedMaterially(before: TrackedWarning, after: TrackedWarning): boolean {
  return (
    before.state !== after.state ||
    before.misses !== after.misses ||
    before.occurrence !== after.occurrence ||
    before.lastMissAt?.getTime() !== after.lastMissAt?.getTime() ||
    before.closedAt?.getTime() !== after.closedAt?.getTime() ||
    before.firstSeen.getTime() !== after.firstSeen.getTime() ||
    (before.warning !== after.warning && !sameJson(before.warning, after.warning))
  );
}

/**
 * Deep equality of JSON-shaped values, whatever the order of object keys. The stored record
 * comes back from a jsonb column, which orders keys its own way: comparing serializations
 * called every stored warning changed and rewrote it on every quiet check.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => sameJson(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  // Keys holding undefined are absent once stored as JSON.
  const keys = Object.keys(left).filter((k) => left[k] !== undefined);
  const otherKeys = Object.keys(right).filter((k) => right[k] !== undefined);
  return (
    keys.length === otherKeys.length &&
    keys.every((k) => Object.hasOwn(right, k) && sameJson(left[k], right[k]))
  );
}

const EVENT_ORDER: Record<EventType, number> = {
  cancel: 0,
  update: 0,
  new: 1,
  resumed: 1,
  expired: 2,
};

/** Replacements first (they close what they replace), then new warnings, then endings. */
function compareEvents(a: DetectedEvent, b: DetectedEvent): number {
  return EVENT_ORDER[a.type] - EVENT_ORDER[b.type] || compareIds(a.warningId, b.warningId);
}

/** Code-unit order, independent of the locale the process runs in. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
