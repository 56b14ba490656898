import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A real HTTP webhook receiver on 127.0.0.1: verifies Standard Webhooks signatures with the
 * reference library, records every request, and answers per path from a script (status
 * sequences, delays, redirects, 410, Retry-After). The sink of `qwn demo`, and the webhook
 * consumer of the channel and pipeline tests (test/support re-exports it).
 */

export interface ReceivedRequest {
  method: string;
  /** Path with query, as requested. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body when it was JSON. */
  json: unknown;
  /** Whether the signature verified against the secret for this path. */
  verified: boolean;
  /** Why verification failed (no secret configured, bad signature, stale timestamp…). */
  verifyError?: string;
  receivedAt: Date;
}

export interface ScriptedResponse {
  /** Default 200. */
  status?: number;
  /** Wait this long before answering (to provoke client timeouts). */
  delayMs?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Sets Location (pair with a 3xx status; defaults the status to 302). */
  redirectTo?: string;
  /** Sets Retry-After: seconds as a number, or an HTTP date string. */
  retryAfter?: number | string;
}

export interface WebhookReceiverOptions {
  /** The `whsec_` secret used to verify requests on every path without its own. */
  secret?: string;
  /** Secrets per path (path without the query). */
  secrets?: Record<string, string>;
}

export interface WebhookReceiver {
  readonly port: number;
  /** http://127.0.0.1:<port> */
  readonly origin: string;
  /** The full URL of a path on this receiver. */
  url(path?: string): string;
  /** Every request, oldest first. */
  readonly requests: readonly ReceivedRequest[];
  /** The requests to one path (query ignored). */
  requestsTo(path: string): ReceivedRequest[];
  /** Answer the next requests to `path` with these responses, in order; then 200. */
  script(path: string, responses: readonly ScriptedResponse[]): void;
  /** Verify requests to `path` with this secret. */
  setSecret(path: string, secret: string): void;
  /** Resolves once `count` requests (to `path`, when given) have been recorded. */
  waitForRequests(
    count: number,
    o?: { path?: string; timeoutMs?: number },
  ): Promise<ReceivedRequest[]>;
  reset(): void;
  close(): Promise<void>;
}

/** Request bodies larger than this are cut off; real payloads are a few kilobytes. */
const MAX_BODY_BYTES = 1024 * 1024;

function pathOnly(path: string): string {
  const q = path.indexOf('?');
  return q === -1 ? path : path.slice(0, q);
}

function verify(
  secret: string | undefined,
  headers: IncomingHttpHeaders,
  body: string,
): { verified: boolean; verifyError?: string } {
  if (!secret) return { verified: false, verifyError: 'no secret configured for this path' };
  const signed: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = headers[name];
    if (typeof value === 'string') signed[name] = value;
  }
  try {
    new Webhook(secret).verify(body, signed);
    return { verified: true };
  } catch (err) {
    return { verified: false, verifyError: err instanceof Error ? err.message : String(err) };
  }
}

function answer(res: ServerResponse, r: ScriptedResponse): void {
  if (res.destroyed) return;
  const headers: Record<string, string> = { ...r.headers };
  let status = r.status ?? 200;
  if (r.redirectTo !== undefined) {
    headers.location = r.redirectTo;
    if (r.status === undefined) status = 302;
  }
  if (r.retryAfter !== undefined) headers['retry-after'] = String(r.retryAfter);
  const body = r.body ?? '';
  headers['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(status, headers);
  res.end(body);
}

export async function startWebhookReceiver(
  options: WebhookReceiverOptions = {},
): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const scripts = new Map<string, ScriptedResponse[]>();
  const secrets = new Map(Object.entries(options.secrets ?? {}));
  const waiters = new Set<() => void>();
  const pendingTimers = new Set<NodeJS.Timeout>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const secret = secrets.get(pathOnly(path)) ?? options.secret;
      const record: ReceivedRequest = {
        method: req.method ?? 'GET',
        path,
        headers: req.headers,
        body,
        json,
        ...verify(secret, req.headers, body),
        receivedAt: new Date(),
      };
      requests.push(record);
      for (const wake of waiters) wake();

      const response = scripts.get(pathOnly(path))?.shift() ?? {};
      if (response.delayMs) {
        const timer = setTimeout(() => {
          pendingTimers.delete(timer);
          answer(res, response);
        }, response.delayMs);
        pendingTimers.add(timer);
      } else {
        answer(res, response);
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;

  const requestsTo = (path: string) => requests.filter((r) => pathOnly(r.path) === path);

  return {
    port,
    origin,
    url: (path = '/') => `${origin}${path.startsWith('/') ? path : `/${path}`}`,
    requests,
    requestsTo,
    script(path, responses) {
      scripts.set(path, [...(scripts.get(path) ?? []), ...responses]);
    },
    setSecret(path, secret) {
      secrets.set(path, secret);
    },
    waitForRequests(count, o = {}) {
      const timeoutMs = o.timeoutMs ?? 10_000;
      const matching = () => (o.path === undefined ? requests : requestsTo(o.path));
      return new Promise((resolve, reject) => {
        const check = () => {
          if (matching().length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve([...matching()]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `webhook receiver: ${matching().length} of ${count} requests after ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    reset() {
      requests.length = 0;
      scripts.clear();
    },
    close() {
      for (const timer of pendingTimers) clearTimeout(timer);
      pendingTimers.clear();
      return new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
