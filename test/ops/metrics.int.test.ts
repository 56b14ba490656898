import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { OpsMetrics } from '../../src/ops/metrics.js';
import { createQueues, type Queues } from '../../src/runtime/queues.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** Read-on-scrape series against the real Postgres and Redis. */
describe('OpsMetrics on scrape', () => {
  let database: TestDatabase;
  let redis: Redis;
  let queues: Queues;
  const prefix = `qwn-test-${randomBytes(5).toString('hex')}`;
  const logger = createLogger('silent');

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    queues = createQueues(redis, prefix);
  });
  afterAll(async () => {
    await queues?.close();
    if (redis) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await database?.drop();
  });

  const metrics = (startedAt: Date) =>
    new OpsMetrics({
      logger,
      db: database.db,
      queues,
      redis,
      prefix,
      startedAt,
      defaultMetrics: false,
    });

  it('counts each finished cycle once across processes, with its duration', async () => {
    const startedAt = new Date(Date.now() - 1000);
    const a = metrics(startedAt);
    const b = metrics(startedAt);
    const ago = (s: number) => new Date(Date.now() - s * 1000);
    // Finished before the processes started (and outside the overlap): not theirs to count.
    await database.db.execute(sql`
      INSERT INTO poll_cycles (status, started_at, finished_at) VALUES
        ('done', ${ago(600)}, ${ago(590)}),
        ('done', ${ago(20)}, ${ago(8)}),
        ('failed', ${ago(5)}, ${ago(4)}),
        ('running', ${ago(1)}, NULL)`);

    const [first, second] = await Promise.all([a.scrape(), b.scrape()]);
    const count = (body: string, status: string) =>
      Number(new RegExp(`^qwn_cycles_total\\{status="${status}"\\} (\\d+)$`, 'm').exec(body)?.[1]);
    expect(count(first.body, 'done') + count(second.body, 'done')).toBe(1);
    expect(count(first.body, 'failed') + count(second.body, 'failed')).toBe(1);
    const owner = count(first.body, 'done') === 1 ? first.body : second.body;
    expect(owner).toContain('qwn_cycle_duration_seconds_bucket{le="30",status="done"} 1');
    expect(owner).toContain('qwn_cycle_duration_seconds_bucket{le="10",status="done"} 0');

    // A later scrape does not count them again.
    const again = await a.scrape();
    expect(count(again.body, 'done')).toBe(count(first.body, 'done'));
  });

  it('reports queue depth per state and the age of the oldest waiting job', async () => {
    const m = metrics(new Date());
    await queues.deliverWebhook.add(
      'deliver',
      { deliveryId: 'x' },
      { jobId: 'oldest', timestamp: Date.now() - 42_000 },
    );
    await queues.deliverWebhook.add('deliver', { deliveryId: 'y' }, { jobId: 'newer' });
    await queues.deliverWebhook.add(
      'deliver',
      { deliveryId: 'z' },
      { jobId: 'later', delay: 60_000 },
    );
    const { body } = await m.scrape();
    expect(body).toContain('qwn_queue_jobs{queue="deliver-webhook",state="waiting"} 2');
    expect(body).toContain('qwn_queue_jobs{queue="deliver-webhook",state="delayed"} 1');
    expect(body).toContain('qwn_queue_jobs{queue="poll",state="waiting"} 0');
    const age = Number(
      /^qwn_queue_oldest_waiting_seconds\{queue="deliver-webhook"\} (\S+)$/m.exec(body)?.[1],
    );
    expect(age).toBeGreaterThanOrEqual(42);
    expect(age).toBeLessThan(60);
    expect(body).toContain('qwn_queue_oldest_waiting_seconds{queue="check"} 0');
  });

  it('counts subscribers whose delivery stopped on its own, per channel', async () => {
    await database.db.execute(sql`
      INSERT INTO subscribers (email, webhook_url, webhook_secret, disabled_reason, active) VALUES
        ('a@example.com', NULL, NULL, NULL, true),
        (NULL, 'https://hooks.example.com/a', ${SECRET}, 'webhook endpoint answered 410 Gone', false),
        (NULL, 'https://hooks.example.com/b', ${SECRET}, 'webhook endpoint answered 410 Gone', false)`);
    const { body } = await metrics(new Date()).scrape();
    expect(body).toContain('qwn_subscribers_disabled{channel="webhook"} 2');
    expect(body).toContain('qwn_subscribers_disabled{channel="email"} 0');
  });

  it('reports how long the oldest due message has waited, and how many are held, from the ledger', async () => {
    const m = metrics(new Date());
    const age = async () =>
      Number(/^qwn_deliveries_oldest_due_seconds (\S+)$/m.exec((await m.scrape()).body)?.[1]);
    expect(await age()).toBe(0);
    const [subscriber] = await queryRows<{ id: string }>(
      database.db,
      sql`INSERT INTO subscribers (email) VALUES ('due@example.com') RETURNING id`,
    );
    // Sent long ago, retrying later, held until later, and one due for seven minutes: only the
    // last counts; the held one is counted as held.
    await database.db.execute(sql`
      INSERT INTO messages (subscriber_id, channel, status, hold, next_attempt_at) VALUES
        (${subscriber!.id}, 'email', 'sent', NULL, now() - interval '3 days'),
        (${subscriber!.id}, 'email', 'retrying', NULL, now() + interval '10 minutes'),
        (${subscriber!.id}, 'email', 'open', 'quiet', now() + interval '8 hours'),
        (${subscriber!.id}, 'email', 'pending', NULL, now() - interval '7 minutes')`);
    const waited = await age();
    expect(waited).toBeGreaterThanOrEqual(420);
    expect(waited).toBeLessThan(480);
    expect((await m.scrape()).body).toMatch(/^qwn_messages_held 1$/m);

    // A message owned by its first-attempt job and not yet sent is due like any other: twelve
    // minutes here.
    const [owned] = await queryRows<{ id: string }>(
      database.db,
      sql`INSERT INTO messages (subscriber_id, channel, status, next_attempt_at, first_job_id)
          VALUES (${subscriber!.id}, 'email', 'pending', now() - interval '12 minutes', 'job-1')
          RETURNING id`,
    );
    expect(await age()).toBeGreaterThanOrEqual(720);
    // Once sent, it waits no more.
    await database.db.execute(sql`
      UPDATE messages SET status = 'sent', sent_at = now() WHERE id = ${owned!.id}`);
    expect(await age()).toBeLessThan(480);

    // A cycle message has no row while its cycle collects (src/ledger/release.ts):
    // held, however many notifications it carries, until the cycle is released.
    const [cycle] = await queryRows<{ id: string }>(
      database.db,
      sql`INSERT INTO poll_cycles (status) VALUES ('running') RETURNING id`,
    );
    const [cycleEvent] = await queryRows<{ id: number }>(
      database.db,
      sql`INSERT INTO events (cycle_id, place_id, warning_id, type, record)
          VALUES (${cycle!.id}, '101010100', 'w-collecting', 'new', '{}') RETURNING id`,
    );
    await database.db.execute(sql`
      INSERT INTO deliveries (message_id, subscriber_id, event_id, cycle_id, place_id,
        warning_id, event_type, channel)
      SELECT m.id, ${subscriber!.id}, ${cycleEvent!.id}, ${cycle!.id}, '101010100',
        'w-collecting', t, 'email'
      FROM (SELECT gen_random_uuid() AS id) m, unnest(ARRAY['new', 'update']) AS t`);
    expect((await m.scrape()).body).toMatch(/^qwn_messages_held 2$/m);
    await database.db.execute(
      sql`UPDATE poll_cycles SET released_at = now() WHERE id = ${cycle!.id}`,
    );
    expect((await m.scrape()).body).toMatch(/^qwn_messages_held 1$/m);
  });

  it("reports Redis's eviction policy, and nothing when CONFIG is refused", async () => {
    let answer: () => Promise<unknown> = () => Promise.resolve(['maxmemory-policy', 'noeviction']);
    const m = new OpsMetrics({
      logger,
      readRedisConfig: () => answer(),
      defaultMetrics: false,
    });
    expect((await m.scrape()).body).toContain('qwn_redis_maxmemory_policy{policy="noeviction"} 1');
    answer = () => Promise.resolve(['maxmemory-policy', 'allkeys-lru']);
    const evicting = (await m.scrape()).body;
    expect(evicting).toContain('qwn_redis_maxmemory_policy{policy="allkeys-lru"} 1');
    expect(evicting).not.toContain('policy="noeviction"');
    answer = () => Promise.reject(new Error("ERR unknown command 'CONFIG'"));
    expect((await m.scrape()).body).not.toMatch(/^qwn_redis_maxmemory_policy\{/m);
    // The real Redis of the tests.
    const real = new OpsMetrics({
      logger,
      readRedisConfig: (name) => redis.config('GET', name),
      defaultMetrics: false,
    });
    expect((await real.scrape()).body).toMatch(
      /^qwn_redis_maxmemory_policy\{policy="[a-z-]+"\} 1$/m,
    );
  });
});
