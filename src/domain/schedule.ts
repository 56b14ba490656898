import { levelRank, type Level } from './warning.js';

/**
 * The message scheduler (docs/messages.md): where a new notification goes — into an open message of
 * its subscriber, or into a new message due at a given time — under the subscriber's grouping,
 * quiet hours and hourly limit. Pure: the clock, the subscriber's open messages and its recent
 * send times come in; the pipeline does the reading and writing.
 *
 * The rules, in the order they are applied:
 * 1. Grouping proposes: 'none' a message now; 'cycle' the open message of the same poll cycle,
 *    else one due in 60 s (released earlier by the pipeline when the cycle's checks are done);
 *    'window' the open window message, else one due in N s.
 * 2. Quiet hours: a notification that is not urgent never goes out inside the subscriber's quiet
 *    window. If it would, it is held: it joins the open 'quiet' message, else a new one due at the
 *    window's end. An urgent one never joins a quiet-held message and is never held.
 * 3. maxPerHour: no new message may make any sliding hour carry more than that many messages. What
 *    is over joins the next message allowed, or waits in a new one due when a slot frees.
 * Held is never dropped (invariant 9): every call returns a placement.
 *
 * Corner cases, decided for the subscriber woken at 3 a.m. by a yellow warning:
 * - Detected just before the window opens, a notification whose grouping delay would carry it
 *   inside goes out just before the window, not the next morning.
 * - A held notification only joins held ones: a window message an urgent one opened at 06:50 would
 *   carry it past the window's end, and an urgent message at 3 a.m. must not carry it at all.
 * - A slot the hourly limit frees inside the window is no slot for a notification that is not
 *   urgent: it is held with the others until the window's end.
 * - The hourly limit outranks the window's end: when the hour before the end is full, the held
 *   message takes the first free slot after it. The subscriber asked for both; only the limit is a
 *   promise about how many messages, the end is a promise about not before.
 * - An unknown level never bypasses the quiet hours.
 * - Over the limit, a 'cycle' message becomes a 'throttle' one: released early it could break the
 *   limit, so it waits for its slot.
 * - A 'throttle' message is joined whatever the grouping, even 'none': it waits because no message
 *   may go before it (the hourly limit, or a chat robot's rate limit, which sets a message back to
 *   open 'throttle'), so a new message could only wait behind it.
 */

export type GroupMode = { kind: 'none' } | { kind: 'cycle' } | { kind: 'window'; seconds: number };

/**
 * Local wall-clock "HH:MM" (or "HH:MM:SS", which the demo uses) in the subscriber's time zone;
 * `from` after `to` spans midnight.
 */
export interface QuietHours {
  from: string;
  to: string;
  bypassLevel: Level | null;
}

export interface DeliveryPrefs {
  group: GroupMode;
  /** IANA zone the quiet hours are read in. */
  timezone: string;
  quietHours: QuietHours | null;
  maxPerHour: number | null;
}

export type Hold = 'cycle' | 'window' | 'quiet' | 'throttle';

/** A 'cycle' message never waits more than this after its first notification (docs/messages.md). */
export const CYCLE_WAIT_LIMIT_MS = 60_000;
/** An open message due sooner than this is not joined: a sender may be taking it already. */
export const JOIN_MARGIN_MS = 2_000;

const HOUR_MS = 3_600_000;

/** A message of the subscriber that is still collecting (status 'open'). */
export interface OpenMessage {
  id: string;
  hold: Hold;
  /** The cycle a 'cycle' message collects; null otherwise. */
  cycleId: string | null;
  /** When it is due (`next_attempt_at`). */
  sendAt: Date;
}

export interface NewNotification {
  level: Level;
  /** From `isUrgent`: at/above the bypass level, or in a chain that already was. */
  urgent: boolean;
  /** The poll cycle that created it. */
  cycleId: string;
}

export type Placement =
  { join: string } | { create: { hold: Hold | null; sendAt: Date; cycleId: string | null } };

/**
 * Urgent = never held by quiet hours: at or above the bypass level, or part of a chain that
 * already had an urgent notification for this subscriber. The stickiness is what a woken
 * subscriber needs: after a red warning at 3 a.m. its downgrade to yellow or its cancellation is
 * exactly the news that lets them go back to sleep, so it must not wait for the morning.
 */
export function isUrgent(level: Level, quiet: QuietHours | null, chainUrgent: boolean): boolean {
  if (chainUrgent) return true;
  if (!quiet || quiet.bypassLevel === null || quiet.bypassLevel === 'unknown') return false;
  // An unknown level ranks below every known one, so it never bypasses: when in doubt, the
  // subscriber asked not to be woken.
  return level !== 'unknown' && levelRank(level) >= levelRank(quiet.bypassLevel);
}

// ---------------------------------------------------------------------------------------------
// Quiet windows in a time zone

function secondsOf(clock: string): number | null {
  const match = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/.exec(clock);
  return match ? Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3] ?? 0) : null;
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

function offsetFormatter(timeZone: string): Intl.DateTimeFormat {
  let formatter = offsetFormatters.get(timeZone);
  if (!formatter) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone,
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
        hourCycle: 'h23',
      });
    } catch {
      // An unknown zone must not lose the subscriber's quiet hours altogether; the seed validates
      // zones, so this is a stale row at worst, and UTC is at least a fixed, known reading.
      formatter = offsetFormatter('UTC');
    }
    offsetFormatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The zone's offset from UTC (ms) read through Intl at the instant `ms`. */
function readOffset(ms: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of offsetFormatter(timeZone).formatToParts(new Date(ms))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return wall - Math.floor(ms / 1000) * 1000;
}

/**
 * Offsets by zone and quarter hour. Every zone in use today has an offset in whole quarter hours
 * and changes it at a whole local hour or half hour, so an offset holds for the whole UTC quarter
 * hour it was read in; Intl's formatToParts was most of a placement's cost.
 */
const QUARTER_HOUR_MS = 900_000;
const offsetsByQuarter = new Map<string, number>();
const MAX_OFFSETS = 20_000;

/** The zone's offset from UTC at the instant `ms`, in ms. */
function offsetAt(ms: number, timeZone: string): number {
  const quarter = Math.floor(ms / QUARTER_HOUR_MS);
  const key = `${timeZone} ${quarter}`;
  let offset = offsetsByQuarter.get(key);
  if (offset === undefined) {
    offset = readOffset(quarter * QUARTER_HOUR_MS, timeZone);
    if (offsetsByQuarter.size >= MAX_OFFSETS) offsetsByQuarter.clear();
    offsetsByQuarter.set(key, offset);
  }
  return offset;
}

/** The local wall clock at `ms`, as if it were a UTC instant. */
function wallClock(ms: number, timeZone: string): number {
  return ms + offsetAt(ms, timeZone);
}

/**
 * The instant at which the zone's wall clock reads `wall` (given as if UTC). A time the autumn
 * overlap repeats is its first occurrence. A time the spring gap skips has no instant: for a
 * window's end it is the moment of the change (the first instant the clock reads later), for a
 * window's start it is shifted by the gap's length (02:30 becomes 03:30 summer time). Resolving
 * the two differently keeps the subscriber's free time between two windows from vanishing on that
 * night (quiet 02:59-02:00 would otherwise end and begin again at the same instant, and a held
 * message would go out inside the next window); the price is that a window starting inside the
 * gap starts up to an hour late once a year.
 */
function instantOfWall(wall: number, timeZone: string, inGap: 'change' | 'shift'): number {
  const before = offsetAt(wall - 86_400_000, timeZone);
  const after = offsetAt(wall + 86_400_000, timeZone);
  const candidates = [wall - before, wall - after].filter(
    (instant) => wallClock(instant, timeZone) === wall,
  );
  if (candidates.length > 0) return Math.min(...candidates);
  if (inGap === 'shift') return wall - before;
  // Find the change between the two readings (whole seconds; zones change on them).
  let low = Math.min(wall - before, wall - after);
  let high = Math.max(wall - before, wall - after);
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (wallClock(middle, timeZone) >= wall) high = middle;
    else low = middle;
  }
  return high;
}

/**
 * The quiet window (absolute instants, start inclusive, end exclusive) that contains `at`, read in
 * the subscriber's zone, or null. Windows over midnight (22:00-07:00) belong to the evening they
 * start in; on a DST night they are an hour shorter or longer in absolute time, as the
 * subscriber's wall clock says.
 */
export function quietWindowAt(
  at: Date,
  timezone: string,
  quiet: QuietHours,
): { start: Date; end: Date } | null {
  const from = secondsOf(quiet.from);
  const to = secondsOf(quiet.to);
  if (from === null || to === null || from === to) return null;
  const t = at.getTime();
  const wall = wallClock(t, timezone);
  const localMidnight = wall - (((wall % 86_400_000) + 86_400_000) % 86_400_000);
  // The window containing `at` starts on the local day of `at` or, over midnight, the day before.
  for (const dayOffset of [-1, 0]) {
    const day = localMidnight + dayOffset * 86_400_000;
    const [start, end] = windowOfDay(day, from, to, timezone);
    if (!(start < end && start <= t && t < end)) continue;
    // The free time between two windows can be exactly the hour a spring night skips (quiet
    // 03:00-02:00 in New York): the windows then meet, and the quiet runs on to the next end
    // rather than sending at an instant that already belongs to the next window.
    let until = end;
    for (let next = day + 86_400_000; next <= day + 3 * 86_400_000; next += 86_400_000) {
      const [nextStart, nextEnd] = windowOfDay(next, from, to, timezone);
      if (nextStart > until || nextStart >= nextEnd) break;
      until = Math.max(until, nextEnd);
    }
    return { start: new Date(start), end: new Date(until) };
  }
  return null;
}

/**
 * Window boundaries by zone, hours and local day. Every placement asks about a few instants, and
 * a storm places thousands of notifications for subscribers who share a few zones and hours:
 * resolving the wall clock through Intl each time was most of a placement's cost.
 */
const windowsByDay = new Map<string, [number, number]>();
const MAX_WINDOWS_BY_DAY = 5000;

function windowOfDay(day: number, from: number, to: number, timezone: string): [number, number] {
  const key = `${timezone} ${from} ${to} ${day}`;
  let window = windowsByDay.get(key);
  if (!window) {
    window = [
      instantOfWall(day + from * 1000, timezone, 'shift'),
      instantOfWall(day + (to > from ? 0 : 86_400_000) + to * 1000, timezone, 'change'),
    ];
    if (windowsByDay.size >= MAX_WINDOWS_BY_DAY) windowsByDay.clear();
    windowsByDay.set(key, window);
  }
  return window;
}

// ---------------------------------------------------------------------------------------------
// The hourly limit

/**
 * The open intervals of time in which one more message would put more than `max` messages into
 * some sliding hour. With the sends sorted, a new send at t is too many exactly when some `max`
 * consecutive sends s[i..i+max-1] together with t fit in less than an hour, i.e. when
 * s[i+max-1] - 1h < t < s[i] + 1h.
 */
function busyIntervals(sends: readonly number[], max: number): Array<[number, number]> {
  const sorted = [...sends].sort((a, b) => a - b);
  const busy: Array<[number, number]> = [];
  for (let i = 0; i + max - 1 < sorted.length; i++) {
    const low = sorted[i + max - 1]! - HOUR_MS;
    const high = sorted[i]! + HOUR_MS;
    if (low < high) busy.push([low, high]);
  }
  return busy;
}

/** The earliest t >= from such that [t, t + span] meets no busy interval. */
function firstFreeSlot(busy: ReadonlyArray<[number, number]>, from: number, span: number): number {
  // The answer is `from` or the end of some busy interval: an end is the first instant after it.
  const candidates = [from, ...busy.map(([, high]) => high).filter((high) => high > from)].sort(
    (a, b) => a - b,
  );
  for (const t of candidates) {
    if (busy.every(([low, high]) => !(t < high && t + span > low))) return t;
  }
  // Not reached: the last candidate (the latest end, or `from` when that is later) meets none.
  return candidates[candidates.length - 1] ?? from;
}

// ---------------------------------------------------------------------------------------------
// Placement

export interface PlacementInput {
  now: Date;
  prefs: DeliveryPrefs;
  notification: NewNotification;
  /** The subscriber's messages with status 'open'. */
  open: readonly OpenMessage[];
  /**
   * Send times of this subscriber's messages sent within the last hour, plus the due times of
   * its messages not yet sent (open or pending). When the pipeline releases a 'cycle' message
   * early, its release time should replace its due time here.
   */
  recentSends: readonly Date[];
}

export function placeNotification(input: PlacementInput): Placement {
  const { now, prefs, notification, open } = input;
  const t = now.getTime();
  const urgent = notification.urgent;
  const quiet = prefs.quietHours;
  const quietAt = (ms: number) =>
    quiet && !urgent ? quietWindowAt(new Date(ms), prefs.timezone, quiet) : null;

  // Joinable: not about to be taken by a sender, and not a way around the quiet hours. A message
  // that is not urgent is never due inside the window, but an urgent one may be: a yellow warning
  // must not ride along with the red one at 3 a.m. (it waits for the morning), and a red one must
  // not wait in the morning's quiet message.
  const joinable = open
    .filter((m) => m.sendAt.getTime() - t >= JOIN_MARGIN_MS)
    .filter((m) => (urgent ? m.hold !== 'quiet' : quietAt(m.sendAt.getTime()) === null))
    .sort((a, b) => a.sendAt.getTime() - b.sendAt.getTime());

  // 1. Grouping; a held notification is grouped by the quiet hours instead (step 2): joining a
  // window message that an urgent one opened at 06:50 would carry it past the window's end.
  const group = prefs.group;
  const quietNow = quietAt(t);
  const collecting =
    quietNow !== null
      ? undefined
      : group.kind === 'cycle'
        ? joinable.find((m) => m.hold === 'cycle' && m.cycleId === notification.cycleId)
        : group.kind === 'window'
          ? joinable.find((m) => m.hold === 'window')
          : undefined;
  if (collecting) return { join: collecting.id };
  // A message waiting for a slot ('throttle': the hourly limit, or a chat robot's own rate limit
  // that held it back) is the next message allowed, whatever the grouping: what comes meanwhile
  // rides along rather than queue behind it in a message of its own.
  const waiting = quietNow === null ? joinable.find((m) => m.hold === 'throttle') : undefined;
  if (waiting) return { join: waiting.id };
  let hold: Hold | null =
    group.kind === 'cycle' ? 'cycle' : group.kind === 'window' ? 'window' : null;
  let sendAt =
    group.kind === 'cycle'
      ? t + CYCLE_WAIT_LIMIT_MS
      : group.kind === 'window'
        ? t + group.seconds * 1000
        : t;
  // A 'cycle' message may be released as early as now, so it needs its slot over the whole span.
  let earliest = group.kind === 'cycle' ? t : sendAt;

  // 2. Quiet hours.
  const quietAtDue = quietNow ?? quietAt(sendAt);
  if (quietNow === null && quietAtDue !== null) {
    // Detected before the window opens, but the grouping delay would carry it in: it goes out
    // just before the window instead of waiting all night for a few seconds of collecting. The
    // subscriber is still awake then; the morning is hours away.
    sendAt = Math.max(t, quietAtDue.start.getTime() - 1);
    earliest = Math.min(earliest, sendAt);
  } else if (quietNow !== null) {
    const held = joinable.find((m) => m.hold === 'quiet');
    if (held) return { join: held.id };
    hold = 'quiet';
    sendAt = quietNow.end.getTime();
    earliest = sendAt;
  }

  // 3. The hourly limit.
  if (prefs.maxPerHour !== null) {
    const busy = busyIntervals(
      input.recentSends.map((d) => d.getTime()),
      // The seed and the table both require at least 1; a 0 here would hold everything forever,
      // and held is never dropped, so it reads as 1.
      Math.max(1, prefs.maxPerHour),
    );
    if (firstFreeSlot(busy, earliest, sendAt - earliest) !== earliest) {
      // Over the limit: the next message allowed is the earlier of an open message it may join
      // and the first slot that frees at or after the proposed due time; on a tie, joining sends
      // no extra message. The new message waits for its slot and is not released early, so a
      // point is enough; starting from the due time (not now) keeps what a cycle or window
      // collects together in it.
      let slot = firstFreeSlot(busy, sendAt, 0);
      let slotHold: Hold = hold === 'quiet' ? 'quiet' : 'throttle';
      for (let guard = 0; guard < 64; guard++) {
        const window = quietAt(slot);
        if (window === null) break;
        // A slot inside the quiet hours is no slot for a notification that is not urgent: it is
        // held like any other, at the window's end, with the other held notifications.
        slotHold = 'quiet';
        slot = firstFreeSlot(busy, window.end.getTime(), 0);
      }
      const next = joinable[0];
      if (next && next.sendAt.getTime() <= slot) return { join: next.id };
      if (slotHold === 'quiet') {
        const held = joinable.find((m) => m.hold === 'quiet');
        if (held) return { join: held.id };
      }
      return { create: { hold: slotHold, sendAt: new Date(slot), cycleId: null } };
    }
  }
  return {
    create: {
      hold,
      sendAt: new Date(sendAt),
      cycleId: hold === 'cycle' ? notification.cycleId : null,
    },
  };
}
