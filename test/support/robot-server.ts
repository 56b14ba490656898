import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A chat-robot endpoint on 127.0.0.1 that behaves as the vendors document (notes/chat-robots.md):
 * it checks the credential in the URL and, when the robot has a secret, the signature by the
 * documented recipe (written here from the docs, independently of src/channels/robot-sign.ts),
 * and answers with the vendor's codes. Tests can queue other answers and count posts.
 */

export type Vendor = 'wecom' | 'dingtalk' | 'feishu';

export interface RobotPost {
  path: string;
  query: URLSearchParams;
  json: Record<string, unknown>;
  raw: string;
  /** The signature check's outcome: true, false, or null when the robot has no secret. */
  signatureValid: boolean | null;
}

export interface QueuedAnswer {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  /** Never answer (a hung robot). */
  hang?: boolean;
}

export interface RobotServer {
  readonly posts: RobotPost[];
  /** The robot's URL: its credential in the place the vendor puts it. */
  url(): string;
  /** Answers for the next posts, in order; afterwards the documented ones. */
  queue(...answers: QueuedAnswer[]): void;
  close(): Promise<void>;
}

export interface RobotServerOptions {
  vendor: Vendor;
  /** The credential in the URL: WeCom key, DingTalk access token, Feishu hook token. */
  token: string;
  secret?: string;
  /** Signature age accepted, ms (the vendors say an hour). */
  maxSkewMs?: number;
  now?: () => number;
}

const OK: Record<Vendor, unknown> = {
  wecom: { errcode: 0, errmsg: 'ok' },
  dingtalk: { errcode: 0, errmsg: 'ok' },
  feishu: { StatusCode: 0, StatusMessage: 'success', code: 0, data: {}, msg: 'success' },
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startRobotServer(o: RobotServerOptions): Promise<RobotServer> {
  const posts: RobotPost[] = [];
  const queued: QueuedAnswer[] = [];
  const hung: ServerResponse[] = [];
  const now = o.now ?? (() => Date.now());
  const maxSkew = o.maxSkewMs ?? 3_600_000;

  const credentialOk = (path: string, query: URLSearchParams): boolean => {
    if (o.vendor === 'wecom')
      return path === '/cgi-bin/webhook/send' && query.get('key') === o.token;
    if (o.vendor === 'dingtalk')
      return path === '/robot/send' && query.get('access_token') === o.token;
    return path === `/open-apis/bot/v2/hook/${o.token}`;
  };

  const signatureOf = (query: URLSearchParams, json: Record<string, unknown>): boolean | null => {
    if (!o.secret) return null;
    if (o.vendor === 'dingtalk') {
      // sign = urlencode(base64(HMAC-SHA256(key = secret, message = timestamp + "\n" + secret)))
      const timestamp = query.get('timestamp') ?? '';
      const expected = createHmac('sha256', o.secret)
        .update(`${timestamp}\n${o.secret}`)
        .digest('base64');
      return query.get('sign') === expected && Math.abs(now() - Number(timestamp)) < maxSkew;
    }
    if (o.vendor === 'feishu') {
      // sign = base64(HMAC-SHA256(key = timestamp + "\n" + secret, message = ""))
      const timestamp = typeof json.timestamp === 'string' ? json.timestamp : '';
      const expected = createHmac('sha256', `${timestamp}\n${o.secret}`).digest('base64');
      return json.sign === expected && Math.abs(now() / 1000 - Number(timestamp)) < maxSkew / 1000;
    }
    return null;
  };

  const documentedAnswer = (
    credential: boolean,
    signature: boolean | null,
  ): { status: number; body: unknown } => {
    if (!credential) {
      return {
        wecom: { status: 200, body: { errcode: 93000, errmsg: 'invalid webhook url' } },
        dingtalk: { status: 200, body: { errcode: 300001, errmsg: 'token is not exist' } },
        feishu: {
          status: 200,
          body: { code: 19001, msg: 'param invalid: incoming webhook access token invalid' },
        },
      }[o.vendor];
    }
    if (signature === false) {
      return o.vendor === 'dingtalk'
        ? { status: 200, body: { errcode: 310000, errmsg: 'sign not match' } }
        : {
            status: 200,
            body: {
              code: 19021,
              msg: 'sign match fail or timestamp is not within one hour from current time',
            },
          };
    }
    return { status: 200, body: OK[o.vendor] };
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // Counted all the same; the answer below says what was wrong.
      }
      const signatureValid = signatureOf(url.searchParams, json);
      posts.push({ path: url.pathname, query: url.searchParams, json, raw, signatureValid });
      const answer = queued.shift();
      if (answer?.hang) {
        hung.push(res);
        return;
      }
      const chosen =
        answer ?? documentedAnswer(credentialOk(url.pathname, url.searchParams), signatureValid);
      res.writeHead(chosen.status ?? 200, {
        'content-type': 'application/json',
        ...(answer?.headers ?? {}),
      });
      res.end(typeof chosen.body === 'string' ? chosen.body : JSON.stringify(chosen.body));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;

  return {
    posts,
    url() {
      if (o.vendor === 'wecom') return `${base}/cgi-bin/webhook/send?key=${o.token}`;
      if (o.vendor === 'dingtalk') return `${base}/robot/send?access_token=${o.token}`;
      return `${base}/open-apis/bot/v2/hook/${o.token}`;
    },
    queue(...answers) {
      queued.push(...answers);
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
