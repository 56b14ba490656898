import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unsubscribeUrl } from '../../src/channels/unsubscribe-token.js';
import { queryRows } from '../../src/db/client.js';
import type { OpsServer } from '../../src/ops/http-server.js';
import { startUnsubscribeServer } from '../support/unsubscribe-server.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startSandbox, type RunningSandbox } from '../support/sandbox.js';

/**
 * The two pages people open in a browser, in a real one (Debian's chromium, headless): the
 * one-click unsubscribe page of the emails and the sandbox's inbox. Both must work without
 * JavaScript (mail readers' browsers and privacy settings turn it off). `npm run test:browser`;
 * SCREENSHOTS=docs/images writes the screenshots docs/ shows.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = process.env.SCREENSHOTS
  ? resolve(process.env.SCREENSHOTS)
  : mkdtempSync(join(tmpdir(), 'qwn-screenshots-'));

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium; .ci/run ` +
        'does) or set CHROMIUM_PATH',
    );
  }
  mkdirSync(SHOTS, { recursive: true });
  // --no-sandbox: CI runs as root in a container, where Chromium's own sandbox cannot start.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
});

/** A page in a fresh context; `javaScript: false` is a reader who turned it off. */
async function openPage(o: { javaScript: boolean }): Promise<Page> {
  const context = await browser.newContext({
    javaScriptEnabled: o.javaScript,
    viewport: { width: 900, height: 600 },
    locale: 'zh-CN',
  });
  return context.newPage();
}

async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(SHOTS, name);
  await page.screenshot({ path, fullPage: true });
  const png = readFileSync(path);
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  expect(png.length).toBeGreaterThan(5_000);
}

describe('the unsubscribe page in a browser', () => {
  const SECRET = 'browser-test-unsubscribe-secret-0123456789';
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

  async function subscriber(email: string): Promise<{ id: string; email: string }> {
    const [row] = await queryRows<{ id: string; email: string }>(
      database.db,
      sql`INSERT INTO subscribers (name, email) VALUES (${email}, ${email}) RETURNING id, email`,
    );
    return row!;
  }
  async function unsubscribedAt(id: string): Promise<string | null> {
    const [row] = await queryRows<{ unsubscribed_at: string | null }>(
      database.db,
      sql`SELECT unsubscribed_at FROM subscribers WHERE id = ${id}`,
    );
    return row!.unsubscribed_at;
  }

  for (const javaScript of [false, true]) {
    it(`unsubscribes with its button, JavaScript ${javaScript ? 'on' : 'off'}`, async () => {
      const reader = await subscriber(`reader-${String(javaScript)}@example.com`);
      const link = unsubscribeUrl({ publicUrl: base, unsubscribeSecret: SECRET }, reader)!;
      const page = await openPage({ javaScript });
      const opened = await page.goto(link);
      expect(opened?.status()).toBe(200);
      await expect.poll(() => page.locator('h1').textContent()).toBe('退订预警邮件');
      // Opening the link (what a link scanner does) changes nothing.
      expect(await unsubscribedAt(reader.id)).toBeNull();
      if (!javaScript) await screenshot(page, 'unsubscribe-page.png');

      await page.getByRole('button', { name: '退订 / Unsubscribe' }).click();
      await page.waitForLoadState('load');
      expect(await page.locator('h1').textContent()).toBe('已退订');
      expect(await page.textContent('body')).toContain('You are unsubscribed');
      expect(await unsubscribedAt(reader.id)).not.toBeNull();
      if (!javaScript) await screenshot(page, 'unsubscribe-done.png');
      await page.context().close();
    });
  }

  it('says a forged link is not valid, and unsubscribes nobody', async () => {
    const reader = await subscriber('forged@example.com');
    const link = unsubscribeUrl({ publicUrl: base, unsubscribeSecret: 'another-secret' }, reader)!;
    const page = await openPage({ javaScript: false });
    const opened = await page.goto(link);
    expect(opened?.status()).toBe(404);
    expect(await page.locator('h1').textContent()).toBe('链接无效');
    expect(await page.getByRole('button').count()).toBe(0);
    expect(await unsubscribedAt(reader.id)).toBeNull();
    await page.context().close();
  });
});

describe("the sandbox's inbox in a browser", () => {
  let sandbox: RunningSandbox;

  beforeAll(async () => {
    sandbox = await startSandbox();
    const { url, secret } = sandbox.webhook;
    await sandbox.playExample([
      { name: 'My desk', email: 'me@example.com', locations: ['101210101'] },
      { name: 'My system', webhook: url, secret, locations: ['101210101'] },
    ]);
  }, 60_000);
  afterAll(async () => {
    await sandbox?.close();
  });

  it('lists what arrived and opens an email from its subject, without JavaScript', async () => {
    const page = await openPage({ javaScript: false });
    await page.goto(sandbox.inbox);
    expect(await page.locator('h2').allTextContents()).toEqual([
      'Emails (1)',
      'Webhooks (1)',
      'Robot posts (0)',
    ]);
    const webhookRow = page.locator('tr', { hasText: 'warning.new' });
    expect(await webhookRow.textContent()).toContain('signature verified');
    await screenshot(page, 'sandbox-inbox.png');

    const mailRow = page.locator('tr', { hasText: 'me@example.com' });
    await mailRow.getByRole('link').click();
    await page.waitForURL(/\/mail\/0$/);
    const body = (await page.textContent('body')) ?? '';
    expect(body).toContain('To: me@example.com');
    expect(body).toContain('杭州');
    await screenshot(page, 'sandbox-mail.png');

    await page.getByRole('link', { name: '← all mail' }).click();
    await page.waitForURL(sandbox.inbox);
    expect(await page.locator('h1').textContent()).toBe('qwn sandbox');
    await page.context().close();
  });
});
