import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { queryRows } from '../../src/db/client.js';
import { DemoDatabaseError, provideDatabase } from '../../src/demo/database.js';
import {
  RedisUnavailableError,
  provideRedis,
  redisAnswers,
  spawnRedis,
} from '../../src/demo/redis.js';
import { ADMIN_URL } from '../support/db.js';

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const result = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return result.rowCount === 1;
  } finally {
    await client.end();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the demo database', () => {
  it('with DATABASE_URL: a migrated throwaway database, dropped on close', async () => {
    const demo = await provideDatabase(ADMIN_URL);
    const name = /throwaway database (qwn_demo_[0-9a-f]+)/.exec(demo.description)?.[1];
    expect(name).toBeDefined();
    try {
      expect(await databaseExists(name!)).toBe(true);
      const [row] = await queryRows<{ n: number }>(
        demo.database.db,
        sql`SELECT count(*)::int AS n FROM subscribers`,
      );
      expect(row?.n).toBe(0);
    } finally {
      await demo.close();
    }
    expect(await databaseExists(name!)).toBe(false);
  });

  it('says plainly when it cannot create one', async () => {
    const refused = provideDatabase('postgres://postgres@127.0.0.1:1/test');
    await expect(refused).rejects.toBeInstanceOf(DemoDatabaseError);
    await expect(refused).rejects.toThrow(
      /^cannot create a throwaway database on 127\.0\.0\.1:1 \(.+\); unset DATABASE_URL to use the embedded Postgres$/,
    );
  });
});

describe('the demo Redis', () => {
  it('uses a Redis that answers as it is', async () => {
    const redis = await provideRedis('redis://127.0.0.1:6379');
    expect(redis.spawned).toBeNull();
    expect(redis.url).toBe('redis://127.0.0.1:6379');
    await redis.close();
  });

  it('starts a throwaway redis-server and stops it on close', async () => {
    const redis = await spawnRedis();
    const { pid, port } = redis.spawned!;
    expect(await redisAnswers(redis.url)).toBe(true);
    await redis.close();
    expect(alive(pid)).toBe(false);
    expect(await redisAnswers(`redis://127.0.0.1:${port}`, 300)).toBe(false);
  });

  it('explains how to get Redis when none answers and none can be started', async () => {
    const attempt = provideRedis('redis://:hunter2@127.0.0.1:1', { command: 'no-such-redis' });
    await expect(attempt).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(attempt).rejects.toThrow(
      'no Redis answers at redis://[redacted]@127.0.0.1:1 and no no-such-redis program on PATH; start one with `docker compose up -d redis`',
    );
  });
});
