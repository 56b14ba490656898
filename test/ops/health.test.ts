import { describe, expect, it } from 'vitest';
import {
  cycleThresholds,
  evaluateHealth,
  httpStatusFor,
  type HealthInputs,
} from '../../src/ops/health.js';
import type { UpstreamSnapshot } from '../../src/ops/upstream.js';

const NOW = new Date('2026-07-01T08:00:00Z');
const secondsAgo = (s: number) => new Date(NOW.getTime() - s * 1000);
const upstreamOk: UpstreamSnapshot = {
  state: 'ok',
  reason: null,
  since: secondsAgo(600),
  operation: 'warningNow',
  retryAt: null,
};

function inputs(overrides: Partial<HealthInputs> = {}): HealthInputs {
  return {
    now: NOW,
    startedAt: secondsAgo(3600),
    pollIntervalSeconds: 300,
    postgres: { ok: true, latencyMs: 3 },
    redis: { ok: true, latencyMs: 1 },
    cycles: {
      lastSuccessAt: secondsAgo(100),
      latest: { status: 'done', startedAt: secondsAgo(110), finishedAt: secondsAgo(100) },
    },
    upstream: upstreamOk,
    ...overrides,
  };
}

describe('evaluateHealth', () => {
  it('is ok when every check is', () => {
    const report = evaluateHealth(inputs());
    expect(report.status).toBe('ok');
    expect(httpStatusFor(report)).toBe(200);
    expect(report.checks.lastCycle).toEqual({
      status: 'ok',
      finishedAt: secondsAgo(100).toISOString(),
      ageSeconds: 100,
      latest: 'done',
      reason: null,
    });
    expect(report.checks.upstream).toMatchObject({ status: 'ok', state: 'ok', reason: null });
  });

  it('is unhealthy (503) when Postgres or Redis does not answer', () => {
    const pg = evaluateHealth(
      inputs({
        postgres: { ok: false, error: 'Postgres did not answer in 2000 ms' },
        cycles: null,
      }),
    );
    expect(pg.status).toBe('unhealthy');
    expect(httpStatusFor(pg)).toBe(503);
    expect(pg.checks.postgres).toEqual({
      status: 'unhealthy',
      error: 'Postgres did not answer in 2000 ms',
    });
    const redis = evaluateHealth(inputs({ redis: { ok: false, error: 'ECONNREFUSED' } }));
    expect(redis.status).toBe('unhealthy');
    expect(redis.checks.redis.status).toBe('unhealthy');
    expect(redis.checks.postgres.status).toBe('ok');
  });

  it('degrades after two missed cycles and is unhealthy after three', () => {
    expect(
      evaluateHealth(inputs({ cycles: { lastSuccessAt: secondsAgo(599), latest: null } })).status,
    ).toBe('ok');
    const late = evaluateHealth(
      inputs({ cycles: { lastSuccessAt: secondsAgo(601), latest: null } }),
    );
    expect(late.status).toBe('degraded');
    expect(httpStatusFor(late)).toBe(200);
    expect(late.checks.lastCycle.reason).toMatch(/601 s ago/);
    const dead = evaluateHealth(
      inputs({ cycles: { lastSuccessAt: secondsAgo(901), latest: null } }),
    );
    expect(dead.status).toBe('unhealthy');
    expect(httpStatusFor(dead)).toBe(503);
  });

  it('gives a freshly started worker the same grace as a fresh cycle', () => {
    const fresh = inputs({
      startedAt: secondsAgo(10),
      cycles: { lastSuccessAt: null, latest: null },
    });
    expect(evaluateHealth(fresh).status).toBe('ok');
    expect(evaluateHealth(fresh).checks.lastCycle).toMatchObject({
      finishedAt: null,
      ageSeconds: null,
    });
    // Restarted after a long outage: the old success does not make it unhealthy at once.
    const restarted = inputs({
      startedAt: secondsAgo(10),
      cycles: { lastSuccessAt: secondsAgo(86_400), latest: null },
    });
    expect(evaluateHealth(restarted).status).toBe('ok');
    expect(evaluateHealth(restarted).checks.lastCycle.ageSeconds).toBe(86_400);
    const neverAfterStart = inputs({
      startedAt: secondsAgo(1000),
      cycles: { lastSuccessAt: null, latest: null },
    });
    expect(evaluateHealth(neverAfterStart).status).toBe('unhealthy');
    expect(evaluateHealth(neverAfterStart).checks.lastCycle.reason).toMatch(/never/);
  });

  it('keeps short intervals from flapping with floors', () => {
    expect(cycleThresholds(1)).toEqual({ degradedAfterSeconds: 30, unhealthyAfterSeconds: 60 });
    expect(cycleThresholds(300)).toEqual({ degradedAfterSeconds: 600, unhealthyAfterSeconds: 900 });
  });

  it('is unhealthy with the reason when the upstream refused the key or retired the endpoint', () => {
    for (const state of ['auth_failed', 'retired'] as const) {
      const report = evaluateHealth(
        inputs({
          upstream: {
            state,
            reason: `reason for ${state}`,
            since: secondsAgo(30),
            operation: 'warningList',
            retryAt: new Date(NOW.getTime() + 870_000),
          },
        }),
      );
      expect(report.status).toBe('unhealthy');
      expect(report.checks.upstream).toEqual({
        status: 'unhealthy',
        state,
        reason: `reason for ${state}`,
        since: secondsAgo(30).toISOString(),
        retryAt: new Date(NOW.getTime() + 870_000).toISOString(),
      });
    }
  });

  it('degrades on transient upstream failures and reports an unknown upstream as ok', () => {
    const failing = evaluateHealth(
      inputs({ upstream: { ...upstreamOk, state: 'failing', reason: 'TimeoutError: …' } }),
    );
    expect(failing.status).toBe('degraded');
    const unknown = evaluateHealth(
      inputs({
        upstream: { state: 'unknown', reason: null, since: null, operation: null, retryAt: null },
      }),
    );
    expect(unknown.status).toBe('ok');
  });

  it('reports the worst of all checks', () => {
    const report = evaluateHealth(
      inputs({
        upstream: { ...upstreamOk, state: 'failing', reason: 'x' },
        redis: { ok: false, error: 'down' },
      }),
    );
    expect(report.status).toBe('unhealthy');
  });
});
