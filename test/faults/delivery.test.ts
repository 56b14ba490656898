import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { expectNothingLostOrSplit } from './support/expect.js';
import { closedPort, report, startFaultRun, waitUntil, type FaultRun } from './support/harness.js';
import type { Owed } from './support/storm.js';

/**
 * Receivers failing: SMTP replies 421/451 (retried) and 550 (dead), webhook endpoints that time
 * out, answer 500, redirect, answer 410 or are down. Retries are made due by SQL instead of
 * waiting for the production schedule (minutes to hours); the schedule itself is untouched.
 */

const STORM = { places: 12, emailSubscribers: 10, webhookSubscribers: 5 } as const;

describe('receivers failing', () => {
  let run: FaultRun | undefined;
  afterEach(async () => {
    await run?.close();
    run = undefined;
  });

  it('SMTP 421 and 451 are retried until sent; 550 ends dead with the reply as reason', async () => {
    const seed = 7401;
    run = await startFaultRun(seed, STORM);
    const r = run;
    const refused = new Set(['sub0@storm.test', 'sub1@storm.test']);
    for (const address of refused) r.h.smtp.rejectRecipient(address);
    r.h.smtp.failNext(25, { code: 451, message: '4.3.0 Mailbox busy, try later' });
    r.h.smtp.failNext(15, { code: 421, message: '4.4.2 Service shutting down' });
    const mayBeDead = (o: Owed) => refused.has(o.subscriber);

    r.showPhase(0);
    r.startWorker();
    await r.waitForPhase(0);
    await r.settle({ mayBeDead });
    const outcome = await r.outcome(mayBeDead);
    const rows = await r.ledger();
    const retried = rows.filter((row) => row.status === 'sent' && row.attempts > 1).length;
    report('SMTP 421/451 on 40 messages, 550 for 2 recipients', outcome, {
      temporaryRejections: r.h.smtp.rejected.length,
      sentAfterRetry: retried,
    });
    expect(r.h.smtp.rejected.length).toBe(40);
    expect(retried).toBeGreaterThanOrEqual(1);
    expect(outcome.dead).toBeGreaterThan(0);
    for (const row of rows.filter((x) => refused.has(x.subscriber))) {
      expect(row.status).toBe('dead');
      expect(row.last_error).toMatch(/550/);
      expect(row.attempts).toBe(1);
    }
    expectNothingLostOrSplit(outcome, { allowDead: true });
  });

  it('webhooks that time out, answer 500, redirect, answer 410 or are down', async () => {
    const seed = 7402;
    run = await startFaultRun(seed, { ...STORM, env: { WEBHOOK_TIMEOUT_MS: '800' } });
    const r = run;
    const owedTo = (path: string) => [...r.owed.values()].filter((o) => o.subscriber === path);
    const [slow, failing, redirecting, gone, down] = [
      '/hook/0',
      '/hook/1',
      '/hook/2',
      '/hook/3',
      '/hook/4',
    ];
    r.scriptHook(
      slow,
      Array.from({ length: 4 }, () => ({ delayMs: 1500 })),
    );
    r.scriptHook(
      failing,
      Array.from({ length: 6 }, () => ({ status: 500 })),
    );
    // Redirected forever: never followed, retried until the attempts run out.
    r.scriptHook(
      redirecting,
      Array.from({ length: owedTo(redirecting).length * 8 }, () => ({
        status: 307,
        redirectTo: r.h.hooks.url('/elsewhere'),
      })),
    );
    r.scriptHook(
      gone,
      Array.from({ length: owedTo(gone).length }, () => ({ status: 410 })),
    );
    // Down: nothing listens on its port until it comes back below.
    const downUrl = `http://127.0.0.1:${await closedPort()}${down}`;
    await r.h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${downUrl} WHERE name = ${down}`,
    );
    const mayBeDead = (o: Owed) => o.subscriber === redirecting || o.subscriber === gone;

    r.showPhase(0);
    r.startWorker();
    await r.waitForPhase(0);
    await waitUntil(
      async () =>
        (await r.ledger()).filter((x) => x.subscriber === down && x.status === 'retrying')
          .length === owedTo(down).length,
      'the down endpoint failed its first attempts',
    );
    // It comes back (the same receiver serves its path again).
    await r.h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${r.h.hooks.url(down)} WHERE name = ${down}`,
    );
    await r.settle({ mayBeDead, timeoutMs: 120_000 });
    const outcome = await r.outcome(mayBeDead);
    const rows = await r.ledger();
    const of = (path: string) => rows.filter((x) => x.subscriber === path);
    const [disabled] = await queryRows<{ active: boolean; disabled_reason: string | null }>(
      r.h.database.db,
      sql`SELECT active, disabled_reason FROM subscribers WHERE name = ${gone}`,
    );
    report('webhook receivers: timeout, 500, redirect forever, 410, down then back', outcome, {
      timedOutThenSent: of(slow).filter((x) => x.status === 'sent' && x.attempts > 1).length,
      failed500ThenSent: of(failing).filter((x) => x.status === 'sent' && x.attempts > 1).length,
      redirectDead: of(redirecting).filter((x) => x.status === 'dead').length,
      goneDead: of(gone).filter((x) => x.status === 'dead').length,
      downThenSent: of(down).filter((x) => x.status === 'sent').length,
    });

    for (const row of of(redirecting)) {
      expect(row.status).toBe('dead');
      expect(row.attempts).toBe(8);
      expect(row.last_error).toMatch(/307|redirect/i);
    }
    for (const row of of(gone)) {
      expect(row.status).toBe('dead');
      expect(row.attempts).toBe(1);
    }
    expect(disabled?.active).toBe(false);
    expect(disabled?.disabled_reason).toMatch(/410/);
    for (const path of [slow, failing, down]) {
      expect(of(path).length).toBe(owedTo(path).length);
      expect(of(path).every((x) => x.status === 'sent')).toBe(true);
    }
    expect(of(slow).some((x) => x.attempts > 1)).toBe(true);
    expect(of(failing).some((x) => x.attempts > 1)).toBe(true);
    expectNothingLostOrSplit(outcome, { allowDead: true });
  });
});
