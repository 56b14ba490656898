import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  RobotError,
  createRobotSender,
  type RobotSender,
  type RobotTarget,
} from '../../src/channels/robot.js';
import { describeRobot } from '../../src/channels/robot-identity.js';
import type { Notification } from '../../src/domain/render.js';
import { renderDingtalk, renderFeishu, renderWecom } from '../../src/domain/robot-render.js';
import { createLogger } from '../../src/logger.js';
import { closedPort } from '../support/net.js';
import { startRobotServer, type RobotServer, type Vendor } from '../support/robot-server.js';
import { sampleNotification, sampleWarning } from './fixtures.js';

const TOKENS: Record<Vendor, string> = {
  wecom: '693a91f6-7f2c-4bc4-97a0-0ec2a1fa5aaa',
  dingtalk: '7c1f0e2d9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d',
  feishu: '2f0c3a6e-8b1d-4c5e-9f7a-1b2c3d4e5f60',
};
const SECRETS: Partial<Record<Vendor, string>> = {
  dingtalk: 'SEC0f9e8d7c6b5a493827161504f3e2d1c0b9a8f7e6d5c4b3a2918070605040302',
  feishu: 'lF8sK2pQ7vX4nR9tY1wZ3bC6dE0gH5jM',
};

const MESSAGE_ID = '9a0c2b7e-3d4f-4e5a-8b6c-7d8e9f0a1b2c';
const message = (notifications: Notification[] = [sampleNotification()]) => ({
  id: MESSAGE_ID,
  notifications,
});

const logLines: string[] = [];
const logger = createLogger(
  'debug',
  new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
);

const servers = {} as Record<Vendor, RobotServer>;
const senders: RobotSender[] = [];

function sender(o: { allowPrivate?: boolean; timeoutMs?: number } = {}) {
  const s = createRobotSender({
    allowPrivate: o.allowPrivate ?? true,
    timeoutMs: o.timeoutMs ?? 5_000,
    logger,
  });
  senders.push(s);
  return s;
}

const target = (vendor: Vendor, secret = SECRETS[vendor]): RobotTarget => ({
  vendor,
  url: servers[vendor].url(),
  ...(secret ? { secret } : {}),
});

const caught: RobotError[] = [];
async function failure(promise: Promise<unknown>): Promise<RobotError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(RobotError);
    caught.push(err as RobotError);
    return err as RobotError;
  }
  throw new Error('expected the post to fail');
}

beforeAll(async () => {
  for (const vendor of ['wecom', 'dingtalk', 'feishu'] as const) {
    servers[vendor] = await startRobotServer({
      vendor,
      token: TOKENS[vendor],
      ...(SECRETS[vendor] ? { secret: SECRETS[vendor] } : {}),
    });
  }
});

afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()));
  for (const server of Object.values(servers)) server.posts.splice(0);
});

afterAll(async () => {
  await Promise.all(Object.values(servers).map((s) => s.close()));
});

describe('robot sender: success', () => {
  it('WeCom: posts the rendered markdown to the key URL; errcode 0 is success', async () => {
    const ns = [sampleNotification()];
    const result = await sender().send(target('wecom'), message(ns));
    expect(result).toEqual({ messageId: MESSAGE_ID, robot: describeRobot(servers.wecom.url()) });
    expect(servers.wecom.posts).toHaveLength(1);
    expect(servers.wecom.posts[0]!.json).toEqual(renderWecom(ns, MESSAGE_ID));
    expect(servers.wecom.posts[0]!.signatureValid).toBeNull();
  });

  it('DingTalk: signs the query by the documented recipe, msgUuid is the message id', async () => {
    const ns = [sampleNotification(), sampleNotification({ warning: sampleWarning({ id: 'W2' }) })];
    const before = Date.now();
    await sender().send(target('dingtalk'), message(ns));
    const [post] = servers.dingtalk.posts;
    expect(post!.signatureValid).toBe(true);
    const timestamp = Number(post!.query.get('timestamp'));
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Date.now());
    expect(post!.query.get('access_token')).toBe(TOKENS.dingtalk);
    expect(post!.json).toEqual(renderDingtalk(ns, MESSAGE_ID));
    expect(post!.json.msgUuid).toBe(MESSAGE_ID);
  });

  it('Feishu: signs in the body (timestamp in seconds), the card as rendered; code 0 is success', async () => {
    const ns = [sampleNotification({ lang: 'en' })];
    await sender().send(target('feishu'), message(ns));
    const [post] = servers.feishu.posts;
    expect(post!.signatureValid).toBe(true);
    expect(post!.json.timestamp).toMatch(/^\d{10}$/);
    const { timestamp: _t, sign: _s, ...card } = post!.json;
    expect(card).toEqual(renderFeishu(ns, MESSAGE_ID));
  });

  it('posts without signing when the robot has no secret', async () => {
    const noSecret = await startRobotServer({ vendor: 'dingtalk', token: 'nosecret-token-1234' });
    try {
      await sender().send({ vendor: 'dingtalk', url: noSecret.url() }, message());
      expect(noSecret.posts[0]!.query.has('sign')).toBe(false);
    } finally {
      await noSecret.close();
    }
  });
});

describe('robot sender: answers', () => {
  it('a wrong secret is refused with the vendor message (DingTalk 310000, Feishu 19021)', async () => {
    const ding = await failure(
      sender().send(target('dingtalk', 'SECwrong-secret-000000'), message()),
    );
    expect(servers.dingtalk.posts[0]!.signatureValid).toBe(false);
    expect(ding).toMatchObject({
      kind: 'refused',
      retryable: false,
      gone: false,
      vendorCode: 310000,
      vendorMessage: 'sign not match',
    });
    const fei = await failure(sender().send(target('feishu', 'wrong-secret-0000'), message()));
    expect(fei).toMatchObject({ kind: 'refused', vendorCode: 19021 });
    expect(fei.message).toContain('sign match fail');
  });

  it('a wrong token means the robot is gone (WeCom 93000, DingTalk 300001, Feishu 19001)', async () => {
    for (const vendor of ['wecom', 'dingtalk', 'feishu'] as const) {
      const url = servers[vendor].url().replace(TOKENS[vendor], 'not-the-token-123');
      const err = await failure(
        sender().send({ vendor, url, secret: SECRETS[vendor] ?? null }, message()),
      );
      expect(err, vendor).toMatchObject({ kind: 'gone', gone: true, retryable: false });
    }
  });

  const table: [Vendor, number, string, number | undefined][] = [
    ['wecom', 45009, 'rate-limited', 60_000],
    ['wecom', 93004, 'gone', undefined],
    ['wecom', 40058, 'refused', undefined],
    ['wecom', -1, 'retryable', undefined],
    ['dingtalk', 130101, 'rate-limited', 600_000],
    ['dingtalk', 410100, 'rate-limited', 600_000],
    ['dingtalk', 400101, 'gone', undefined],
    ['dingtalk', 400102, 'gone', undefined],
    ['dingtalk', 400106, 'gone', undefined],
    ['dingtalk', 430102, 'refused', undefined],
    ['feishu', 11232, 'rate-limited', 60_000],
    ['feishu', 19024, 'refused', undefined],
    ['feishu', 19022, 'refused', undefined],
    ['feishu', 99991, 'retryable', undefined],
  ];
  it.each(table)('%s code %i in an HTTP 200 is %s', async (vendor, code, kind, retryAfterMs) => {
    const body =
      vendor === 'feishu'
        ? { code, msg: `vendor says ${code}` }
        : { errcode: code, errmsg: `vendor says ${code}` };
    servers[vendor].queue({ status: 200, body });
    const err = await failure(sender().send(target(vendor), message()));
    expect(err.kind).toBe(kind);
    expect(err.vendorCode).toBe(code);
    expect(err.retryable).toBe(kind === 'rate-limited' || kind === 'retryable');
    expect(err.gone).toBe(kind === 'gone');
    expect(err.retryAfterMs).toBe(retryAfterMs);
    expect(err.vendorMessage).toBe(`vendor says ${code}`);
    expect(servers[vendor].posts).toHaveLength(1);
  });

  it('success is code 0 in a 200 only: Feishu legacy StatusCode 0 without code is not', async () => {
    servers.feishu.queue({ status: 200, body: { StatusCode: 0, StatusMessage: 'success' } });
    const err = await failure(sender().send(target('feishu'), message()));
    expect(err.kind).toBe('refused');
    expect(err.message).toContain('no numeric code');

    servers.wecom.queue({ status: 500, body: { errcode: 0, errmsg: 'ok' } });
    expect((await failure(sender().send(target('wecom'), message()))).kind).toBe('retryable');

    servers.wecom.queue({ status: 200, body: '<html>proxy</html>' });
    expect((await failure(sender().send(target('wecom'), message()))).kind).toBe('refused');
  });

  it('a vendor code decides even with another status (Feishu 9499 with HTTP 400)', async () => {
    servers.feishu.queue({ status: 400, body: { code: 9499, msg: 'Bad Request' } });
    const err = await failure(sender().send(target('feishu'), message()));
    expect(err).toMatchObject({ kind: 'refused', vendorCode: 9499, status: 400 });
  });

  it('classifies bare HTTP statuses: 5xx and 3xx retry, 429 waits, 410 gone, other 4xx refused', async () => {
    const cases: [number, Record<string, string>, string, number | undefined][] = [
      [503, {}, 'retryable', undefined],
      [302, { location: 'http://127.0.0.1:1/elsewhere' }, 'retryable', undefined],
      [429, { 'retry-after': '30' }, 'rate-limited', 30_000],
      [429, {}, 'rate-limited', 60_000],
      [410, {}, 'gone', undefined],
      [404, {}, 'refused', undefined],
    ];
    for (const [status, headers, kind, retryAfterMs] of cases) {
      servers.wecom.queue({ status, headers, body: 'nope' });
      const err = await failure(sender().send(target('wecom'), message()));
      expect(err, String(status)).toMatchObject({ kind, status });
      expect(err.retryAfterMs, String(status)).toBe(retryAfterMs);
    }
    expect(servers.wecom.posts).toHaveLength(cases.length);
  });

  it('gives up on a robot that does not answer, retryably, within the timeout', async () => {
    servers.wecom.queue({ hang: true, body: null });
    const started = Date.now();
    const err = await failure(sender({ timeoutMs: 300 }).send(target('wecom'), message()));
    expect(err.kind).toBe('retryable');
    expect(err.message).toContain('timed out');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('a refused connection is retryable', async () => {
    const port = await closedPort();
    const err = await failure(
      sender().send(
        {
          vendor: 'wecom',
          url: `http://127.0.0.1:${port}/cgi-bin/webhook/send?key=${TOKENS.wecom}`,
        },
        message(),
      ),
    );
    expect(err.kind).toBe('retryable');
  });
});

describe('robot sender: address guard', () => {
  it('refuses loopback without WEBHOOK_ALLOW_PRIVATE, and never posts', async () => {
    for (const vendor of ['wecom', 'dingtalk', 'feishu'] as const) {
      const err = await failure(sender({ allowPrivate: false }).send(target(vendor), message()));
      expect(err, vendor).toMatchObject({ kind: 'refused', retryable: false });
      expect(err.message).toContain('loopback');
      expect(servers[vendor].posts).toHaveLength(0);
    }
  });

  it('refuses a hostname that resolves to loopback', async () => {
    const url = servers.wecom.url().replace('127.0.0.1', 'localhost');
    const err = await failure(
      sender({ allowPrivate: false }).send({ vendor: 'wecom', url }, message()),
    );
    expect(err.kind).toBe('refused');
    expect(servers.wecom.posts).toHaveLength(0);
  });

  it('refuses cloud metadata even when private targets are allowed', async () => {
    const err = await failure(
      sender().send(
        { vendor: 'feishu', url: `http://169.254.169.254/open-apis/bot/v2/hook/${TOKENS.feishu}` },
        message(),
      ),
    );
    expect(err.kind).toBe('refused');
  });
});

describe('robot sender: secrets', () => {
  it('no token, key or secret in any error or log line, even when the vendor echoes them', async () => {
    logLines.splice(0);
    caught.splice(0);
    servers.wecom.queue({
      status: 200,
      body: {
        errcode: 93000,
        errmsg: `invalid webhook url ${servers.wecom.url()}, key ${TOKENS.wecom}`,
      },
    });
    servers.dingtalk.queue({
      status: 200,
      body: { errcode: 310000, errmsg: `sign not match, secret ${SECRETS.dingtalk}` },
    });
    servers.feishu.queue({
      status: 400,
      body: { code: 9499, msg: `bad hook ${servers.feishu.url()}` },
    });
    for (const vendor of ['wecom', 'dingtalk', 'feishu'] as const) {
      const err = await failure(sender().send(target(vendor), message()));
      logger.error({ err }, 'robot delivery failed');
    }
    await failure(
      sender({ timeoutMs: 200 }).send(
        { vendor: 'wecom', url: `http://127.0.0.1:${await closedPort()}/x?key=${TOKENS.wecom}` },
        message(),
      ),
    );

    const everything = [
      ...logLines,
      ...caught.flatMap((e) => [
        e.message,
        e.stack ?? '',
        e.vendorMessage ?? '',
        JSON.stringify(e),
        e.cause instanceof Error ? `${e.cause.message}\n${e.cause.stack ?? ''}` : '',
      ]),
    ].join('\n');
    expect(caught).toHaveLength(4);
    expect(logLines.length).toBeGreaterThan(3);
    for (const secret of [...Object.values(TOKENS), ...Object.values(SECRETS)]) {
      expect(everything).not.toContain(secret);
    }
    expect(everything).toContain('[redacted]');
    expect(everything).toContain(describeRobot(servers.wecom.url()));
  });
});
