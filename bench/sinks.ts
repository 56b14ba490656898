import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { webhookSecretFor } from './data.js';

/**
 * The bench's receiving ends: a webhook receiver that checks every Standard Webhooks signature
 * and an SMTP server, both on 127.0.0.1. Unlike the test sinks they keep only what the report
 * needs (how often each notification arrived), so 100,000 requests cost no memory to speak of.
 */

/** Signatures older or newer than this are refused, as the reference verifier does. */
const TIMESTAMP_TOLERANCE_S = 5 * 60;

/** The kernel caps it at net.core.somaxconn (4096 by default). */
const LISTEN_BACKLOG = 4096;

/** What a GET of /peer/ answers: the peer counters, for a runner that knows only the origin. */
export interface PeerCounts {
  requests: number;
  alerts: number;
  lastAt: number;
}

export interface BenchReceiver {
  readonly origin: string;
  /** webhook-id → how many requests carried it (paths under /hooks/). */
  readonly received: ReadonlyMap<string, number>;
  /** Requests to /raw/ (the raw undici limit), counted only. */
  readonly rawCount: number;
  readonly badSignatures: number;
  readonly firstBadSignature: string | undefined;
  /** POSTs to /peer/ (a peer measured side by side, which cannot sign), counted only. */
  readonly peerRequests: number;
  /** Alerts in those POSTs' bodies (an Alertmanager webhook's `alerts`). */
  readonly peerAlerts: number;
  /** When the last of them arrived (Date.now(), ms); 0 before the first. */
  readonly peerLastAt: number;
  reset(): void;
  close(): Promise<void>;
}

const keys = new Map<number, Buffer>();
function keyFor(index: number): Buffer {
  let key = keys.get(index);
  if (!key) {
    key = Buffer.from(webhookSecretFor(index).slice('whsec_'.length), 'base64');
    keys.set(index, key);
  }
  return key;
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return typeof value === 'string' ? value : '';
}

/** Why a request's signature fails, or null when it verifies. */
export function signatureProblem(
  key: Buffer,
  headers: IncomingHttpHeaders,
  body: Buffer,
  nowSeconds: number,
): string | null {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) return 'missing webhook headers';
  const ts = Number(timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowSeconds - ts) > TIMESTAMP_TOLERANCE_S) {
    return `timestamp ${timestamp} outside the tolerance`;
  }
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const part of signatures.split(' ')) {
    const [version, value] = part.split(',');
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return null;
  }
  return 'no matching signature';
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
  const received = new Map<string, number>();
  let rawCount = 0;
  let badSignatures = 0;
  let firstBadSignature: string | undefined;
  let peerRequests = 0;
  let peerAlerts = 0;
  let peerLastAt = 0;

  const answerPeer = (method: string | undefined, body: Buffer, res: ServerResponse) => {
    if (method === 'GET') {
      const counts: PeerCounts = { requests: peerRequests, alerts: peerAlerts, lastAt: peerLastAt };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
      return;
    }
    let alerts: number;
    try {
      alerts = (JSON.parse(body.toString('utf8')) as { alerts: unknown[] }).alerts.length;
    } catch {
      // The peer retries what is refused, so a body that cannot be read is not counted.
      res.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    peerRequests += 1;
    peerAlerts += alerts;
    peerLastAt = Date.now();
    res.writeHead(204).end();
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (req.url?.startsWith('/peer/')) {
        answerPeer(req.method, Buffer.concat(chunks), res);
        return;
      }
      const match = /^\/(hooks|raw)\/(\d+)$/.exec(req.url ?? '');
      if (!match) {
        res.writeHead(404, { 'content-length': '0' }).end();
        return;
      }
      const problem = signatureProblem(
        keyFor(Number(match[2])),
        req.headers,
        Buffer.concat(chunks),
        Math.floor(Date.now() / 1000),
      );
      if (problem) {
        badSignatures += 1;
        firstBadSignature ??= `${req.url}: ${problem}`;
        // A consumer refuses what it cannot verify; the pipeline would retry it later.
        res.writeHead(401, { 'content-length': '0' }).end();
        return;
      }
      if (match[1] === 'raw') {
        rawCount += 1;
      } else {
        const id = header(req.headers, 'webhook-id');
        received.set(id, (received.get(id) ?? 0) + 1);
      }
      res.writeHead(204).end();
    });
  });
  // Keep-alive connections from the senders' pools are the normal case; let them stay.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Alertmanager opens thousands of connections at once (a send per alert, no pool limit);
    // beyond Node's default backlog of 511 their SYNs were dropped and resent a second or more
    // later, which measured the kernel's retransmit timer rather than the peer.
    server.listen({ port: 0, host: '127.0.0.1', backlog: LISTEN_BACKLOG }, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    get rawCount() {
      return rawCount;
    },
    get badSignatures() {
      return badSignatures;
    },
    get firstBadSignature() {
      return firstBadSignature;
    },
    get peerRequests() {
      return peerRequests;
    },
    get peerAlerts() {
      return peerAlerts;
    },
    get peerLastAt() {
      return peerLastAt;
    },
    reset() {
      received.clear();
      rawCount = 0;
      badSignatures = 0;
      firstBadSignature = undefined;
      peerRequests = 0;
      peerAlerts = 0;
      peerLastAt = 0;
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export interface BenchSmtp {
  readonly url: string;
  /** Message-ID (without brackets) → how many messages carried it. */
  readonly received: ReadonlyMap<string, number>;
  readonly total: number;
  reset(): void;
  close(): Promise<void>;
}

const MESSAGE_ID = /^message-id:\s*<([^>\r\n]+)>/im;

export async function startBenchSmtp(): Promise<BenchSmtp> {
  const received = new Map<string, number>();
  let total = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Pooled clients keep idle connections open; closing must not wait for them.
    closeTimeout: 200,
    maxClients: 1000,
    onAuth(_auth, _session, callback) {
      callback(null, { user: 'bench' });
    },
    onData(stream, _session, callback) {
      let head = '';
      stream.on('data', (chunk: Buffer) => {
        // The headers come first; the body is not needed.
        if (head.length < 16_384) head += chunk.toString('latin1');
      });
      stream.on('error', (err) => callback(err));
      stream.on('end', () => {
        const end = head.search(/\r?\n\r?\n/);
        const headers = end === -1 ? head : head.slice(0, end);
        const unfolded = headers.replace(/\r?\n[ \t]+/g, ' ');
        const id = MESSAGE_ID.exec(unfolded)?.[1] ?? '';
        total += 1;
        received.set(id, (received.get(id) ?? 0) + 1);
        callback(null, 'queued');
      });
    },
  });
  // smtp-server emits a client's socket error (ECONNRESET when a sender process is killed) on
  // the server; without a listener it would be an uncaught exception in the sink's process.
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get total() {
      return total;
    },
    reset() {
      received.clear();
      total = 0;
    },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
