import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The demo's WeCom group robot (docs/messages.md): a loopback server at WeCom's path that checks
 * the robot key and answers `errcode: 0` as WeCom does, keeping each post's markdown so the demo
 * can print what the group would see. The key is random per run: a robot URL is a secret, and
 * the demo shows the robot only by `describeRobot`.
 */

export interface RobotSinkPost {
  /** `markdown.content`, or the raw body when the post was something else. */
  readonly content: string;
}

export interface RobotSink {
  readonly posts: readonly RobotSinkPost[];
  /** The robot URL to seed: `http://127.0.0.1:PORT/cgi-bin/webhook/send?key=…`. */
  readonly url: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function markdownOf(raw: string): string {
  try {
    const body = JSON.parse(raw) as { markdown?: { content?: unknown } };
    if (typeof body.markdown?.content === 'string') return body.markdown.content;
  } catch {
    // Shown as it came.
  }
  return raw;
}

export async function startRobotSink(): Promise<RobotSink> {
  const key = randomBytes(12).toString('hex');
  const posts: RobotSinkPost[] = [];
  const server = createServer((req, res) => {
    void readBody(req).then(
      (raw) => {
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        const ok = url.pathname === '/cgi-bin/webhook/send' && url.searchParams.get('key') === key;
        if (ok) posts.push({ content: markdownOf(raw) });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            ok ? { errcode: 0, errmsg: 'ok' } : { errcode: 93000, errmsg: 'invalid webhook url' },
          ),
        );
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    posts,
    url: `http://127.0.0.1:${port}/cgi-bin/webhook/send?key=${key}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
