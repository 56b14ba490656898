import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deletePrefixKeys } from '../../src/runtime/queues.js';

/**
 * BullMQ key prefixes for the `qwn` runs of one test file (QUEUE_PREFIX), each new, all of them
 * removed from the local Redis when the file is done: test runs leave no keys behind.
 */
export function queuePrefixes(name: string): { next(): string; drop(): Promise<void> } {
  const made: string[] = [];
  return {
    next() {
      const prefix = `${name}-${randomBytes(4).toString('hex')}`;
      made.push(prefix);
      return prefix;
    },
    async drop() {
      if (made.length === 0) return;
      const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
      try {
        for (const prefix of made.splice(0)) await deletePrefixKeys(redis, prefix);
      } finally {
        redis.disconnect();
      }
    },
  };
}
