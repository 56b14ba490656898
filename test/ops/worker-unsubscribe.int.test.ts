import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { unsubscribeUrl } from '../../src/channels/unsubscribe-token.js';
import { queryRows } from '../../src/db/client.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

const SECRET = 'worker-unsubscribe-secret-0123456789abcdef';
const HANGZHOU = '101210101';
const WARNING = 'emails carry no working unsubscribe link: set PUBLIC_URL and UNSUBSCRIBE_SECRET';

describe('qwn worker: one-click unsubscribe', () => {
  let h: PipelineHarness;
  let worker: WorkerProcess | undefined;
  let subscriberId: string;

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    subscriberId = await h.addEmailSubscriber('duty@example.com', [HANGZHOU]);
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  afterAll(async () => {
    worker?.kill();
    await h?.close();
  });

  const env = (extra: Record<string, string> = {}) => ({
    ...h.env,
    HTTP_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  });

  async function unsubscribedAt(): Promise<string | null> {
    const [row] = await queryRows<{ unsubscribed_at: string | null }>(
      h.database.db,
      sql`SELECT unsubscribed_at FROM subscribers WHERE id = ${subscriberId}`,
    );
    return row!.unsubscribed_at;
  }

  it('warns once at start without PUBLIC_URL and serves no unsubscribe without the secret', async () => {
    worker = await startWorkerProcess(env());
    await worker.waitForLine((l) => l.msg === 'worker started');
    const warnings = worker.lines.filter((l) => l.msg === WARNING);
    expect(warnings).toEqual([
      expect.objectContaining({ level: 40, missing: ['PUBLIC_URL', 'UNSUBSCRIBE_SECRET'] }),
    ]);
    const url = unsubscribeUrl(
      { publicUrl: `http://127.0.0.1:${worker.port}`, unsubscribeSecret: SECRET },
      { id: subscriberId, email: 'duty@example.com' },
    )!;
    const res = await fetch(url, {
      method: 'POST',
      body: new URLSearchParams({ 'List-Unsubscribe': 'One-Click' }),
    });
    expect(res.status).toBe(404);
    expect(await unsubscribedAt()).toBeNull();
  });

  it('unsubscribes through the worker with both settings, and logs no token', async () => {
    // PUBLIC_URL is the proxy in front; the test calls the worker itself on the link's path.
    worker = await startWorkerProcess(
      env({ PUBLIC_URL: 'https://alerts.example.com', UNSUBSCRIBE_SECRET: SECRET }),
    );
    await worker.waitForLine((l) => l.msg === 'worker started');
    expect(worker.lines.filter((l) => l.msg === WARNING)).toEqual([]);

    const url = unsubscribeUrl(
      { publicUrl: 'https://alerts.example.com', unsubscribeSecret: SECRET },
      { id: subscriberId, email: 'duty@example.com' },
    )!;
    const path = new URL(url).pathname;
    const local = `http://127.0.0.1:${worker.port}${path}`;

    const page = await fetch(local);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    expect(await unsubscribedAt()).toBeNull();

    const form = new FormData();
    form.append('List-Unsubscribe', 'One-Click');
    const res = await fetch(local, { method: 'POST', body: form, redirect: 'manual' });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(await unsubscribedAt()).not.toBeNull();

    await worker.waitForLine((l) => l.msg === 'subscriber unsubscribed');
    const token = path.split('/').at(-1)!;
    expect(JSON.stringify(worker.lines)).not.toContain(token);
    expect(JSON.stringify(worker.lines)).not.toContain(SECRET);
  });
});
