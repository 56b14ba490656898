import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ROBOT_RATE_WINDOWS,
  createRobotRateLimiter,
  type SlotAnswer,
} from '../../src/channels/robot-rate-limit.js';

/** Two connections: what two worker processes would hold. */
let first: Redis;
let second: Redis;
const prefixes: string[] = [];

function uniquePrefix(): string {
  const prefix = `qwn-test-robot-rate-${randomBytes(6).toString('hex')}:`;
  prefixes.push(prefix);
  return prefix;
}

const robot = (vendor: 'wecom' | 'dingtalk' | 'feishu', n = 1) => ({
  vendor,
  url: `https://example.com/robot/${vendor}/${n}?key=k${n}`,
});

const granted = (answers: SlotAnswer[]) => answers.filter((a) => a.granted).length;
const waits = (answers: SlotAnswer[]) => answers.flatMap((a) => (a.granted ? [] : [a.waitMs]));

beforeAll(() => {
  first = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, lazyConnect: false });
  second = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, lazyConnect: false });
});

afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await first.keys(`${prefix}*`);
    if (keys.length > 0) await first.del(...keys);
  }
  await first.quit();
  await second.quit();
});

describe('robot rate limiter (real Redis, two connections)', () => {
  it('documents the vendor limits', () => {
    expect(ROBOT_RATE_WINDOWS).toEqual({
      wecom: [{ windowMs: 60_000, limit: 20 }],
      dingtalk: [{ windowMs: 60_000, limit: 20 }],
      feishu: [
        { windowMs: 60_000, limit: 100 },
        { windowMs: 1_000, limit: 5 },
      ],
    });
  });

  it('grants exactly 20 of 30 simultaneous asks from two workers for one DingTalk robot', async () => {
    const prefix = uniquePrefix();
    const a = createRobotRateLimiter({ redis: first, prefix });
    const b = createRobotRateLimiter({ redis: second, prefix });
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? a : b).acquire(robot('dingtalk'))),
    );
    expect(granted(answers)).toBe(20);
    for (const wait of waits(answers)) {
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(60_000);
    }
    // Another robot has its own count.
    expect(await b.acquire(robot('dingtalk', 2))).toEqual({ granted: true });
    // WeCom counts the same way.
    const wecom = await Promise.all(
      Array.from({ length: 21 }, (_, i) => (i % 2 === 0 ? a : b).acquire(robot('wecom'))),
    );
    expect(granted(wecom)).toBe(20);
  });

  it('Feishu: 5 a second and 100 a minute, and a slot comes back when the wait is over', async () => {
    const prefix = uniquePrefix();
    const a = createRobotRateLimiter({ redis: first, prefix });
    const b = createRobotRateLimiter({ redis: second, prefix });
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).acquire(robot('feishu'))),
    );
    expect(granted(burst)).toBe(5);
    const longest = Math.max(...waits(burst));
    expect(longest).toBeGreaterThan(0);
    expect(longest).toBeLessThanOrEqual(1_000);
    await new Promise((resolve) => setTimeout(resolve, longest + 20));
    expect(await b.acquire(robot('feishu'))).toEqual({ granted: true });
  });

  it('slides: with a fixed clock the 21st slot opens exactly when the first one leaves', async () => {
    const prefix = uniquePrefix();
    let now = 1_000_000;
    const a = createRobotRateLimiter({ redis: first, prefix, now: () => now });
    const b = createRobotRateLimiter({ redis: second, prefix, now: () => now });
    for (let i = 0; i < 20; i += 1) {
      now = 1_000_000 + i * 1_000;
      expect(await (i % 2 ? a : b).acquire(robot('wecom'))).toEqual({ granted: true });
    }
    now = 1_059_999;
    expect(await a.acquire(robot('wecom'))).toEqual({ granted: false, waitMs: 1 });
    now = 1_060_000;
    expect(await b.acquire(robot('wecom'))).toEqual({ granted: true });
    expect(await a.acquire(robot('wecom'))).toEqual({ granted: false, waitMs: 1_000 });
    // Feishu's minute window binds too, not only its second.
    now = 2_000_000;
    for (let i = 0; i < 100; i += 1) {
      now = 2_000_000 + i * 300;
      expect((await (i % 2 ? a : b).acquire(robot('feishu'))).granted).toBe(true);
    }
    now += 300;
    expect(await a.acquire(robot('feishu'))).toEqual({ granted: false, waitMs: 60_000 - 30_000 });
  });

  it('holds a robot for the vendor lock on every worker, and never shortens a hold', async () => {
    const prefix = uniquePrefix();
    const a = createRobotRateLimiter({ redis: first, prefix });
    const b = createRobotRateLimiter({ redis: second, prefix });
    await a.holdOff(robot('dingtalk'), 600_000);
    await a.holdOff(robot('dingtalk'), 5_000);
    const answer = await b.acquire(robot('dingtalk'));
    expect(answer.granted).toBe(false);
    expect(answer.granted ? 0 : answer.waitMs).toBeGreaterThan(590_000);
    expect(answer.granted ? 0 : answer.waitMs).toBeLessThanOrEqual(600_000);
    // A hold takes no slot: the robot's count is untouched once the hold is over.
    const keys = await first.keys(`${prefix}*`);
    expect(keys.filter((k) => !k.endsWith(':hold'))).toEqual([]);
  });

  it('keys carry the robot fingerprint, never the URL or its key', async () => {
    const prefix = uniquePrefix();
    await createRobotRateLimiter({ redis: first, prefix }).acquire(robot('wecom', 7));
    const keys = await first.keys(`${prefix}*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${prefix}robot-rate:[0-9a-f]{64}:60000$`));
    expect(keys[0]).not.toContain('k7');
  });
});
