import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isOneClick } from '../../src/admin/unsubscribe.js';
import { signUnsubscribeToken, unsubscribeUrl } from '../../src/channels/unsubscribe-token.js';
import { queryRows } from '../../src/db/client.js';
import type { OpsServer } from '../../src/ops/http-server.js';
import { startUnsubscribeServer } from '../support/unsubscribe-server.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const SECRET = 'unsubscribe-test-secret-0123456789abcdef';

let database: TestDatabase;
let server: OpsServer;
let base: string;

beforeAll(async () => {
  database = await createTestDatabase();
  ({ server, base } = await startUnsubscribeServer(database.db, SECRET));
});

afterAll(async () => {
  await server?.close();
  await database?.drop();
});

interface Subscriber {
  id: string;
  email: string;
}

let duty: Subscriber;
let night: Subscriber;

beforeEach(async () => {
  await database.db.execute(sql`TRUNCATE subscribers CASCADE`);
  const rows = await queryRows<Subscriber>(
    database.db,
    sql`INSERT INTO subscribers (name, email) VALUES
          ('Hangzhou duty desk', 'duty@example.com'), ('Night desk', 'night@example.com')
        RETURNING id, email`,
  );
  duty = rows.find((r) => r.email === 'duty@example.com')!;
  night = rows.find((r) => r.email === 'night@example.com')!;
});

/** The path of a subscriber's link, as `unsubscribeUrl` builds it for the emails. */
function linkOf(subscriber: Subscriber): string {
  const url = unsubscribeUrl({ publicUrl: base, unsubscribeSecret: SECRET }, subscriber);
  if (!url) throw new Error('no unsubscribe URL');
  return url;
}

async function unsubscribedAt(subscriber: Subscriber): Promise<string | null> {
  const [row] = await queryRows<{ unsubscribed_at: string | null }>(
    database.db,
    sql`SELECT unsubscribed_at FROM subscribers WHERE id = ${subscriber.id}`,
  );
  return row!.unsubscribed_at;
}

function expectPageHeaders(res: Response): void {
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('set-cookie')).toBeNull();
  expect(res.headers.get('location')).toBeNull();
}

const oneClickForm = () => new URLSearchParams({ 'List-Unsubscribe': 'One-Click' });

describe('POST /unsubscribe/TOKEN (RFC 8058 one-click)', () => {
  it('unsubscribes with a form-encoded body and answers 200, no cookie, no redirect', async () => {
    const res = await fetch(linkOf(duty), {
      method: 'POST',
      body: oneClickForm(),
      redirect: 'manual',
    });
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(await res.text()).toContain('已退订');
    expect(await unsubscribedAt(duty)).not.toBeNull();
    // Only that subscriber.
    expect(await unsubscribedAt(night)).toBeNull();
  });

  it('unsubscribes with a multipart/form-data body', async () => {
    const form = new FormData();
    form.append('List-Unsubscribe', 'One-Click');
    const res = await fetch(linkOf(night), { method: 'POST', body: form, redirect: 'manual' });
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(await unsubscribedAt(night)).not.toBeNull();
    expect(await unsubscribedAt(duty)).toBeNull();
  });

  it('is idempotent: a second POST keeps the time of the first', async () => {
    expect((await fetch(linkOf(duty), { method: 'POST', body: oneClickForm() })).status).toBe(200);
    const first = await unsubscribedAt(duty);
    await new Promise((r) => setTimeout(r, 20));
    expect((await fetch(linkOf(duty), { method: 'POST', body: oneClickForm() })).status).toBe(200);
    expect(await unsubscribedAt(duty)).toBe(first);
  });

  it('does nothing for a POST without the one-click body, and shows the button again', async () => {
    const res = await fetch(linkOf(duty), {
      method: 'POST',
      body: new URLSearchParams({ other: 'x' }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('<form method="post">');
    expect(await unsubscribedAt(duty)).toBeNull();
  });

  it('refuses a body over the limit with 413 and changes nothing', async () => {
    const res = await fetch(linkOf(duty), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `List-Unsubscribe=One-Click&pad=${'x'.repeat(64 * 1024)}`,
    });
    expect(res.status).toBe(413);
    expect(await unsubscribedAt(duty)).toBeNull();
  });
});

describe('GET /unsubscribe/TOKEN', () => {
  it('shows a page with a button that POSTs, and never unsubscribes', async () => {
    const res = await fetch(linkOf(duty), { redirect: 'manual' });
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    const html = await res.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
    expect(html).toContain('退订');
    expect(html).toContain('Unsubscribe');
    const head = await fetch(linkOf(duty), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await unsubscribedAt(duty)).toBeNull();
  });

  it('says so when the subscriber is already unsubscribed', async () => {
    await fetch(linkOf(duty), { method: 'POST', body: oneClickForm() });
    const html = await (await fetch(linkOf(duty))).text();
    expect(html).toContain('已退订');
    expect(html).not.toContain('<form');
  });
});

describe('forged and foreign tokens', () => {
  it('answer 404 and change nothing', async () => {
    const good = linkOf(duty);
    const token = good.slice(good.lastIndexOf('/') + 1);
    const [id, mac] = token.split('.') as [string, string];
    const flipped = `${mac.slice(0, 10)}${mac[10] === 'A' ? 'B' : 'A'}${mac.slice(11)}`;
    const nightMac = signUnsubscribeToken(SECRET, night).split('.')[1]!;
    const unknownId = signUnsubscribeToken(SECRET, {
      id: '00000000-0000-4000-8000-000000000000',
      email: 'duty@example.com',
    });
    const forgeries = [
      `${id}.${flipped}`,
      `${id}.${nightMac}`,
      signUnsubscribeToken('some-other-secret-of-enough-length-00000', duty),
      unknownId,
      'not-a-token',
      `${token}x`,
    ];
    for (const forged of forgeries) {
      for (const init of [{ method: 'GET' }, { method: 'POST', body: oneClickForm() }]) {
        const res = await fetch(`${base}/unsubscribe/${forged}`, { ...init, redirect: 'manual' });
        expect(res.status, `${init.method} ${forged}`).toBe(404);
        expect(res.headers.get('set-cookie')).toBeNull();
      }
    }
    expect(await unsubscribedAt(duty)).toBeNull();
    expect(await unsubscribedAt(night)).toBeNull();
  });

  it('a link stops working when the row changes address', async () => {
    const link = linkOf(duty);
    await database.db.execute(
      sql`UPDATE subscribers SET email = 'desk@example.com' WHERE id = ${duty.id}`,
    );
    expect((await fetch(link, { method: 'POST', body: oneClickForm() })).status).toBe(404);
    expect(await unsubscribedAt(duty)).toBeNull();
  });

  it('refuses other methods with 405', async () => {
    const res = await fetch(linkOf(duty), { method: 'PUT', body: oneClickForm() });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(await unsubscribedAt(duty)).toBeNull();
  });
});

describe('the one-click body', () => {
  it('is read from both encodings, and only the exact marker counts', () => {
    const multipart = (boundary: string, value: string) =>
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\n${value}\r\n--${boundary}--\r\n`,
      );
    expect(
      isOneClick('application/x-www-form-urlencoded', Buffer.from('List-Unsubscribe=One-Click')),
    ).toBe(true);
    expect(isOneClick(undefined, Buffer.from('List-Unsubscribe=One-Click'))).toBe(true);
    expect(isOneClick('multipart/form-data; boundary=xyz', multipart('xyz', 'One-Click'))).toBe(
      true,
    );
    expect(isOneClick('multipart/form-data; boundary="a b"', multipart('a b', 'One-Click'))).toBe(
      true,
    );
    expect(isOneClick('multipart/form-data; boundary=xyz', multipart('xyz', 'Two-Click'))).toBe(
      false,
    );
    expect(isOneClick('multipart/form-data', multipart('xyz', 'One-Click'))).toBe(false);
    expect(
      isOneClick('application/x-www-form-urlencoded', Buffer.from('List-Unsubscribe=one')),
    ).toBe(false);
    expect(isOneClick('application/json', Buffer.from('{"List-Unsubscribe":"One-Click"}'))).toBe(
      false,
    );
  });
});
