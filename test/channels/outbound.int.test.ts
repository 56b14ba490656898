import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  DeadlineError,
  postOnce,
  readTransportFailure,
  type PostOptions,
} from '../../src/channels/outbound.js';
import { closedPort } from '../support/net.js';

/**
 * `postOnce` against a real HTTP server on loopback: what comes back in each answer mode, the
 * answer's limit, and the one deadline over connecting, waiting and reading.
 */

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const routes = new Map<string, Route>();
const sockets = new Set<Socket>();
const requestSockets: Socket[] = [];
let server: http.Server;
let origin: string;
const agents: Agent[] = [];

function agent(options: ConstructorParameters<typeof Agent>[0] = {}): Agent {
  const a = new Agent(options);
  agents.push(a);
  return a;
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requestSockets.push(req.socket);
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () =>
      (routes.get(req.url ?? '') ?? ((_q, r) => r.writeHead(404).end()))(req, res),
    );
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  routes.clear();
  requestSockets.length = 0;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((done) => server.close(done));
});

const request = (path: string) => ({
  origin,
  path,
  headers: { 'content-type': 'application/json' },
  body: '{"hello":"world"}',
});
const options = (o: Partial<PostOptions> = {}): PostOptions => ({
  timeoutMs: 2_000,
  maxAnswerBytes: 64 * 1024,
  answer: 'status',
  ...o,
});

/** Headers at once, then a byte every 50 ms for 5 s: only a deadline bounds it. */
const drip: Route = (_req, res) => {
  res.writeHead(200, { 'x-kind': 'drip' });
  const timer = setInterval(() => res.write('.'), 50);
  const end = setTimeout(() => res.end(), 5_000);
  res.on('close', () => {
    clearInterval(timer);
    clearTimeout(end);
  });
};

describe('postOnce', () => {
  it('answers with the status and headers, and drains the body so the connection is reused', async () => {
    routes.set('/ok', (_req, res) => res.writeHead(202, { 'retry-after': '7' }).end('{"fine":1}'));
    const a = agent();
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await postOnce(a, request('/ok'), options()));
    expect(answers[0]).toMatchObject({ status: 202, headers: { 'retry-after': '7' } });
    expect(answers.every((x) => x.status === 202 && x.body.length === 0)).toBe(true);
    // An answer left unread would close its connection: every POST would open one.
    expect(requestSockets).toHaveLength(4);
    expect(new Set(requestSockets).size).toBeLessThan(4);
  });

  it('returns the whole body when the body is the answer', async () => {
    routes.set('/json', (_req, res) => res.writeHead(200).end('{"errcode":0,"errmsg":"ok"}'));
    const answer = await postOnce(agent(), request('/json'), options({ answer: 'body' }));
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ errcode: 0, errmsg: 'ok' });
  });

  it('reports a status other than 2xx as an answer, not an error', async () => {
    routes.set('/gone', (_req, res) => res.writeHead(410).end());
    expect((await postOnce(agent(), request('/gone'), options())).status).toBe(410);
  });

  it('waits past an informational answer for the final one', async () => {
    routes.set('/processing', (_req, res) => {
      res.writeProcessing();
      setTimeout(() => res.writeHead(204).end(), 20);
    });
    expect((await postOnce(agent(), request('/processing'), options())).status).toBe(204);
  });

  it('stops reading at the limit: the status stands, and a body answer is cut there', async () => {
    const big = 'x'.repeat(2 * 1024 * 1024);
    routes.set('/chatty', (_req, res) => res.writeHead(200).end(big));
    const limit = 64 * 1024;
    const status = await postOnce(agent(), request('/chatty'), options({ maxAnswerBytes: limit }));
    expect(status.status).toBe(200);
    const body = await postOnce(
      agent(),
      request('/chatty'),
      options({ maxAnswerBytes: limit, answer: 'body' }),
    );
    expect(body.body.length).toBeGreaterThan(limit);
    expect(body.body.length).toBeLessThan(big.length);
  });

  it('fails at its deadline when no status comes, as a timeout', async () => {
    routes.set('/slow', (_req, res) => {
      const later = setTimeout(() => res.writeHead(200).end(), 3_000);
      res.on('close', () => clearTimeout(later));
    });
    const started = Date.now();
    const err = await postOnce(agent(), request('/slow'), options({ timeoutMs: 200 })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DeadlineError);
    expect(readTransportFailure(err)).toMatchObject({ timedOut: true });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('ends a dripping answer at its deadline: the status stands, a body answer fails', async () => {
    // The drip goes on for 5 s; the deadline is a second, so that a starved host still gets the
    // status within it (300 ms did not, on a host that lent this one a fifth of a core).
    routes.set('/drip', drip);
    let started = Date.now();
    const status = await postOnce(agent(), request('/drip'), options({ timeoutMs: 1_000 }));
    expect(status).toMatchObject({ status: 200, headers: { 'x-kind': 'drip' } });
    expect(Date.now() - started).toBeLessThan(3_000);

    started = Date.now();
    const err = await postOnce(
      agent(),
      request('/drip'),
      options({ timeoutMs: 1_000, answer: 'body' }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DeadlineError);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('bounds the wait for a connection too', async () => {
    // A connector that never connects: the request never starts.
    const stuck = agent({ connect: () => undefined });
    const started = Date.now();
    const err = await postOnce(stuck, request('/ok'), options({ timeoutMs: 200 })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DeadlineError);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('passes on a refused connection with its code', async () => {
    const port = await closedPort();
    const err = await postOnce(
      agent(),
      { ...request('/'), origin: `http://127.0.0.1:${port}` },
      options(),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(readTransportFailure(err)).toMatchObject({ timedOut: false, code: 'ECONNREFUSED' });
  });
});
