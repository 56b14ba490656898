import type { Logger } from '../logger.js';
import { withTimeout } from './with-timeout.js';

/**
 * BullMQ keeps jobs as ordinary keys: an evicting Redis drops them silently under memory
 * pressure (BullMQ's production guide). The sweeper would find lost deliveries again, but lost
 * schedulers and checks make whole cycles vanish, so an operator should hear about it at start.
 */

export type EvictionPolicyCheck =
  | { readonly outcome: 'ok'; readonly policy: 'noeviction' }
  | { readonly outcome: 'evicting'; readonly policy: string }
  | { readonly outcome: 'unknown'; readonly error: string };

/**
 * The policy as Redis answers `CONFIG GET maxmemory-policy`; null when the answer holds none.
 * Throws when Redis refuses the command or does not answer in time.
 */
export async function readEvictionPolicy(
  readConfig: (name: string) => Promise<unknown>,
  timeoutMs: number,
): Promise<string | null> {
  const answer = await withTimeout('Redis CONFIG GET', timeoutMs, readConfig('maxmemory-policy'));
  return Array.isArray(answer) && typeof answer[1] === 'string' ? answer[1] : null;
}

/** `readConfig` is `CONFIG GET <name>` (ioredis answers `[name, value]`). */
export async function checkEvictionPolicy(
  readConfig: (name: string) => Promise<unknown>,
  logger: Logger,
  timeoutMs = 5000,
): Promise<EvictionPolicyCheck> {
  let answer: unknown;
  try {
    answer = await withTimeout('Redis CONFIG GET', timeoutMs, readConfig('maxmemory-policy'));
  } catch (err) {
    // Managed Redis services often rename or refuse CONFIG.
    const error = err instanceof Error ? err.message : String(err);
    logger.warn(
      { error },
      'could not check Redis maxmemory-policy; make sure it is noeviction, or jobs may be lost',
    );
    return { outcome: 'unknown', error };
  }
  const policy = Array.isArray(answer) && typeof answer[1] === 'string' ? answer[1] : null;
  if (policy === null) {
    logger.warn(
      { answer },
      'could not check Redis maxmemory-policy; make sure it is noeviction, or jobs may be lost',
    );
    return { outcome: 'unknown', error: 'CONFIG GET maxmemory-policy gave no value' };
  }
  if (policy !== 'noeviction') {
    logger.warn(
      { policy, expected: 'noeviction' },
      'Redis maxmemory-policy is not noeviction: under memory pressure Redis may delete queued jobs',
    );
    return { outcome: 'evicting', policy };
  }
  logger.debug({ policy }, 'Redis maxmemory-policy checked');
  return { outcome: 'ok', policy };
}
