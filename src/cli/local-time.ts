/**
 * Times as an operator reads and types them at a terminal (docs/operations.md): in the zone of the
 * process (`TZ`, else the system's), always with the offset written out so that a table pasted
 * elsewhere still says which instant it means.
 */

/** The zone the CLI speaks: `tz` (the setting TZ) when it names one, else the system's. */
export function terminalZone(tz?: string): string {
  if (tz) {
    try {
      return new Intl.DateTimeFormat('en-US', { timeZone: tz.replace(/^:/, '') }).resolvedOptions()
        .timeZone;
    } catch {
      // Not a zone ICU knows (a POSIX rule such as "CST-8"): the process's own reading of it.
    }
  }
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatIn(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
    formats.set(timeZone, format);
  }
  return format;
}

interface WallClock {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  /** `+08:00`, `-05:00`, `+00:00`. */
  offset: string;
}

function wallClock(date: Date, timeZone: string): WallClock {
  const parts = Object.fromEntries(
    formatIn(timeZone)
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  // "GMT+08:00", or plain "GMT" at offset zero.
  const offset = (parts.timeZoneName ?? 'GMT').replace('GMT', '') || '+00:00';
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
    offset,
  };
}

/** `2026-07-01 16:00:00+08:00`: to the second, in `timeZone`, its offset written out. */
export function localTime(date: Date | null, timeZone: string): string {
  if (!date) return '';
  const w = wallClock(date, timeZone);
  return `${w.year}-${w.month}-${w.day} ${w.hour}:${w.minute}:${w.second}${w.offset}`;
}

function offsetMs(date: Date, timeZone: string): number {
  const sign = wallClock(date, timeZone).offset.startsWith('-') ? -1 : 1;
  const [hours, minutes] = wallClock(date, timeZone).offset.slice(1).split(':').map(Number);
  return sign * ((hours ?? 0) * 60 + (minutes ?? 0)) * 60_000;
}

/** A wall-clock reading: calendar fields and milliseconds. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  ms: number;
}

/** The instant of a wall time read at UTC. */
export function utcOfWallTime(wall: WallTime): number {
  return Date.UTC(
    wall.year,
    wall.month - 1,
    wall.day,
    wall.hour,
    wall.minute,
    wall.second,
    wall.ms,
  );
}

/**
 * The instant at which clocks in `timeZone` read the given wall time. In a gap (spring forward)
 * it is the instant an hour on; in an overlap, the earlier of the two.
 */
export function instantOfWallTime(wall: WallTime, timeZone: string): Date {
  const asUtc = utcOfWallTime(wall);
  const first = asUtc - offsetMs(new Date(asUtc), timeZone);
  const second = asUtc - offsetMs(new Date(first), timeZone);
  return new Date(Math.min(first, second));
}
