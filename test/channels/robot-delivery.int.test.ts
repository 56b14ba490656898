import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RobotError, createRobotSender, type RobotSender } from '../../src/channels/robot.js';
import { attemptRobotMessage } from '../../src/channels/robot-delivery.js';
import { createRobotRateLimiter } from '../../src/channels/robot-rate-limit.js';
import { createLogger } from '../../src/logger.js';
import { startRobotServer, type RobotServer } from '../support/robot-server.js';
import { sampleNotification } from './fixtures.js';

const SECRET = 'SEC3c2b1a0f9e8d7c6b5a4938271605f4e3d2c1b0a9f8e7d6c5b4a39281706f5e4';
let first: Redis;
let second: Redis;
let server: RobotServer;
let sender: RobotSender;
const prefix = `qwn-test-robot-delivery-${randomBytes(6).toString('hex')}:`;

beforeAll(async () => {
  first = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  second = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  server = await startRobotServer({
    vendor: 'dingtalk',
    token: 'tok-delivery-0123456789',
    secret: SECRET,
  });
  sender = createRobotSender({
    allowPrivate: true,
    timeoutMs: 5_000,
    logger: createLogger('silent'),
  });
});

afterAll(async () => {
  const keys = await first.keys(`${prefix}*`);
  if (keys.length > 0) await first.del(...keys);
  await sender.close();
  await server.close();
  await first.quit();
  await second.quit();
});

const message = (id: string) => ({ id, notifications: [sampleNotification()] });

describe('attemptRobotMessage (real Redis, loopback DingTalk)', () => {
  it('posts while the robot has slots, then waits without posting', async () => {
    const target = { vendor: 'dingtalk' as const, url: server.url(), secret: SECRET };
    const workers = [
      { limiter: createRobotRateLimiter({ redis: first, prefix }), sender },
      { limiter: createRobotRateLimiter({ redis: second, prefix }), sender },
    ];
    const attempts = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        attemptRobotMessage(workers[i % 2]!, target, message(`m${i}`)),
      ),
    );
    expect(attempts.filter((a) => a.outcome === 'sent')).toHaveLength(20);
    const waits = attempts.flatMap((a) => (a.outcome === 'wait' ? [a] : []));
    expect(waits).toHaveLength(4);
    for (const w of waits) expect(w.reason).toBe('limit');
    expect(server.posts).toHaveLength(20);
    expect(server.posts.every((p) => p.signatureValid)).toBe(true);
  });

  it("a vendor's rate-limit answer holds the robot for its lock period on every worker", async () => {
    // Another robot as far as the limiter is concerned: the URL is the identity.
    const target = { vendor: 'dingtalk' as const, url: `${server.url()}&robot=2`, secret: SECRET };
    const a = { limiter: createRobotRateLimiter({ redis: first, prefix }), sender };
    const b = { limiter: createRobotRateLimiter({ redis: second, prefix }), sender };
    const before = server.posts.length;
    server.queue({ status: 200, body: { errcode: 410100, errmsg: 'send too fast' } });
    expect(await attemptRobotMessage(a, target, message('v1'))).toEqual({
      outcome: 'wait',
      waitMs: 600_000,
      reason: 'vendor',
    });
    const next = await attemptRobotMessage(b, target, message('v2'));
    expect(next.outcome).toBe('wait');
    if (next.outcome === 'wait') {
      expect(next.reason).toBe('limit');
      expect(next.waitMs).toBeGreaterThan(590_000);
    }
    expect(server.posts.length - before).toBe(1);
  });

  it('other failures are thrown as classified', async () => {
    const target = { vendor: 'dingtalk' as const, url: `${server.url()}&robot=3`, secret: SECRET };
    server.queue({ status: 200, body: { errcode: 400102, errmsg: 'robot disabled' } });
    const limiter = createRobotRateLimiter({ redis: first, prefix });
    await expect(attemptRobotMessage({ limiter, sender }, target, message('g1'))).rejects.toSatisfy(
      (err) => err instanceof RobotError && err.gone,
    );
  });
});
