import type { Logger } from '../logger.js';

/**
 * One log line per change of a connection's state, not one per retry (docs/operations.md): during a
 * Redis outage ioredis reconnects every few hundred milliseconds and every BullMQ worker's
 * connection reports each failure, hundreds of lines that bury the one that matters. The first
 * failure is logged with its error; the rest are counted and said in the line that reports the
 * connection back, with how long it was away.
 */
export class OutageLog {
  private downSince: number | null = null;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly service: string,
    private readonly now: () => number = Date.now,
  ) {}

  failed(err: unknown, fields: Record<string, unknown> = {}): void {
    this.failures += 1;
    if (this.downSince !== null) return;
    this.downSince = this.now();
    this.logger.error({ err, service: this.service, ...fields }, 'connection lost');
  }

  recovered(): void {
    if (this.downSince === null) return;
    this.logger.warn(
      {
        service: this.service,
        downMs: this.now() - this.downSince,
        failures: this.failures,
      },
      'connection back',
    );
    this.downSince = null;
    this.failures = 0;
  }

  get down(): boolean {
    return this.downSince !== null;
  }
}

/** Errors that say the connection failed, not the command: the outage log takes them. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof e?.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  // ioredis: "Connection is closed." / "Reached the max retries per request limit"; a Node
  // AggregateError of every address tried.
  if (
    typeof e?.message === 'string' &&
    /connection is closed|max retries per request/i.test(e.message)
  ) {
    return true;
  }
  return Array.isArray(e?.errors) && e.errors.some(isConnectionError);
}
