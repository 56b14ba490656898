import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * Messages over real HTTP and SMTP (docs/messages.md, docs/design.md invariant 8): what one subscriber
 * receives at once. A cycle that finds three warnings at two places sends an email subscriber
 * one email, a webhook subscriber who groups one `warning.batch`, and one who does not three
 * POSTs; every notification is in exactly one message, and a redelivered message keeps its id.
 */

const HANGZHOU = '101210101';
const NINGBO = '101210401';
const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000);

interface BatchBody {
  type: string;
  data: { notifications?: { type: string; warning: { id: string; level: string } }[] };
}

describe('messages: grouping per channel', () => {
  let h: PipelineHarness;
  const rain = v7Warning({
    locationId: HANGZHOU,
    seq: 1,
    typeCode: '1003',
    level: '黄色',
    pubTime: hoursAgo(3),
  });
  const typhoon = v7Warning({
    locationId: HANGZHOU,
    seq: 2,
    typeCode: '1001',
    level: '红色',
    pubTime: hoursAgo(2),
  });
  const wind = v7Warning({
    locationId: NINGBO,
    seq: 1,
    typeCode: '1006',
    level: '蓝色',
    pubTime: hoursAgo(1),
  });

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.addEmailSubscriber('desk@example.com', [HANGZHOU, NINGBO]);
    await h.addWebhookSubscriber('/each', [HANGZHOU, NINGBO]);
    const grouped = await h.addWebhookSubscriber('/grouped', [HANGZHOU, NINGBO]);
    await h.database.db.execute(
      sql`UPDATE subscribers SET group_mode = 'cycle' WHERE id = ${grouped}`,
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sends each subscriber what one cycle found as its grouping says', async () => {
    h.sim.setWarnings(HANGZHOU, [rain, typhoon]);
    h.sim.setWarnings(NINGBO, [wind]);
    const { code, summary } = await h.pollOnce();
    expect(code).toBe(0);
    expect(summary.events).toEqual({ new: 3, update: 0, cancel: 0, expired: 0, resumed: 0 });
    // Nine notifications in five messages: one email, one batch, three single webhooks.
    expect(summary.deliveries).toEqual({ sent: 9, failed: 0, pending: 0, held: 0 });
    expect(summary).toMatchObject({ messages: { sent: 5, failed: 0, pending: 0, held: 0 } });

    expect(h.smtp.messages).toHaveLength(1);
    const subject = h.smtp.messages[0]!.subject ?? '';
    expect(subject).toContain('3');
    expect(subject).toContain('红色');

    const each = h.hooks.requestsTo('/each');
    expect(each).toHaveLength(3);
    expect(each.map((r) => (r.json as BatchBody).type).sort()).toEqual([
      'warning.new',
      'warning.new',
      'warning.new',
    ]);
    const grouped = h.hooks.requestsTo('/grouped');
    expect(grouped).toHaveLength(1);
    expect(grouped[0]!.verified).toBe(true);
    const batch = grouped[0]!.json as BatchBody;
    expect(batch.type).toBe('warning.batch');
    expect(batch.data.notifications?.map((n) => n.warning.id).sort()).toEqual(
      [rain.id, typhoon.id, wind.id].sort(),
    );

    // Every notification is carried by exactly one message of its own subscriber, and the
    // webhook-id of each POST is its message's id.
    const rows = await queryRows<{ subscriber: string; message_id: string; n: number }>(
      h.database.db,
      sql`SELECT coalesce(s.email, s.name) AS subscriber, d.message_id, count(*)::int AS n
          FROM deliveries d JOIN messages m ON m.id = d.message_id
            AND m.subscriber_id = d.subscriber_id
          JOIN subscribers s ON s.id = d.subscriber_id
          GROUP BY 1, 2 ORDER BY 1, 3`,
    );
    expect(rows.map((r) => [r.subscriber, r.n])).toEqual([
      ['/each', 1],
      ['/each', 1],
      ['/each', 1],
      ['/grouped', 3],
      ['desk@example.com', 3],
    ]);
    const ids = new Set(rows.map((r) => r.message_id));
    for (const request of [...each, ...grouped]) {
      expect(ids.has(String(request.headers['webhook-id']))).toBe(true);
    }
    expect(ids.has(h.smtp.messages[0]!.messageId!.replace(/@qwn$/, ''))).toBe(true);
  });

  it('redelivers a grouped message under the same id with the same notifications', async () => {
    const first = h.hooks.requestsTo('/grouped')[0]!;
    const messageId = String(first.headers['webhook-id']);
    const result = await h.qwn(['redeliver', messageId]);
    expect(result.code).toBe(0);
    const again = h.hooks.requestsTo('/grouped');
    expect(again).toHaveLength(2);
    expect(again[1]!.headers['webhook-id']).toBe(messageId);
    expect((again[1]!.json as BatchBody).data.notifications?.map((n) => n.warning.id)).toEqual(
      (first.json as BatchBody).data.notifications?.map((n) => n.warning.id),
    );
  });

  it('tells nothing twice when the same warnings are found again', async () => {
    const { summary } = await h.pollOnce();
    expect(summary.events).toEqual({ new: 0, update: 0, cancel: 0, expired: 0, resumed: 0 });
    expect(summary.deliveries).toEqual({ sent: 0, failed: 0, pending: 0, held: 0 });
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.hooks.requestsTo('/each')).toHaveLength(3);
  });
});

describe('messages: one cycle message however the checks interleave', () => {
  let h: PipelineHarness;
  // Eight places checked four at a time, by as many concurrent transactions: each must find the
  // message another check opened for the subscriber rather than open its own.
  const places = Array.from({ length: 8 }, (_, i) => `1012101${String(i + 10).padStart(2, '0')}`);

  beforeAll(async () => {
    h = await startPipelineHarness({ env: { CHECK_CONCURRENCY: '4' } });
    for (const id of places) await h.addPlace(id, `place ${id}`);
    await h.addEmailSubscriber('national@example.com', places);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sends the email subscriber one message carrying every notification', async () => {
    places.forEach((id, i) =>
      h.sim.setWarnings(id, [
        v7Warning({ locationId: id, seq: 1, typeCode: '1003', level: i % 2 ? '橙色' : '黄色' }),
      ]),
    );
    const { code, summary } = await h.pollOnce();
    expect(code).toBe(0);
    expect(summary.deliveries).toEqual({ sent: 8, failed: 0, pending: 0, held: 0 });
    expect(summary).toMatchObject({ messages: { sent: 1 } });
    expect(h.smtp.messages).toHaveLength(1);
    expect(h.smtp.messages[0]!.subject).toContain('橙色');
  });
});

describe('messages: the row versions each costs (issue 21)', () => {
  let h: PipelineHarness;
  const place = '101210101';

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(place, '杭州');
    await h.addEmailSubscriber('cycle@example.com', [place]);
    await h.addWebhookSubscriber('/single', [place]);
    // Every version written to messages, by any process, in order.
    await h.database.db.execute(sql`
      CREATE TABLE message_writes (n bigserial, id uuid, op text);
      CREATE FUNCTION record_message_write() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO message_writes (id, op) VALUES (NEW.id, TG_OP); RETURN NULL; END $$;
      CREATE TRIGGER record_message_write AFTER INSERT OR UPDATE ON messages
        FOR EACH ROW EXECUTE FUNCTION record_message_write();`);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('writes a webhook message at its check, a cycle email at its release, and each sent mark once', async () => {
    h.sim.setWarnings(place, [
      v7Warning({ locationId: place, seq: 1, typeCode: '1003', level: '黄色' }),
      v7Warning({ locationId: place, seq: 2, typeCode: '1006', level: '蓝色' }),
    ]);
    const { code, summary } = await h.pollOnce();
    expect(code).toBe(0);
    expect(summary.deliveries).toEqual({ sent: 4, failed: 0, pending: 0, held: 0 });
    const writes = await queryRows<{ id: string; channel: string; ops: string[] }>(
      h.database.db,
      sql`SELECT w.id, m.channel, array_agg(w.op ORDER BY w.n) AS ops
          FROM message_writes w JOIN messages m ON m.id = w.id
          GROUP BY w.id, m.channel ORDER BY m.channel, w.id`,
    );
    expect(writes.map((w) => [w.channel, w.ops])).toEqual([
      // No row while the cycle collects; written due by the release, and sent by its batch
      // job, which owns it and writes no claim.
      ['email', ['INSERT', 'UPDATE']],
      // Written with its notification, owned by its batch job: no claim either.
      ['webhook', ['INSERT', 'UPDATE']],
      ['webhook', ['INSERT', 'UPDATE']],
    ]);
    expect(h.hooks.requestsTo('/single')).toHaveLength(2);
    expect(h.smtp.messages).toHaveLength(1);
  });
});
