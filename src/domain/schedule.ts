// TEMPORARY STUB: replaced by the scheduler of branch sched17 at merge.
import { levelRank, type Level } from './warning.js';

export type GroupMode = { kind: 'none' } | { kind: 'cycle' } | { kind: 'window'; seconds: number };
export interface QuietHours {
  from: string;
  to: string;
  bypassLevel: Level | null;
}
export interface DeliveryPrefs {
  group: GroupMode;
  timezone: string;
  quietHours: QuietHours | null;
  maxPerHour: number | null;
}
export type Hold = 'cycle' | 'window' | 'quiet' | 'throttle';
export const CYCLE_WAIT_LIMIT_MS = 60_000;
export const JOIN_MARGIN_MS = 2_000;
export interface OpenMessage {
  id: string;
  hold: Hold;
  cycleId: string | null;
  sendAt: Date;
  urgent: boolean;
}
export interface NewNotification {
  level: Level;
  urgent: boolean;
  cycleId: string;
}
export type Placement =
  { join: string } | { create: { hold: Hold | null; sendAt: Date; cycleId: string | null } };

export function isUrgent(level: Level, quiet: QuietHours | null, chainUrgent: boolean): boolean {
  if (chainUrgent) return true;
  if (!quiet?.bypassLevel) return false;
  return levelRank(level) >= levelRank(quiet.bypassLevel);
}

export function quietWindowAt(
  _at: Date,
  _timezone: string,
  _quiet: QuietHours,
): { start: Date; end: Date } | null {
  return null;
}

export function defaultGroup(channel: 'email' | 'webhook'): GroupMode {
  return channel === 'email' ? { kind: 'cycle' } : { kind: 'none' };
}

export function placeNotification(input: {
  now: Date;
  prefs: DeliveryPrefs;
  notification: NewNotification;
  open: readonly OpenMessage[];
  recentSends: readonly Date[];
}): Placement {
  const { now, prefs, notification, open } = input;
  const joinable = open.filter((m) => m.sendAt.getTime() - now.getTime() >= JOIN_MARGIN_MS);
  if (prefs.group.kind === 'cycle') {
    const m = joinable.find((o) => o.hold === 'cycle' && o.cycleId === notification.cycleId);
    if (m) return { join: m.id };
    return {
      create: {
        hold: 'cycle',
        sendAt: new Date(now.getTime() + CYCLE_WAIT_LIMIT_MS),
        cycleId: notification.cycleId,
      },
    };
  }
  if (prefs.group.kind === 'window') {
    const m = joinable.find((o) => o.hold === 'window');
    if (m) return { join: m.id };
    return {
      create: {
        hold: 'window',
        sendAt: new Date(now.getTime() + prefs.group.seconds * 1000),
        cycleId: null,
      },
    };
  }
  return { create: { hold: null, sendAt: now, cycleId: null } };
}
