import { AuthError, DeprecatedEndpointError } from '../qweather/errors.js';
import type { UpstreamGate } from '../runtime/context.js';

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
  /** While calls are held back after a refusal: when the next one may go out. */
  readonly retryAt: Date | null;
}

/** Thrown by the gate instead of calling the upstream; not an upstream failure itself. */
export class UpstreamCircuitOpenError extends Error {
  override name = 'UpstreamCircuitOpenError';
  constructor(
    readonly operation: string,
    /** null: not before the process restarts (the endpoint was retired). */
    readonly retryAt: Date | null,
    reason: string,
  ) {
    super(
      `${operation} not called ${retryAt ? `until ${retryAt.toISOString()}` : 'again before a restart'}: ${reason}`,
    );
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
      // A retired endpoint does not come back: no call goes out again until the operator
      // switches the source and restarts (health keeps saying so meanwhile).
      enter('retired', `QWeather retired the endpoint of ${operation}: ${error.hint}`, null);
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
   * Holds calls back until the backoff after an auth failure has passed; then one call may go
   * out, and its result decides (another refusal holds back again). After a retirement, holds
   * every call back for the life of the process.
   */
  assertCallAllowed(operation: string): void {
    const { retryAt, reason, state } = this.#snapshot;
    if (state === 'retired') {
      throw new UpstreamCircuitOpenError(operation, null, reason ?? 'the endpoint was retired');
    }
    if (retryAt && this.#now() < retryAt) {
      throw new UpstreamCircuitOpenError(operation, retryAt, reason ?? 'the upstream refused us');
    }
  }
}
