import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RobotVendor } from '../domain/robot-render.js';
import { robotKey } from './robot-identity.js';

/**
 * The robots' own rate limits (docs/messages.md), kept across every worker process: a sliding-window
 * log per robot and window in Redis, checked and recorded by one Lua script, so two workers can
 * never both take the last slot. Time is Redis's own clock (TIME), so workers whose clocks
 * disagree still count the same window. A robot that answered "rate-limited" is held for the
 * vendor's lock period (`holdOff`), and no worker asks it again before then.
 */

export interface RateWindow {
  windowMs: number;
  limit: number;
}

/** Per robot, as the vendors document them (notes/chat-robots.md). */
export const ROBOT_RATE_WINDOWS: Record<RobotVendor, readonly RateWindow[]> = {
  wecom: [{ windowMs: 60_000, limit: 20 }],
  dingtalk: [{ windowMs: 60_000, limit: 20 }],
  feishu: [
    { windowMs: 60_000, limit: 100 },
    { windowMs: 1_000, limit: 5 },
  ],
};

export type SlotAnswer = { granted: true } | { granted: false; waitMs: number };

export interface RobotRateLimiter {
  /** Takes a slot for one post to this robot now, or says how long to wait for one. */
  acquire(target: { vendor: RobotVendor; url: string }): Promise<SlotAnswer>;
  /** Locks the robot for `ms` (a vendor's rate-limit answer); never shortens a longer hold. */
  holdOff(target: { vendor: RobotVendor; url: string }, ms: number): Promise<void>;
}

export interface RobotRateLimiterOptions {
  redis: Redis;
  /** Key prefix, e.g. the BullMQ prefix plus ':'; tests use one of their own. */
  prefix: string;
  /** Milliseconds to count with instead of Redis's clock (tests only). */
  now?: () => number;
  /** Overrides the documented windows (tests only). */
  windows?: Partial<Record<RobotVendor, readonly RateWindow[]>>;
}

// KEYS[1]: the hold key; KEYS[2..]: one sorted set per window.
// ARGV[1]: now in ms, or '' for Redis's clock; ARGV[2]: a unique member;
// then per window: its length in ms and its limit.
// Returns {1, 0} when granted, {0, waitMs} when not.
const ACQUIRE = `
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local held = redis.call('PTTL', KEYS[1])
if held > 0 then return {0, held} end
local wait = 0
for i = 2, #KEYS do
  local windowMs = tonumber(ARGV[2 * i - 1])
  local limit = tonumber(ARGV[2 * i])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - windowMs)
  local count = redis.call('ZCARD', KEYS[i])
  if count >= limit then
    local oldest = redis.call('ZRANGE', KEYS[i], count - limit, count - limit, 'WITHSCORES')
    local w = tonumber(oldest[2]) + windowMs - now
    if w < 1 then w = 1 end
    if w > wait then wait = w end
  end
end
if wait > 0 then return {0, wait} end
for i = 2, #KEYS do
  redis.call('ZADD', KEYS[i], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i - 1]))
end
return {1, 0}
`;

// KEYS[1]: the hold key; ARGV[1]: ms. Extends, never shortens.
const HOLD = `
local ms = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ms then redis.call('SET', KEYS[1], '1', 'PX', ms) end
return 1
`;

export function createRobotRateLimiter(o: RobotRateLimiterOptions): RobotRateLimiter {
  const windowsFor = (vendor: RobotVendor) => o.windows?.[vendor] ?? ROBOT_RATE_WINDOWS[vendor];
  const base = (url: string) => `${o.prefix}robot-rate:${robotKey(url)}`;

  return {
    async acquire(target) {
      const windows = windowsFor(target.vendor);
      const key = base(target.url);
      const keys = [`${key}:hold`, ...windows.map((w) => `${key}:${w.windowMs}`)];
      const args = [
        o.now ? String(o.now()) : '',
        `${Date.now()}-${randomBytes(6).toString('hex')}`,
        ...windows.flatMap((w) => [String(w.windowMs), String(w.limit)]),
      ];
      const [granted, waitMs] = (await o.redis.eval(ACQUIRE, keys.length, ...keys, ...args)) as [
        number,
        number,
      ];
      return granted === 1 ? { granted: true } : { granted: false, waitMs };
    },

    async holdOff(target, ms) {
      const wait = Math.ceil(ms);
      if (!(wait > 0)) return;
      await o.redis.eval(HOLD, 1, `${base(target.url)}:hold`, String(wait));
    },
  };
}
