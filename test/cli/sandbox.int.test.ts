import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../support/sandbox.js';

/**
 * `qwn sandbox` as a newcomer uses it: start it, paste its lines, seed their own file, make a
 * warning, run a cycle, and read what arrived in the inbox (docs/operations.md). The inbox in a
 * real browser: test/browser/pages.browser.test.ts.
 */

let sandbox: RunningSandbox;

beforeAll(async () => {
  sandbox = await startSandbox();
}, 30_000);

afterAll(async () => {
  await sandbox?.close();
});

describe('qwn sandbox', () => {
  it('prints the lines to paste, and everything they name answers', () => {
    expect(Object.keys(sandbox.env).sort()).toEqual([
      'MAIL_FROM',
      'QWEATHER_API_URL',
      'SMTP_URL',
      'WEBHOOK_ALLOW_PRIVATE',
    ]);
  });

  it("takes a newcomer's own seed through a cycle to its inbox, signatures verified", async () => {
    const { url, secret } = sandbox.webhook;
    const poll = await sandbox.playExample([
      { name: 'My desk', email: 'me@example.com', locations: ['101210101'] },
      { name: 'My system', webhook: url, secret, locations: ['101210101'] },
    ]);
    expect(JSON.parse(poll.trim().split('\n').at(-1)!)).toMatchObject({
      events: { new: 1 },
      deliveries: { sent: 2 },
    });

    const page = await (await fetch(sandbox.inbox)).text();
    expect(page).toMatch(/<h2>Emails \(1\)<\/h2>.*me@example\.com/s);
    expect(page).toMatch(/<h2>Webhooks \(1\)<\/h2>.*warning\.new.*signature verified/s);
    const mail = await (await fetch(new URL('/mail/0', sandbox.inbox))).text();
    expect(mail).toContain('杭州');
    await expect
      .poll(() => readFileSync(join(sandbox.dir, 'box', 'mail', 'index.html'), 'utf8'))
      .toContain('me@example.com');
  });

  it('stops on Ctrl-C, with connections still open to it', async () => {
    const exited = new Promise<number | null>((done) =>
      sandbox.process.once('exit', (code) => done(code)),
    );
    sandbox.process.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
