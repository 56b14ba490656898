import { randomUUID } from 'node:crypto';

/**
 * The ids of notifications and messages: UUIDv7 (RFC 9562), the writer's clock in the first 48
 * bits, 74 random bits after. A storm inserts each id into its table's primary key: random
 * (v4) ids land on any leaf of an index that a kept ledger makes far larger than the buffer
 * pool, time-ordered ones on its newest leaves. An id is also the webhook-id and the email's
 * Message-ID, so it tells when its message was written, as the payload's timestamp does.
 */
export function ledgerIds(now: Date, count: number): string[] {
  const prefix = timePrefix(now);
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) ids[i] = withPrefix(prefix, randomUUID());
  return ids;
}

/** One id, as `ledgerIds`. */
export function ledgerId(now: Date): string {
  return withPrefix(timePrefix(now), randomUUID());
}

/** "xxxxxxxx-xxxx-7": the milliseconds since 1970 in 12 hex digits, and the version. */
function timePrefix(now: Date): string {
  const ms = now.getTime();
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`no ledger id at ${String(now)}`);
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7`;
}

/** A v4 id's random digits after its version digit; its variant bits are v7's too. */
function withPrefix(prefix: string, random: string): string {
  return prefix + random.slice(15);
}
