import type { Level } from './warning.js';
import {
  isUrgent,
  placeNotification,
  type DeliveryPrefs,
  type Hold,
  type OpenMessage,
} from './schedule.js';

/**
 * The scheduler folded over time, as the pipeline would run it for one subscriber with senders
 * that are never late: each notification is placed when it is detected, and a message is sent
 * exactly at its due time. Tests and the README's examples use it to see what a subscriber
 * receives for a stream of notifications.
 */

export interface SimulatedNotification {
  id: string;
  /** When it is detected. */
  at: Date;
  level: Level;
  /** Notifications of one warning chain share this (urgency is sticky along it). */
  chainId: string;
  cycleId: string;
}

export interface SimulatedMessage {
  id: string;
  hold: Hold | null;
  cycleId: string | null;
  /** When it was created (its first notification's detection time). */
  createdAt: Date;
  sendAt: Date;
  urgent: boolean;
  /** In the order they joined. */
  notificationIds: string[];
}

export interface Simulation {
  messages: SimulatedMessage[];
  /** Per notification id: the message that carries it and whether it was urgent. */
  placements: Map<string, { messageId: string; urgent: boolean }>;
}

const HOUR_MS = 3_600_000;

export function simulate(
  notifications: readonly SimulatedNotification[],
  prefs: DeliveryPrefs,
): Simulation {
  const messages: SimulatedMessage[] = [];
  const placements = new Map<string, { messageId: string; urgent: boolean }>();
  const urgentChains = new Set<string>();
  const ordered = [...notifications].sort((a, b) => a.at.getTime() - b.at.getTime());
  for (const n of ordered) {
    const now = n.at.getTime();
    const urgent = isUrgent(n.level, prefs.quietHours, urgentChains.has(n.chainId));
    if (urgent) urgentChains.add(n.chainId);
    // A message is sent at its due time; until then it is open. One without a hold is due at
    // once (status 'pending' in the pipeline), so it never collects anything.
    const open: OpenMessage[] = messages.flatMap((m) =>
      m.hold !== null && m.sendAt.getTime() > now
        ? [{ id: m.id, hold: m.hold, cycleId: m.cycleId, sendAt: m.sendAt }]
        : [],
    );
    const recentSends = messages
      .filter((m) => m.sendAt.getTime() > now - HOUR_MS)
      .map((m) => m.sendAt);
    const placement = placeNotification({
      now: n.at,
      prefs,
      notification: { level: n.level, urgent, cycleId: n.cycleId },
      open,
      recentSends,
    });
    let message: SimulatedMessage;
    if ('join' in placement) {
      const joined = messages.find((m) => m.id === placement.join);
      if (!joined) throw new Error(`placement joined unknown message ${placement.join}`);
      message = joined;
    } else {
      message = {
        id: `m${messages.length + 1}`,
        hold: placement.create.hold,
        cycleId: placement.create.cycleId,
        createdAt: n.at,
        sendAt: placement.create.sendAt,
        urgent: false,
        notificationIds: [],
      };
      messages.push(message);
    }
    message.notificationIds.push(n.id);
    message.urgent ||= urgent;
    placements.set(n.id, { messageId: message.id, urgent });
  }
  return { messages, placements };
}
