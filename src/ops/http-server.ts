import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.js';
import { httpStatusFor, type HealthReport } from './health.js';

/** `GET /healthz` and `GET /metrics` on HTTP_PORT; nothing else is served. */

export interface OpsServerOptions {
  readonly port: number;
  /** All interfaces by default: in a container the probe and the scraper come from outside. */
  readonly host?: string;
  readonly logger: Logger;
  readonly health: () => Promise<HealthReport>;
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
}

export interface OpsServer {
  readonly port: number;
  /** Stops accepting connections, then closes the open ones (at once after `timeoutMs`). */
  close(timeoutMs?: number): Promise<void>;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    'content-type': contentType,
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { logger } = options;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/healthz' && path !== '/metrics') {
      send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(res, 405, 'application/json', JSON.stringify({ error: 'method not allowed' }));
      return;
    }
    if (path === '/healthz') {
      const report = await options.health();
      send(res, httpStatusFor(report), 'application/json', JSON.stringify(report));
      return;
    }
    const { contentType, body } = await options.metrics();
    send(res, 200, contentType, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err, url: req.url }, 'ops request failed');
      if (!res.headersSent) {
        send(res, 500, 'application/json', JSON.stringify({ error: 'internal error' }));
      } else {
        res.destroy();
      }
    });
  });
  // Probes and scrapers keep connections alive; short timeouts keep shutdown quick.
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'http server error'));
  const address = server.address() as AddressInfo;
  logger.info({ port: address.port, host: address.address }, 'http server listening');

  return {
    port: address.port,
    async close(timeoutMs = 5000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
      await closed;
      clearTimeout(timer);
    },
  };
}
