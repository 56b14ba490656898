import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { knownOf, type DeliverPayload } from '../../src/ledger/index.js';
import { runCheck } from '../../src/pipeline/check.js';
import { deliverKnown, runDeliver } from '../../src/pipeline/deliver.js';
import { runPoll } from '../../src/pipeline/poll.js';
import { CHANGES_FRESH_MS } from '../../src/pipeline/subscriber-changes.js';
import type { FirstAttemptBatch, PipelineContext } from '../../src/runtime/context.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, TEST_SECRET, type PipelineHarness } from '../support/pipeline.js';

const PLACE = '101280101';

/**
 * A message carries its subscriber as they were read: by its check, for a first attempt the
 * checking process sends itself, or by the take. Until it gets a send slot, its subscriber may
 * be paused, unsubscribed, deleted or given another address (migration 0028 records each such
 * change). What goes out must be what holds when the send starts: INTERFACE §9, an unsubscribed
 * subscriber receives nothing more.
 */
describe('a subscriber changed while their message waited', () => {
  let h: PipelineHarness;
  let rt: Runtime;
  let seq = 0;
  const subscribers: string[] = [];

  beforeAll(async () => {
    h = await startPipelineHarness();
    rt = h.runtime();
    await h.addPlace(PLACE, '广州');
    for (let i = 0; i < 4; i += 1)
      subscribers.push(await h.addWebhookSubscriber(`/s/${i}`, [PLACE]));
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(async () => {
    h.hooks.reset();
    await h.database.db.execute(
      sql`UPDATE subscribers SET active = true, disabled_reason = NULL, unsubscribed_at = NULL`,
    );
  });

  /**
   * A process whose clock runs `offset` ms ahead of the wall clock, and which keeps the batches
   * its checks hand it rather than sending them.
   */
  function sendingProcess(): {
    ctx: PipelineContext;
    handed: FirstAttemptBatch[];
    advance: (ms: number) => void;
  } {
    const handed: FirstAttemptBatch[] = [];
    let offset = 0;
    const ctx: PipelineContext = {
      ...rt.ctx,
      now: () => new Date(Date.now() + offset),
      firstAttempts: { channels: ['webhook'], send: (batches) => handed.push(...batches) },
    };
    return { ctx, handed, advance: (ms) => (offset += ms) };
  }

  /** A new warning at the place, checked by `ctx`'s process. */
  async function check(ctx: PipelineContext): Promise<void> {
    seq += 1;
    h.sim.setWarnings(PLACE, [
      v7Warning({ locationId: PLACE, seq, typeCode: '1003', level: '橙色' }),
    ]);
    const poll = await runPoll(ctx, {});
    if (!poll.ok) throw new Error('poll failed');
    await runCheck(ctx, { cycleId: poll.cycleId, placeId: PLACE });
  }

  /** Sends what the checks handed over, as the process would once each batch got its slots. */
  async function sendHanded(ctx: PipelineContext, handed: FirstAttemptBatch[]) {
    const results = [];
    for (const batch of handed.splice(0)) {
      results.push(await deliverKnown(ctx, batch.jobId, knownOf(batch) ?? []));
    }
    return results;
  }

  const messageOf = async (subscriber: string) => {
    const rows = await queryRows<{ id: string; status: string; last_error: string | null }>(
      h.database.db,
      sql`SELECT id, status, last_error FROM messages WHERE subscriber_id = ${subscriber}
          ORDER BY created_at DESC, id LIMIT 1`,
    );
    return rows[0]!;
  };

  /** Every message of the subscriber: a check may write them more than one, at one instant. */
  const messagesOf = (subscriber: string) =>
    queryRows<{ id: string; status: string; last_error: string | null }>(
      h.database.db,
      sql`SELECT id, status, last_error FROM messages WHERE subscriber_id = ${subscriber}
          ORDER BY id`,
    );

  /** Runs every deliver job waiting (the jobs of messages handed back). */
  async function runJobs(ctx: PipelineContext): Promise<void> {
    const jobs = await rt.ctx.queues.deliverWebhook.getJobs(['waiting', 'prioritized', 'delayed']);
    for (const job of jobs) {
      await runDeliver(ctx, job.data as DeliverPayload, job.id);
      await job.remove();
    }
  }

  it('sends nothing to one paused or unsubscribed meanwhile, and to the new address of one moved', async () => {
    const p = sendingProcess();
    await check(p.ctx);
    expect(p.handed.flatMap((b) => b.messageIds)).toHaveLength(4);
    const [paused, unsubscribed, moved, unchanged] = subscribers as [
      string,
      string,
      string,
      string,
    ];
    await h.database.db.execute(sql`UPDATE subscribers SET active = false WHERE id = ${paused}`);
    await h.database.db.execute(
      sql`UPDATE subscribers SET unsubscribed_at = now() WHERE id = ${unsubscribed}`,
    );
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${h.hooks.url('/moved')} WHERE id = ${moved}`,
    );
    const movedMessage = await messageOf(moved);

    const results = await sendHanded(p.ctx, p.handed);
    // Only the unchanged subscriber heard from the batch; the others' messages were handed back.
    expect(h.hooks.requests.map((r) => r.path)).toEqual(['/s/3']);
    expect(results.reduce((n, r) => n + r.released, 0)).toBe(3);
    expect((await messageOf(unchanged)).status).toBe('sent');

    // Their jobs take them again and read each subscriber as they are now.
    await runJobs(p.ctx);
    expect(await messageOf(paused)).toMatchObject({
      status: 'dead',
      last_error: 'subscriber is paused (active = false)',
    });
    expect(await messageOf(unsubscribed)).toMatchObject({
      status: 'dead',
      last_error: 'subscriber unsubscribed',
    });
    expect(h.hooks.requests.map((r) => r.path)).toEqual(['/s/3', '/moved']);
    expect(h.hooks.requests[1]!.headers['webhook-id']).toBe(movedMessage.id);
    expect((await messageOf(moved)).status).toBe('sent');
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${h.hooks.url('/s/2')} WHERE id = ${moved}`,
    );
  });

  it('sends as they were read the messages read after the process learnt of the change', async () => {
    const p = sendingProcess();
    const [renamed] = subscribers as [string];
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${h.hooks.url('/renamed')} WHERE id = ${renamed}`,
    );
    // The first send after it reads the change; what that check read may be handed back.
    await check(p.ctx);
    await sendHanded(p.ctx, p.handed);
    h.hooks.reset();
    // The next check reads the subscribers after the process knew of it: nothing goes back.
    p.advance(CHANGES_FRESH_MS + 1);
    await check(p.ctx);
    const results = await sendHanded(p.ctx, p.handed);
    expect(results.reduce((n, r) => n + r.released, 0)).toBe(0);
    // Each hears of the new warning and of the end of the last one.
    expect(new Set(h.hooks.requests.map((r) => r.path))).toEqual(
      new Set(['/renamed', '/s/1', '/s/2', '/s/3']),
    );
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_url = ${h.hooks.url('/s/0')} WHERE id = ${renamed}`,
    );
  });

  it('records the changes that decide whether or where one receives, and no other', async () => {
    const [a, b] = subscribers as [string, string];
    const changesOf = async (id: string) =>
      (
        await queryRows<{ n: number }>(
          h.database.db,
          sql`SELECT count(*)::int AS n FROM subscriber_changes WHERE subscriber_id = ${id}`,
        )
      )[0]!.n;
    const before = await changesOf(a);
    await h.database.db.execute(
      sql`UPDATE subscribers SET lang = 'en', name = 'renamed', quiet_from = '22:00',
            quiet_to = '07:00', updated_at = now() WHERE id = ${a}`,
    );
    expect(await changesOf(a)).toBe(before);
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_secret = ${'whsec_' + Buffer.alloc(32, 7).toString('base64')}
          WHERE id = ${a}`,
    );
    expect(await changesOf(a)).toBe(before + 1);
    await h.database.db.execute(
      sql`UPDATE subscribers SET webhook_secret = ${TEST_SECRET} WHERE id = ${a}`,
    );
    expect(await changesOf(a)).toBe(before + 2);
    // One row per subscriber a statement changes.
    const beforeB = await changesOf(b);
    await h.database.db.execute(
      sql`UPDATE subscribers SET active = false WHERE id IN (${a}, ${b})`,
    );
    expect(await changesOf(a)).toBe(before + 3);
    expect(await changesOf(b)).toBe(beforeB + 1);
    const gone = await h.addWebhookSubscriber('/gone', [PLACE]);
    await h.database.db.execute(sql`DELETE FROM subscribers WHERE id = ${gone}`);
    expect(await changesOf(gone)).toBe(1);
  });

  it('ends, unsent, the message of one deleted while their check wrote it', async () => {
    const deleted = await h.addWebhookSubscriber('/deleted', [PLACE]);
    const p = sendingProcess();
    await check(p.ctx);
    // Two after the tests before: a 'new' of the warning still in force and of this check's, at
    // one instant.
    const written = await messagesOf(deleted);
    expect(written.length).toBeGreaterThan(0);
    // The deletion commits while the check's rows are not yet visible to it: its statement
    // trigger finds no message of theirs to delete. Standing in for that race: the trigger off.
    await h.database.db.execute(
      sql`ALTER TABLE subscribers DISABLE TRIGGER subscribers_delete_ledger`,
    );
    try {
      await h.database.db.execute(sql`DELETE FROM subscribers WHERE id = ${deleted}`);
    } finally {
      await h.database.db.execute(
        sql`ALTER TABLE subscribers ENABLE TRIGGER subscribers_delete_ledger`,
      );
    }
    await sendHanded(p.ctx, p.handed);
    await runJobs(p.ctx);
    // Taken once more and ended, not left pending for the sweeper to hand back again and again.
    expect(await messagesOf(deleted)).toEqual(
      written.map((m) => ({ id: m.id, status: 'dead', last_error: 'subscriber deleted' })),
    );
    expect(h.hooks.requests.map((r) => r.path)).not.toContain('/deleted');
  });
});
