import { describe, expect, it } from 'vitest';
import { UpstreamCircuitOpenError, UpstreamMonitor } from '../../src/ops/upstream.js';
import {
  AuthError,
  DeprecatedEndpointError,
  TimeoutError,
  UpstreamServerError,
} from '../../src/qweather/errors.js';

const auth = () =>
  new AuthError('warningList: refused (HTTP 401)', {
    operation: 'warningList',
    httpStatus: 401,
    code: '401',
  });
const retired = () =>
  new DeprecatedEndpointError('retired', { operation: 'warningList', httpStatus: 403 });

function clock(start = Date.parse('2026-07-01T08:00:00Z')) {
  let t = start;
  return {
    now: () => new Date(t),
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('UpstreamMonitor (health state and circuit)', () => {
  it('starts unknown and lets calls through', () => {
    const m = new UpstreamMonitor();
    expect(m.snapshot()).toMatchObject({ state: 'unknown', reason: null, since: null });
    expect(() => m.assertCallAllowed('warningList')).not.toThrow();
  });

  it('holds calls back for the backoff after an auth failure, then lets one through', () => {
    const c = clock();
    const m = new UpstreamMonitor({ now: c.now, backoffMs: 15 * 60_000 });
    m.record('warningList', null);
    m.record('warningList', auth());
    expect(m.snapshot()).toMatchObject({
      state: 'auth_failed',
      operation: 'warningList',
      since: c.now(),
      retryAt: new Date(c.now().getTime() + 15 * 60_000),
    });
    expect(m.snapshot().reason).toMatch(/refused the credentials.*401.*QWEATHER_API_KEY/);

    c.advance(14 * 60_000);
    let thrown: unknown;
    try {
      m.assertCallAllowed('warningList');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UpstreamCircuitOpenError);
    expect((thrown as UpstreamCircuitOpenError).retryAt).toEqual(m.snapshot().retryAt);

    // Being held back is not news about the upstream.
    m.record('warningList', thrown);
    expect(m.snapshot().state).toBe('auth_failed');

    c.advance(60_001);
    expect(() => m.assertCallAllowed('warningList')).not.toThrow();
    // Refused again: held back again, from now; the state keeps its original start.
    const firstSince = m.snapshot().since;
    m.record('warningList', auth());
    expect(m.snapshot().since).toEqual(firstSince);
    expect(() => m.assertCallAllowed('warningList')).toThrow(UpstreamCircuitOpenError);
  });

  it('closes on the next success', () => {
    const c = clock();
    const m = new UpstreamMonitor({ now: c.now, backoffMs: 1000 });
    m.record('warningList', auth());
    c.advance(1001);
    m.record('warningList', null);
    expect(m.snapshot()).toMatchObject({ state: 'ok', reason: null, retryAt: null });
    expect(() => m.assertCallAllowed('warningList')).not.toThrow();
  });

  it('tells the operator to switch to v1 when the endpoint is retired', () => {
    const m = new UpstreamMonitor();
    m.record('warningNow', retired());
    expect(m.snapshot().state).toBe('retired');
    expect(m.snapshot().reason).toContain('QWEATHER_ALERT_SOURCE=v1');
    expect(() => m.assertCallAllowed('warningList')).toThrow(UpstreamCircuitOpenError);
  });

  it('never calls a retired endpoint again, however long it waits', () => {
    const c = clock();
    const m = new UpstreamMonitor({ now: c.now });
    m.record('warningList', retired());
    c.advance(7 * 24 * 3600_000);
    let thrown: unknown;
    try {
      m.assertCallAllowed('warningList');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UpstreamCircuitOpenError);
    expect((thrown as UpstreamCircuitOpenError).retryAt).toBeNull();
    expect(m.snapshot()).toMatchObject({ state: 'retired', retryAt: null });
  });

  it('keeps an auth failure when another call only times out', () => {
    const m = new UpstreamMonitor();
    m.record('warningList', auth());
    m.record('warningNow', new TimeoutError('slow', { operation: 'warningNow' }, 'headers'));
    expect(m.snapshot().state).toBe('auth_failed');
  });

  it('reports transient failures as failing without holding calls back', () => {
    const c = clock();
    const m = new UpstreamMonitor({ now: c.now });
    m.record(
      'warningNow',
      new UpstreamServerError('upstream server error (HTTP 502)', { operation: 'warningNow' }),
    );
    const since = m.snapshot().since;
    c.advance(5000);
    m.record('warningNow', new UpstreamServerError('again', { operation: 'warningNow' }));
    expect(m.snapshot()).toMatchObject({ state: 'failing', since, retryAt: null });
    expect(m.snapshot().reason).toMatch(/^UpstreamServerError: again/);
    expect(() => m.assertCallAllowed('warningList')).not.toThrow();
  });
});
