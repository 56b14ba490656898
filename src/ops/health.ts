import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import { failureMessage } from '../db/problems.js';
import { scrub } from '../logger.js';
import type { PauseSnapshot } from '../channels/channel-pause.js';
import type { UpstreamSnapshot } from './upstream.js';
import { withTimeout } from './with-timeout.js';

/**
 * `GET /healthz`: a pure evaluation of facts (tested without services) and the probes that
 * gather them with bounded timeouts.
 */

export type HealthStatus = 'ok' | 'degraded' | 'unhealthy';

export type Probe = { ok: true; latencyMs: number } | { ok: false; error: string };

export interface CycleFacts {
  /** When the newest successful cycle finished; null when none ever did. */
  readonly lastSuccessAt: Date | null;
  /** The newest cycle, whatever its outcome. */
  readonly latest: { status: string; startedAt: Date; finishedAt: Date | null } | null;
}

export interface HealthInputs {
  readonly now: Date;
  /** When this process started: a fresh worker gets the same grace as a fresh cycle. */
  readonly startedAt: Date;
  readonly pollIntervalSeconds: number;
  readonly postgres: Probe;
  readonly redis: Probe;
  /** null when Postgres could not say. */
  readonly cycles: CycleFacts | null;
  readonly upstream: UpstreamSnapshot;
  /** The email channel's pause (absent: a process that sends no email). */
  readonly email?: PauseSnapshot;
}

export interface ServiceCheck {
  readonly status: HealthStatus;
  readonly latencyMs?: number;
  readonly error?: string;
}

export interface HealthReport {
  readonly status: HealthStatus;
  readonly checks: {
    readonly postgres: ServiceCheck;
    readonly redis: ServiceCheck;
    readonly lastCycle: {
      readonly status: HealthStatus;
      readonly finishedAt: string | null;
      readonly ageSeconds: number | null;
      /** Outcome of the newest cycle (running, done, failed), which may not be a success. */
      readonly latest: string | null;
      readonly reason: string | null;
    };
    readonly upstream: {
      readonly status: HealthStatus;
      readonly state: UpstreamSnapshot['state'];
      readonly reason: string | null;
      readonly since: string | null;
      readonly retryAt: string | null;
    };
    /** Degraded while paused: the SMTP server refuses the login (mail waits, nothing is lost). */
    readonly email: {
      readonly status: HealthStatus;
      readonly paused: boolean;
      readonly reason: string | null;
      readonly since: string | null;
      readonly retryAt: string | null;
    };
  };
}

/**
 * Degraded once two cycles were missed, unhealthy after three. The floors keep very short test
 * intervals from flapping: scheduling and a cycle's own checks take a few seconds whatever the
 * period.
 */
export function cycleThresholds(pollIntervalSeconds: number): {
  degradedAfterSeconds: number;
  unhealthyAfterSeconds: number;
} {
  return {
    degradedAfterSeconds: Math.max(2 * pollIntervalSeconds, 30),
    unhealthyAfterSeconds: Math.max(3 * pollIntervalSeconds, 60),
  };
}

const RANK: Record<HealthStatus, number> = { ok: 0, degraded: 1, unhealthy: 2 };

function worst(statuses: HealthStatus[]): HealthStatus {
  return statuses.reduce<HealthStatus>((a, b) => (RANK[b] > RANK[a] ? b : a), 'ok');
}

function serviceCheck(probe: Probe): ServiceCheck {
  return probe.ok
    ? { status: 'ok', latencyMs: probe.latencyMs }
    : { status: 'unhealthy', error: probe.error };
}

function lastCycleCheck(inputs: HealthInputs): HealthReport['checks']['lastCycle'] {
  const { cycles, now } = inputs;
  if (!cycles) {
    return {
      status: 'unhealthy',
      finishedAt: null,
      ageSeconds: null,
      latest: null,
      reason: `unknown: ${inputs.postgres.ok ? 'Postgres did not answer' : inputs.postgres.error}`,
    };
  }
  const ageSeconds = cycles.lastSuccessAt
    ? Math.max(0, Math.round((now.getTime() - cycles.lastSuccessAt.getTime()) / 1000))
    : null;
  // Measured from the later of the last success and this process's start.
  const reference = Math.max(cycles.lastSuccessAt?.getTime() ?? 0, inputs.startedAt.getTime());
  const waitedSeconds = (now.getTime() - reference) / 1000;
  const limits = cycleThresholds(inputs.pollIntervalSeconds);
  const status: HealthStatus =
    waitedSeconds > limits.unhealthyAfterSeconds
      ? 'unhealthy'
      : waitedSeconds > limits.degradedAfterSeconds
        ? 'degraded'
        : 'ok';
  const since = cycles.lastSuccessAt ? `${ageSeconds} s ago` : 'never';
  return {
    status,
    finishedAt: cycles.lastSuccessAt?.toISOString() ?? null,
    ageSeconds,
    latest: cycles.latest?.status ?? null,
    reason:
      status === 'ok'
        ? null
        : `last successful cycle ${since}; POLL_INTERVAL_SECONDS is ${inputs.pollIntervalSeconds}`,
  };
}

function upstreamCheck(upstream: UpstreamSnapshot): HealthReport['checks']['upstream'] {
  const status: HealthStatus =
    upstream.state === 'auth_failed' || upstream.state === 'retired'
      ? 'unhealthy'
      : upstream.state === 'failing'
        ? 'degraded'
        : 'ok';
  return {
    status,
    state: upstream.state,
    reason: upstream.reason,
    since: upstream.since?.toISOString() ?? null,
    retryAt: upstream.retryAt?.toISOString() ?? null,
  };
}

function emailCheck(email: PauseSnapshot | undefined): HealthReport['checks']['email'] {
  return {
    status: email?.paused ? 'degraded' : 'ok',
    paused: email?.paused ?? false,
    reason: email?.reason ?? null,
    since: email?.since?.toISOString() ?? null,
    retryAt: email?.retryAt?.toISOString() ?? null,
  };
}

export function evaluateHealth(inputs: HealthInputs): HealthReport {
  const checks = {
    postgres: serviceCheck(inputs.postgres),
    redis: serviceCheck(inputs.redis),
    lastCycle: lastCycleCheck(inputs),
    upstream: upstreamCheck(inputs.upstream),
    email: emailCheck(inputs.email),
  };
  return { status: worst(Object.values(checks).map((c) => c.status)), checks };
}

/** 503 only when unhealthy: a degraded worker still works and must not be restarted. */
export function httpStatusFor(report: HealthReport): number {
  return report.status === 'unhealthy' ? 503 : 200;
}

export interface HealthSources {
  readonly db: Db;
  readonly redis: { ping(): Promise<string> };
  readonly upstream: { snapshot(): UpstreamSnapshot };
  readonly emailPause?: { snapshot(): PauseSnapshot };
  readonly pollIntervalSeconds: number;
  readonly startedAt: Date;
  readonly now?: () => Date;
  readonly timeoutMs?: number;
}

/** Every probe is bounded well under a typical orchestrator's health-check timeout. */
export const PROBE_TIMEOUT_MS = 2000;

// No SQL text or parameters: /healthz may be read by anyone who can reach the port.
const describe = (err: unknown) => scrub(failureMessage(err));

export async function readCycleFacts(db: Db): Promise<CycleFacts> {
  const [row] = await queryRows<{
    last_success_at: Date | string | null;
    status: string | null;
    started_at: Date | string | null;
    finished_at: Date | string | null;
  }>(
    db,
    sql`SELECT
          (SELECT finished_at FROM poll_cycles WHERE status = 'done'
           ORDER BY started_at DESC LIMIT 1) AS last_success_at,
          l.status, l.started_at, l.finished_at
        FROM (SELECT 1) AS one
        LEFT JOIN LATERAL (SELECT status, started_at, finished_at FROM poll_cycles
                           ORDER BY started_at DESC LIMIT 1) AS l ON true`,
  );
  const date = (v: Date | string | null | undefined) => (v == null ? null : new Date(v));
  return {
    lastSuccessAt: date(row?.last_success_at),
    latest:
      row?.status && row.started_at
        ? {
            status: row.status,
            startedAt: date(row.started_at)!,
            finishedAt: date(row.finished_at),
          }
        : null,
  };
}

async function timed<T>(
  what: string,
  timeoutMs: number,
  work: () => Promise<T>,
): Promise<{ probe: Probe; value: T | null }> {
  const started = performance.now();
  try {
    const value = await withTimeout(what, timeoutMs, work());
    return { probe: { ok: true, latencyMs: Math.round(performance.now() - started) }, value };
  } catch (err) {
    return { probe: { ok: false, error: describe(err) }, value: null };
  }
}

export async function probeHealth(sources: HealthSources): Promise<HealthReport> {
  const timeoutMs = sources.timeoutMs ?? PROBE_TIMEOUT_MS;
  const [postgres, redis] = await Promise.all([
    // The cycle query doubles as the Postgres probe: it also fails when migrations are missing.
    timed('Postgres', timeoutMs, () => readCycleFacts(sources.db)),
    timed('Redis', timeoutMs, () => sources.redis.ping()),
  ]);
  return evaluateHealth({
    now: (sources.now ?? (() => new Date()))(),
    startedAt: sources.startedAt,
    pollIntervalSeconds: sources.pollIntervalSeconds,
    postgres: postgres.probe,
    redis: redis.probe,
    cycles: postgres.value,
    upstream: sources.upstream.snapshot(),
    ...(sources.emailPause ? { email: sources.emailPause.snapshot() } : {}),
  });
}
