import type dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  USER_AGENT,
  WebhookError,
  createWebhookSender,
  type WebhookSender,
} from '../../src/channels/webhook.js';
import { webhookPayload } from '../../src/domain/render.js';
import { createLogger } from '../../src/logger.js';
import { closedPort } from '../support/net.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { WEBHOOK_SECRET, messageOf, sampleMessage, sampleNotification } from './fixtures.js';

const logger = createLogger('silent');
let receiver: WebhookReceiver;
const senders: WebhookSender[] = [];

function sender(
  o: { allowPrivate?: boolean; timeoutMs?: number; lookup?: typeof dns.lookup } = {},
) {
  const s = createWebhookSender({
    allowPrivate: o.allowPrivate ?? true,
    timeoutMs: o.timeoutMs ?? 5_000,
    logger,
    ...(o.lookup ? { lookup: o.lookup } : {}),
  });
  senders.push(s);
  return s;
}

async function failure(promise: Promise<unknown>): Promise<WebhookError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookError);
    return err as WebhookError;
  }
  throw new Error('expected the send to fail');
}

beforeAll(async () => {
  receiver = await startWebhookReceiver({ secret: WEBHOOK_SECRET });
});

afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()));
  receiver.reset();
});

afterAll(async () => {
  await receiver.close();
});

const target = (path = '/hook') => ({ url: receiver.url(path), secret: WEBHOOK_SECRET });

describe('webhook sender', () => {
  it('renders a body once per body key, and signs each message with its own id', async () => {
    const s = sender();
    const first = { ...messageOf(sampleNotification()), webhookBodyKey: 'event-1|new|zh' };
    // Same key: the sender takes it that the body is the same, and sends the one it rendered.
    const second = {
      ...messageOf(sampleNotification({ deliveryId: '5d8c5e1a-3f4b-4a2e-8c9d-0e1f2a3b4c5d' })),
      webhookBodyKey: 'event-1|new|zh',
      notifications: [
        sampleNotification({
          deliveryId: '5d8c5e1a-3f4b-4a2e-8c9d-0e1f2a3b4c5d',
          eventType: 'update',
        }),
      ],
    };
    const third = {
      ...second,
      id: '6e9d6f2b-4a5c-4b3f-9d0e-1f2a3b4c5d6e',
      webhookBodyKey: undefined,
    };
    await s.send(target(), first);
    await s.send(target(), second);
    await s.send(target(), third);
    const [a, b, c] = receiver.requests;
    expect(b!.body).toBe(a!.body);
    expect((JSON.parse(c!.body) as { type: string }).type).toBe('warning.update');
    expect([a, b, c].map((r) => r!.headers['webhook-id'])).toEqual([first.id, second.id, third.id]);
    expect([a, b, c].every((r) => r!.verified)).toBe(true);
  });

  it('posts the docs/messages.md body, signed so that standardwebhooks verifies it', async () => {
    const n = sampleNotification();
    const result = await sender().send(target(), messageOf(n));
    expect(result).toEqual({ status: 200, webhookId: n.deliveryId });

    const [request] = receiver.requests;
    expect(request).toBeDefined();
    expect(request!.method).toBe('POST');
    expect(request!.verified).toBe(true);
    expect(request!.headers['webhook-id']).toBe(n.deliveryId);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toBe(USER_AGENT);
    expect(USER_AGENT).toMatch(/^qwn\/\d+\.\d+\.\d+/);
    expect(request!.json).toEqual(webhookPayload(n));
    // Independent check with the reference library, straight from the recorded request.
    const verified = new Webhook(WEBHOOK_SECRET).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    });
    expect(verified).toEqual(webhookPayload(n));
  });

  it('fails verification with another secret (the receiver really checks)', async () => {
    receiver.setSecret('/other-secret', `whsec_${Buffer.alloc(32, 9).toString('base64')}`);
    await sender().send(target('/other-secret'), sampleMessage());
    expect(receiver.requestsTo('/other-secret')[0]?.verified).toBe(false);
  });

  it('sends the same webhook-id on every send of one notification', async () => {
    const n = sampleNotification();
    const s = sender();
    await s.send(target(), messageOf(n));
    await s.send(target(), messageOf(n));
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(ids).toEqual([n.deliveryId, n.deliveryId]);
    expect(receiver.requests.every((r) => r.verified)).toBe(true);
  });

  it('treats 500 as retryable, and 500, 500, 200 as one logical delivery', async () => {
    receiver.script('/flaky', [{ status: 500 }, { status: 500 }, { status: 200 }]);
    const n = sampleNotification();
    const s = sender();
    for (let i = 0; i < 2; i += 1) {
      const err = await failure(s.send(target('/flaky'), messageOf(n)));
      expect(err).toMatchObject({ kind: 'http-status', status: 500, retryable: true, gone: false });
    }
    expect(await s.send(target('/flaky'), messageOf(n))).toEqual({
      status: 200,
      webhookId: n.deliveryId,
    });
    const requests = receiver.requestsTo('/flaky');
    expect(requests).toHaveLength(3);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([n.deliveryId]));
  });

  it('reports 410 as gone and not retryable', async () => {
    receiver.script('/gone', [{ status: 410 }]);
    const err = await failure(sender().send(target('/gone'), sampleMessage()));
    expect(err).toMatchObject({ kind: 'gone', gone: true, retryable: false, status: 410 });
  });

  it('treats other 4xx answers as retryable', async () => {
    receiver.script('/missing', [{ status: 404 }]);
    const err = await failure(sender().send(target('/missing'), sampleMessage()));
    expect(err).toMatchObject({ kind: 'http-status', status: 404, retryable: true, gone: false });
  });

  it('does not follow a redirect: a 302 is a retryable failure and only one request arrives', async () => {
    receiver.script('/moved', [{ status: 302, redirectTo: receiver.url('/elsewhere') }]);
    const err = await failure(sender().send(target('/moved'), sampleMessage()));
    expect(err).toMatchObject({ kind: 'redirect', status: 302, retryable: true });
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requestsTo('/elsewhere')).toHaveLength(0);
  });

  it('passes on Retry-After in seconds and as an HTTP date', async () => {
    receiver.script('/busy', [
      { status: 429, retryAfter: 120 },
      { status: 503, retryAfter: new Date(Date.now() + 600_000).toUTCString() },
    ]);
    const s = sender();
    const first = await failure(s.send(target('/busy'), sampleMessage()));
    expect(first).toMatchObject({ status: 429, retryable: true, retryAfterMs: 120_000 });
    const second = await failure(s.send(target('/busy'), sampleMessage()));
    expect(second.status).toBe(503);
    expect(second.retryAfterMs).toBeGreaterThan(590_000);
    expect(second.retryAfterMs).toBeLessThanOrEqual(600_000);
  });

  it('drains a large answer and still reports success', async () => {
    receiver.script('/chatty', [{ status: 202, body: 'x'.repeat(512 * 1024) }]);
    expect(await sender().send(target('/chatty'), sampleMessage())).toMatchObject({
      status: 202,
    });
  });

  it('gives up on a slow receiver after the timeout, retryably', async () => {
    receiver.script('/slow', [{ status: 200, delayMs: 3_000 }]);
    const started = Date.now();
    const err = await failure(sender({ timeoutMs: 300 }).send(target('/slow'), sampleMessage()));
    expect(err).toMatchObject({ kind: 'timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('ends a send whose answer drips in under the idle timeout at its deadline', async () => {
    // Headers at once, then a byte every 50 ms for 5 s: only the deadline bounds it.
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      const drip = setInterval(() => res.write('.'), 50);
      const end = setTimeout(() => res.end(), 5_000);
      res.on('close', () => {
        clearInterval(drip);
        clearTimeout(end);
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as AddressInfo;
    try {
      const started = Date.now();
      const sent = await sender({ timeoutMs: 300 }).send(
        { url: `http://127.0.0.1:${port}/drip`, secret: WEBHOOK_SECRET },
        sampleMessage(),
      );
      // The status had come: the receiver has it, whatever its body does after.
      expect(sent.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    }
  });

  it('treats a refused connection as retryable', async () => {
    const port = await closedPort();
    const err = await failure(
      sender().send({ url: `http://127.0.0.1:${port}/`, secret: WEBHOOK_SECRET }, sampleMessage()),
    );
    expect(err).toMatchObject({ kind: 'connection', retryable: true });
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('refuses a bad secret or URL permanently, without quoting the secret', async () => {
    const badSecret = 'whsec_not*base64*at*all';
    const bad = await failure(
      sender().send({ url: receiver.url('/hook'), secret: badSecret }, sampleMessage()),
    );
    expect(bad).toMatchObject({ kind: 'invalid-target', retryable: false });
    expect(bad.message).not.toContain('not*base64');
    const ftp = await failure(
      sender().send({ url: 'ftp://example.com/x', secret: WEBHOOK_SECRET }, sampleMessage()),
    );
    expect(ftp).toMatchObject({ kind: 'invalid-target', retryable: false });
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('webhook address guard', () => {
  it('refuses a loopback target without WEBHOOK_ALLOW_PRIVATE and accepts it with', async () => {
    const refused = await failure(sender({ allowPrivate: false }).send(target(), sampleMessage()));
    expect(refused).toMatchObject({ kind: 'refused-address', retryable: false });
    expect(refused.message).toMatch(/127\.0\.0\.1.*loopback/);
    expect(receiver.requests).toHaveLength(0);

    await sender({ allowPrivate: true }).send(target(), sampleMessage());
    expect(receiver.requests).toHaveLength(1);
  });

  it('refuses a target on every send to it: a URL it refused is not kept as parsed', async () => {
    const guarded = sender({ allowPrivate: false });
    for (let i = 0; i < 2; i += 1) {
      const refused = await failure(guarded.send(target(), sampleMessage()));
      expect(refused).toMatchObject({ kind: 'refused-address', retryable: false });
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses a hostname that resolves to loopback (localhost)', async () => {
    const err = await failure(
      sender({ allowPrivate: false }).send(
        { url: `http://localhost:${receiver.port}/hook`, secret: WEBHOOK_SECRET },
        sampleMessage(),
      ),
    );
    expect(err).toMatchObject({ kind: 'refused-address', retryable: false });
    expect(err.message).toMatch(/localhost resolves to/);
    expect(receiver.requests).toHaveLength(0);
  });

  it('checks the address the name resolves to at connect time (DNS rebinding)', async () => {
    // A public-looking name whose DNS answer points inside: the guard sees the answer.
    const rebinding = ((_host: string, _o: unknown, cb: (...args: unknown[]) => void) =>
      cb(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as typeof dns.lookup;
    const url = `http://hooks.example.com:${receiver.port}/hook`;
    const err = await failure(
      sender({ allowPrivate: false, lookup: rebinding }).send(
        { url, secret: WEBHOOK_SECRET },
        sampleMessage(),
      ),
    );
    expect(err).toMatchObject({ kind: 'refused-address', retryable: false });
    expect(err.message).toContain('hooks.example.com resolves to 127.0.0.1');
    expect(receiver.requests).toHaveLength(0);

    // The same lookup with private targets allowed really connects to the receiver.
    await sender({ allowPrivate: true, lookup: rebinding }).send(
      { url, secret: WEBHOOK_SECRET },
      sampleMessage(),
    );
    expect(receiver.requests).toHaveLength(1);
  });

  for (const host of ['[::ffff:127.0.0.1]', '2130706433', '0x7f.0.0.1', '017700000001', '[::1]']) {
    it(`refuses the IP literal form http://${host}/`, async () => {
      const err = await failure(
        sender({ allowPrivate: false }).send(
          { url: `http://${host}:${receiver.port}/hook`, secret: WEBHOOK_SECRET },
          sampleMessage(),
        ),
      );
      expect(err).toMatchObject({ kind: 'refused-address', retryable: false });
      expect(receiver.requests).toHaveLength(0);
    });
  }

  it('refuses cloud metadata addresses even when private targets are allowed', async () => {
    const err = await failure(
      sender({ allowPrivate: true }).send(
        { url: 'http://169.254.169.254/latest/meta-data/', secret: WEBHOOK_SECRET },
        sampleMessage(),
      ),
    );
    expect(err).toMatchObject({ kind: 'refused-address', retryable: false });
    expect(err.message).toContain('metadata');
  });
});
