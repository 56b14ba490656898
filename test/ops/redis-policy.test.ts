import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { checkEvictionPolicy } from '../../src/ops/redis-policy.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('debug', stream) };
}

describe('checkEvictionPolicy', () => {
  it('is quiet when Redis never evicts', async () => {
    const { lines, logger } = capture();
    const result = await checkEvictionPolicy(
      () => Promise.resolve(['maxmemory-policy', 'noeviction']),
      logger,
    );
    expect(result).toEqual({ outcome: 'ok', policy: 'noeviction' });
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
  });

  it('warns when Redis may evict jobs', async () => {
    const { lines, logger } = capture();
    const result = await checkEvictionPolicy(
      () => Promise.resolve(['maxmemory-policy', 'allkeys-lru']),
      logger,
    );
    expect(result).toEqual({ outcome: 'evicting', policy: 'allkeys-lru' });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, policy: 'allkeys-lru', expected: 'noeviction' }),
    );
  });

  it('says it could not check when CONFIG is refused or hangs', async () => {
    const refused = capture();
    const result = await checkEvictionPolicy(
      () => Promise.reject(new Error("ERR unknown command 'CONFIG'")),
      refused.logger,
    );
    expect(result).toEqual({ outcome: 'unknown', error: "ERR unknown command 'CONFIG'" });
    expect(refused.lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: expect.stringContaining('could not check Redis maxmemory-policy') as unknown,
      }),
    );

    const hung = capture();
    const slow = await checkEvictionPolicy(() => new Promise(() => undefined), hung.logger, 50);
    expect(slow.outcome).toBe('unknown');
    expect(hung.lines).toHaveLength(1);
  });
});
