import { spawn, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { startWorkers } from '../../src/pipeline/workers.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { closedPort } from '../support/net.js';

/**
 * A Redis outage as the worker lives it: ioredis reconnecting every few hundred milliseconds and
 * every BullMQ worker's connection failing with it. The log says so once, and once when it is
 * back (docs/operations.md), not once per retry.
 */

let database: TestDatabase | undefined;
let runtime: Runtime | undefined;
let redis: ChildProcess | undefined;
afterAll(async () => {
  await runtime?.close();
  redis?.kill();
  await database?.drop();
});

describe('a Redis outage in the log', () => {
  it('is one line when it starts and one when it ends, with the failures counted', async () => {
    type Line = { msg: string; service?: string; failures?: number };
    const lines: Line[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Line);
        done();
      },
    });
    const port = await closedPort();
    database = await createTestDatabase();
    const config = loadConfig({
      DATABASE_URL: database.url,
      REDIS_URL: `redis://127.0.0.1:${port}`,
      QWEATHER_API_URL: 'http://127.0.0.1:9',
      QUEUE_PREFIX: 'qwn-outage',
    });
    runtime = createRuntime(config, pino({ level: 'info' }, sink), {});
    const workers = startWorkers(runtime.ctx, runtime.redis, ['deliver-webhook', 'sweep']);
    try {
      // Nothing answers: every connection retries for a while.
      await new Promise((done) => setTimeout(done, 2_000));
      const lost = lines.filter((l) => l.msg === 'connection lost');
      expect(lost).toHaveLength(1);
      expect(lost[0]!.service).toBe('redis');
      expect(lines.filter((l) => /redis|worker error/i.test(l.msg))).toEqual([]);

      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
        stdio: 'ignore',
      });
      await expect
        .poll(() => lines.filter((l) => l.msg === 'connection back'), { timeout: 15_000 })
        .toHaveLength(1);
      const back = lines.find((l) => l.msg === 'connection back')!;
      expect(back.failures).toBeGreaterThan(1);
      expect(lines.filter((l) => l.msg === 'connection lost')).toHaveLength(1);
    } finally {
      await workers.close(2_000);
    }
  });
});
