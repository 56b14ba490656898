import type { RobotRateLimiter } from './robot-rate-limit.js';
import { RobotError, type RobotMessage, type RobotSender, type RobotTarget } from './robot.js';

/**
 * One attempt at a robot message with the robot's limits kept (docs/messages.md): a slot is taken
 * first; without one, nothing is posted and the message waits (and may take in what comes
 * meanwhile). A vendor's rate-limit answer holds the robot for every worker for the vendor's lock
 * period and is told the same way. Every other failure is thrown as the sender classified it.
 */

export type RobotAttempt =
  | { outcome: 'sent'; messageId: string; robot: string }
  | {
      outcome: 'wait';
      /** How long until the robot can take a post. */
      waitMs: number;
      /** `limit`: our own count said no; `vendor`: the vendor answered rate-limited. */
      reason: 'limit' | 'vendor';
    };

export async function attemptRobotMessage(
  deps: { limiter: RobotRateLimiter; sender: RobotSender },
  target: RobotTarget,
  message: RobotMessage,
): Promise<RobotAttempt> {
  const slot = await deps.limiter.acquire(target);
  if (!slot.granted) return { outcome: 'wait', waitMs: slot.waitMs, reason: 'limit' };
  try {
    const sent = await deps.sender.send(target, message);
    return { outcome: 'sent', ...sent };
  } catch (err) {
    if (err instanceof RobotError && err.kind === 'rate-limited') {
      const waitMs = err.retryAfterMs ?? 60_000;
      await deps.limiter.holdOff(target, waitMs);
      return { outcome: 'wait', waitMs, reason: 'vendor' };
    }
    throw err;
  }
}
