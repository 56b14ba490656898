import { AuthError, DeprecatedEndpointError } from '../qweather/errors.js';
import type { UpstreamGate } from '../pipeline/context.js';

/**
 * What the worker knows about the upstream, from the results of its own calls, and the small
 * circuit that holds the warning-list call back after QWeather refused us: repeating a refused
 * key every cycle risks the account's suspension (notes/qweather-facts.md), and a retired
 * endpoint will not come back.
 */

export type UpstreamStateName = 'unknown' | 'ok' | 'failing' | 'auth_failed' | 'retired';

export interface UpstreamSnapshot {
  readonly state: UpstreamStateName;
  /** What an operator should know or do; null while all is well. */
  readonly reason: string | null;
  /** When the upstream entered this state (null before the first call). */
  readonly since: Date | null;
  readonly operation: string | null;
  /** While calls are held back: when the next one may go out. */
  readonly retryAt: Date | null;
}

/** Thrown by the gate instead of calling the upstream; not an upstream failure itself. */
export class UpstreamCircuitOpenError extends Error {
  override name = 'UpstreamCircuitOpenError';
  constructor(
    readonly operation: string,
    readonly retryAt: Date,
    reason: string,
  ) {
    super(`${operation} not called until ${retryAt.toISOString()}: ${reason}`);
  }
}

/** Long enough not to look like hammering, short enough to notice a fixed key soon. */
export const DEFAULT_CIRCUIT_BACKOFF_MS = 15 * 60_000;

export interface UpstreamMonitorOptions {
  readonly now?: () => Date;
  readonly backoffMs?: number;
}

export class UpstreamMonitor implements UpstreamGate {
  readonly #now: () => Date;
  readonly #backoffMs: number;
  #snapshot: UpstreamSnapshot = {
    state: 'unknown',
    reason: null,
    since: null,
    operation: null,
    retryAt: null,
  };

  constructor(options: UpstreamMonitorOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#backoffMs = options.backoffMs ?? DEFAULT_CIRCUIT_BACKOFF_MS;
  }

  /** The pipeline's `onUpstreamResult`: null for a successful call, else what it threw. */
  record(operation: string, error: unknown): void {
    if (error instanceof UpstreamCircuitOpenError) return;
    const now = this.#now();
    const current = this.#snapshot;
    const enter = (state: UpstreamStateName, reason: string | null, retryAt: Date | null) => {
      this.#snapshot = {
        state,
        reason,
        since: current.state === state && current.since ? current.since : now,
        operation,
        retryAt,
      };
    };

    if (error === null || error === undefined) {
      enter('ok', null, null);
    } else if (error instanceof DeprecatedEndpointError) {
      enter(
        'retired',
        `QWeather retired the endpoint of ${operation}: ${error.hint}`,
        new Date(now.getTime() + this.#backoffMs),
      );
    } else if (error instanceof AuthError) {
      const status = error.httpStatus ?? error.code ?? 'auth';
      enter(
        'auth_failed',
        `QWeather refused the credentials for ${operation} (${status}): check QWEATHER_API_KEY ` +
          'or the QWEATHER_JWT_* settings, and the project allows this host',
        new Date(now.getTime() + this.#backoffMs),
      );
    } else if (current.state === 'auth_failed' || current.state === 'retired') {
      // A timeout on some other call says nothing about whether the key works again.
      return;
    } else {
      const message =
        error instanceof Error ? `${error.name}: ${error.message}` : 'a non-error value was thrown';
      enter('failing', message.slice(0, 300), null);
    }
  }

  snapshot(): UpstreamSnapshot {
    return this.#snapshot;
  }

  /**
   * Holds calls back until the backoff after an auth failure or a retirement has passed; then
   * one call may go out, and its result decides (another refusal holds back again).
   */
  assertCallAllowed(operation: string): void {
    const { retryAt, reason } = this.#snapshot;
    if (retryAt && this.#now() < retryAt) {
      throw new UpstreamCircuitOpenError(operation, retryAt, reason ?? 'the upstream refused us');
    }
  }
}
