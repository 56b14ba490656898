import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { HealthReport, HealthStatus } from '../../src/ops/health.js';
import { startOpsServer, type OpsServer } from '../../src/ops/http-server.js';

const report = (status: HealthStatus): HealthReport => ({
  status,
  checks: {
    postgres: { status: 'ok', latencyMs: 1 },
    redis: { status: 'ok', latencyMs: 1 },
    lastCycle: { status, finishedAt: null, ageSeconds: null, latest: null, reason: null },
    upstream: { status: 'ok', state: 'ok', reason: null, since: null, retryAt: null },
    email: { status: 'ok', paused: false, reason: null, since: null, retryAt: null },
  },
});

describe('ops HTTP server', () => {
  let server: OpsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const start = async (health: () => Promise<HealthReport>) => {
    server = await startOpsServer({
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('silent'),
      health,
      metrics: () => Promise.resolve({ contentType: 'text/plain; version=0.0.4', body: 'm 1\n' }),
    });
    return `http://127.0.0.1:${server.port}`;
  };

  it('maps health to 200 or 503 and serves metrics as text', async () => {
    let status: HealthStatus = 'ok';
    const url = await start(() => Promise.resolve(report(status)));
    const ok = await fetch(`${url}/healthz`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/json');
    expect(((await ok.json()) as HealthReport).status).toBe('ok');
    status = 'degraded';
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    status = 'unhealthy';
    const bad = await fetch(`${url}/healthz`);
    expect(bad.status).toBe(503);
    expect(((await bad.json()) as HealthReport).status).toBe('unhealthy');

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4');
    expect(await metrics.text()).toBe('m 1\n');
  });

  it('answers 404 and 405 for anything else, and 500 when a probe throws', async () => {
    const url = await start(() => Promise.reject(new Error('probe broke')));
    expect((await fetch(`${url}/`)).status).toBe(404);
    const post = await fetch(`${url}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${url}/healthz`)).status).toBe(500);
  });

  it('closes even with a kept-alive connection open', async () => {
    const url = await start(() => Promise.resolve(report('ok')));
    await (await fetch(`${url}/healthz`, { keepalive: true })).text();
    const started = Date.now();
    await server!.close(1000);
    server = undefined;
    expect(Date.now() - started).toBeLessThan(1500);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
