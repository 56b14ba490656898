import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openEmbedded, queryRows, type Database } from '../../src/db/client.js';
import { startSmtpSink, type SmtpSink } from '../../src/demo/smtp-sink.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/demo/webhook-receiver.js';
import { createLogger } from '../../src/logger.js';
import { runCycleOnce } from '../../src/pipeline/run-once.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { runSweep } from '../../src/pipeline/sweep.js';
import { startSimulator, v7Warning, type Simulator } from '../../src/simulator/index.js';

/**
 * The demo runs the production SQL on PGlite. The story covers poll, check and deliver; this
 * covers the rest of what the pipeline sends to Postgres: the archive option (unnest of a text
 * array), a failed send rescheduled (make_interval with fractional seconds), and the sweeper
 * (DELETE/UPDATE … RETURNING inside CTEs, make_interval in hours).
 */

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const HANGZHOU = '101210101';
const BEIJING = '101010100';

describe('the pipeline on PGlite', () => {
  let database: Database;
  let sim: Simulator;
  let smtp: SmtpSink;
  let hooks: WebhookReceiver;
  let runtime: Runtime;
  const prefix = `qwn-test-${randomBytes(5).toString('hex')}`;

  beforeAll(async () => {
    database = await openEmbedded();
    await database.migrate();
    sim = await startSimulator();
    smtp = await startSmtpSink();
    hooks = await startWebhookReceiver({ secret: SECRET });
    const config = loadConfig({
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: prefix,
      QWEATHER_API_URL: sim.url,
      SMTP_URL: smtp.url,
      MAIL_FROM: 'qwn <alerts@qwn.test>',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      CHECK_ALL_LISTED: 'true',
    });
    runtime = createRuntime(config, createLogger('silent'), { database });
    const db = database.db;
    await db.execute(sql`INSERT INTO places (id, name) VALUES (${HANGZHOU}, '杭州')`);
    const [mail] = await queryRows<{ id: string }>(
      db,
      sql`INSERT INTO subscribers (name, email) VALUES ('duty', 'duty@example.com') RETURNING id`,
    );
    const [hook] = await queryRows<{ id: string }>(
      db,
      sql`INSERT INTO subscribers (name, webhook_url, webhook_secret)
          VALUES ('dispatch', ${hooks.url('/dispatch')}, ${SECRET}) RETURNING id`,
    );
    for (const id of [mail!.id, hook!.id]) {
      await db.execute(
        sql`INSERT INTO subscriptions (subscriber_id, place_id) VALUES (${id}, ${HANGZHOU})`,
      );
    }
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await Promise.allSettled([sim?.close(), smtp?.close(), hooks?.close()]);
    await database?.close();
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  });

  it('archives every listed place and reschedules a failed send', async () => {
    sim.setWarnings(HANGZHOU, [
      v7Warning({ locationId: HANGZHOU, typeCode: '1003', level: '橙色' }),
    ]);
    sim.setWarnings(BEIJING, [v7Warning({ locationId: BEIJING, typeCode: '1006', level: '蓝色' })]);
    hooks.script('/dispatch', [{ status: 500 }]);

    const summary = await runCycleOnce(runtime.ctx, runtime.redis, { timeoutMs: 30_000 });
    expect(summary).toMatchObject({
      ok: true,
      listed: 2,
      checked: 2,
      events: { new: 2, update: 0, cancel: 0, expired: 0, resumed: 0 },
      deliveries: { sent: 1, failed: 1, pending: 0, held: 0 },
      messages: { sent: 1, failed: 1, pending: 0, held: 0, released: 0 },
    });
    const places = await queryRows<{ id: string }>(
      database.db,
      sql`SELECT id FROM places ORDER BY id`,
    );
    expect(places.map((p) => p.id)).toEqual([BEIJING, HANGZHOU]);
    const [retrying] = await queryRows<{ status: string; later: boolean }>(
      database.db,
      sql`SELECT status, next_attempt_at > now() AS later FROM messages WHERE channel = 'webhook'`,
    );
    expect(retrying).toEqual({ status: 'retrying', later: true });
  }, 60_000);

  it('sweeps: requeues nothing early, prunes old warnings, closes stuck cycles', async () => {
    await database.db.execute(sql`
      UPDATE warnings SET first_seen = now() - interval '74 hours',
        last_seen = now() - interval '73 hours'
      WHERE place_id = ${BEIJING}`);
    // First seen as long ago but seen again just now: still tracked, not pruned.
    await database.db.execute(sql`
      UPDATE warnings SET first_seen = now() - interval '80 hours' WHERE place_id = ${HANGZHOU}`);
    await database.db.execute(sql`
      INSERT INTO poll_cycles (status, started_at) VALUES ('running', now() - interval '2 hours')`);
    const outcome = await runSweep(runtime.ctx, { graceSeconds: 0 });
    expect(outcome).toEqual({
      requeued: 0,
      messagesReleased: 0,
      pruned: 1,
      cyclesClosed: 1,
      expired: {},
    });
  }, 60_000);
});
