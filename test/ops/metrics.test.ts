import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { OpsMetrics, upstreamOutcome } from '../../src/ops/metrics.js';
import { UpstreamCircuitOpenError } from '../../src/ops/upstream.js';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  MalformedResponseError,
  NetworkError,
  RateLimitError,
  TimeoutError,
  UpstreamServerError,
} from '../../src/qweather/errors.js';

const op = { operation: 'warningNow' as const };

describe('upstreamOutcome', () => {
  it('labels each error class, never by message', () => {
    expect(upstreamOutcome(null)).toBe('ok');
    expect(upstreamOutcome(new AuthError('x', op))).toBe('auth_error');
    expect(upstreamOutcome(new DeprecatedEndpointError('x', op))).toBe('retired');
    expect(upstreamOutcome(new RateLimitError('x', op, 1000))).toBe('rate_limited');
    expect(upstreamOutcome(new TimeoutError('x', op, 'body'))).toBe('timeout');
    expect(upstreamOutcome(new NetworkError('x', op))).toBe('network_error');
    expect(upstreamOutcome(new UpstreamServerError('x', op))).toBe('server_error');
    expect(upstreamOutcome(new MalformedResponseError('x', op, '{'))).toBe('malformed');
    expect(upstreamOutcome(new BadRequestError('x', op))).toBe('bad_request');
    expect(upstreamOutcome(new UpstreamCircuitOpenError('warningList', new Date(), 'r'))).toBe(
      'held_back',
    );
    expect(upstreamOutcome(new Error('auth failed'))).toBe('error');
  });
});

describe('OpsMetrics without services', () => {
  const make = () => new OpsMetrics({ logger: createLogger('silent'), defaultMetrics: false });

  it('exposes every family with zero series before anything happened', async () => {
    const { body, contentType } = await make().scrape();
    expect(contentType).toMatch(/^text\/plain/);
    for (const family of [
      'qwn_cycles_total',
      'qwn_cycle_duration_seconds',
      'qwn_upstream_calls_total',
      'qwn_events_total',
      'qwn_deliveries_total',
      'qwn_queue_jobs',
      'qwn_queue_oldest_waiting_seconds',
    ]) {
      expect(body).toContain(`# TYPE ${family} `);
    }
    expect(body).toContain('qwn_events_total{type="expired"} 0');
    expect(body).toContain('qwn_deliveries_total{channel="webhook",outcome="dead"} 0');
    expect(body).toContain('qwn_cycles_total{status="failed"} 0');
  });

  it('counts upstream calls, the events of applied checks and delivery outcomes', async () => {
    const m = make();
    m.upstreamCall('warningList', null);
    m.upstreamCall('warningNow', null);
    m.upstreamCall('warningNow', new TimeoutError('x', op, 'headers'));
    m.upstreamCall('warningNow', new MalformedResponseError('{}', op, '{}'));
    m.jobCompleted(
      'check',
      {},
      {
        applied: true,
        fetchOk: true,
        events: { new: 2, update: 1, cancel: 0, expired: 0, resumed: 0 },
        deliveries: 0,
        skippedRecords: 2,
      },
    );
    // A re-run check that was already applied detected nothing new.
    m.jobCompleted(
      'check',
      {},
      {
        applied: false,
        fetchOk: true,
        events: { new: 5, update: 0, cancel: 0, expired: 0, resumed: 0 },
        deliveries: 0,
        skippedRecords: 3,
      },
    );
    m.jobCompleted('check', {}, 'not an outcome');
    m.jobCompleted(
      'deliver-webhook',
      {},
      {
        sent: { email: 2, webhook: 5, robot: 4 },
        retrying: { email: 0, webhook: 1, robot: 0 },
        dead: { email: 1, webhook: 0, robot: 1 },
        released: 0,
        waiting: 2,
        skipped: 3,
      },
    );
    m.jobCompleted('deliver-email', {}, 'sent');
    m.jobCompleted('poll', {}, { ok: true });
    const { body } = await m.scrape();
    expect(body).toContain('qwn_upstream_calls_total{operation="warningList",outcome="ok"} 1');
    expect(body).toContain('qwn_upstream_calls_total{operation="warningNow",outcome="ok"} 1');
    expect(body).toContain('qwn_upstream_calls_total{operation="warningNow",outcome="timeout"} 1');
    expect(body).toContain('qwn_upstream_errors_total{kind="timeout"} 1');
    expect(body).toContain('qwn_upstream_errors_total{kind="malformed"} 1');
    // Only the applied check's skipped records: a re-run saw the same answer's.
    expect(body).toContain('qwn_upstream_records_skipped_total 2');
    expect(body).toContain('qwn_events_total{type="new"} 2');
    expect(body).toContain('qwn_events_total{type="update"} 1');
    expect(body).toContain('qwn_deliveries_total{channel="email",outcome="sent"} 2');
    expect(body).toContain('qwn_deliveries_total{channel="webhook",outcome="sent"} 5');
    expect(body).toContain('qwn_deliveries_total{channel="webhook",outcome="retrying"} 1');
    expect(body).toContain('qwn_deliveries_total{channel="email",outcome="dead"} 1');
    expect(body).toContain('qwn_deliveries_total{channel="webhook",outcome="dead"} 0');
    expect(body).toContain('qwn_deliveries_total{channel="robot",outcome="sent"} 4');
    expect(body).toContain('qwn_deliveries_total{channel="robot",outcome="dead"} 1');
  });

  it('keeps a registry per instance, so several can live in one process', async () => {
    const a = make();
    const b = make();
    a.upstreamCall('warningList', null);
    expect((await b.scrape()).body).not.toContain('outcome="ok"');
  });
});
