import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  PAGE_HEADERS,
  UNSUBSCRIBE_BODY_LIMIT,
  type UnsubscribeEndpoint,
} from '../admin/unsubscribe.js';
import type { Logger } from '../logger.js';
import { httpStatusFor, type HealthReport } from './health.js';

/**
 * `GET /healthz` and `GET /metrics` on HTTP_PORT, and `/unsubscribe/TOKEN` when an unsubscribe
 * endpoint is given (docs/subscribers.md); nothing else is served.
 */

export interface OpsServerOptions {
  readonly port: number;
  /** HTTP_HOST: loopback unless the operator opens it (a container sets 0.0.0.0). */
  readonly host: string;
  readonly logger: Logger;
  readonly health: () => Promise<HealthReport>;
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
  /** Absent without UNSUBSCRIBE_SECRET: every `/unsubscribe/` path is then a 404. */
  readonly unsubscribe?: UnsubscribeEndpoint;
}

const UNSUBSCRIBE_PATH = /^\/unsubscribe\/([^/]+)$/;

/** The request's path for a log line: an unsubscribe token is a credential and stays out. */
function loggedPath(url: string | undefined): string {
  const path = new URL(url ?? '/', 'http://localhost').pathname;
  return path.startsWith('/unsubscribe/') ? '/unsubscribe/…' : path;
}

class BodyTooLargeError extends Error {}

/** The whole request body, refused past `limit` bytes. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLargeError();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLargeError();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Another process (often a second worker) holds HTTP_PORT: said in one line, with the ways out. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
  constructor(host: string, port: number) {
    super(
      `HTTP_PORT ${port} is already in use on ${host} (another qwn worker?): set HTTP_PORT to a ` +
        'free port, or HTTP_PORT=0 for any free one',
    );
  }
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

async function serveUnsubscribe(
  req: IncomingMessage,
  res: ServerResponse,
  endpoint: UnsubscribeEndpoint,
  token: string,
): Promise<void> {
  const method = req.method;
  if (method !== 'GET' && method !== 'HEAD' && method !== 'POST') {
    res.setHeader('allow', 'GET, HEAD, POST');
    send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    return;
  }
  let body: Buffer = Buffer.alloc(0);
  if (method === 'POST') {
    try {
      body = await readBody(req, UNSUBSCRIBE_BODY_LIMIT);
    } catch (err) {
      if (!(err instanceof BodyTooLargeError)) throw err;
      // The rest of the body is not read: close the connection rather than drain it.
      res.setHeader('connection', 'close');
      send(res, 413, 'text/plain; charset=utf-8', 'request body too large\n');
      return;
    }
  }
  const page = await endpoint({
    method,
    token,
    contentType: req.headers['content-type'],
    body,
  });
  res.writeHead(page.status, {
    ...PAGE_HEADERS,
    'content-length': Buffer.byteLength(page.html),
  });
  res.end(page.html);
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { logger } = options;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const unsubscribe = UNSUBSCRIBE_PATH.exec(path);
    if (unsubscribe && options.unsubscribe) {
      await serveUnsubscribe(req, res, options.unsubscribe, unsubscribe[1]!);
      return;
    }
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
      logger.error({ err, path: loggedPath(req.url) }, 'ops request failed');
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
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(options.host, options.port) : err),
    );
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
