import { beforeAll, describe, expect, it } from 'vitest';
import { useSqlClient } from '../support/db.js';

/** An admin editing with SQL cannot store what the seed file would refuse (invariant 6). */
describe('database constraints', () => {
  const sql = useSqlClient();
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

  beforeAll(async () => {
    await sql.client.query(`INSERT INTO places (id, name) VALUES ('101210101', '杭州')`);
  });

  const refuses = async (statement: string, constraint: string) => {
    await expect(sql.client.query(statement)).rejects.toMatchObject({ constraint });
  };

  /** The ledger's tests: the id of the subscriber the first test added, and new events. */
  const dutySubscriber = async (): Promise<string> =>
    (
      await sql.client.query<{ id: string }>(
        `SELECT id FROM subscribers WHERE email = 'duty@example.com'`,
      )
    ).rows[0]!.id;
  const insertEvents = async (...warnings: string[]): Promise<string[]> =>
    (
      await sql.client.query<{ id: string }>(
        `INSERT INTO events (place_id, warning_id, type, record)
         SELECT '101210101', w, 'new', '{}' FROM unnest($1::text[]) WITH ORDINALITY AS t(w, n)
         ORDER BY n RETURNING id`,
        [warnings],
      )
    ).rows.map((r) => r.id);
  /**
   * The head of an insert of notification rows. Their messages are left out: no foreign key
   * ties a notification to its message (src/db/schema.ts), and these tests are about the ledger.
   */
  const INSERT_DELIVERIES = `INSERT INTO deliveries
    (message_id, subscriber_id, event_id, place_id, warning_id, event_type, channel)`;

  it('accepts a well-formed subscriber of each kind', async () => {
    await sql.client.query(`INSERT INTO subscribers (email) VALUES ('duty@example.com')`);
    await sql.client.query(
      `INSERT INTO subscribers (webhook_url, webhook_secret) VALUES ('https://hooks.example.com/q', '${secret}')`,
    );
    const { rows } = await sql.client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM subscribers',
    );
    expect(rows[0]?.n).toBe(2);
  });

  it('refuses a subscriber with both or neither address', async () => {
    await refuses(`INSERT INTO subscribers (name) VALUES ('nobody')`, 'subscribers_one_address');
    await refuses(
      `INSERT INTO subscribers (email, webhook_url, webhook_secret) VALUES ('a@b.cn', 'https://x.cn/', '${secret}')`,
      'subscribers_one_address',
    );
  });

  it('refuses bad addresses, secrets and languages', async () => {
    await refuses(
      `INSERT INTO subscribers (email) VALUES ('not-an-address')`,
      'subscribers_email_format',
    );
    await refuses(
      `INSERT INTO subscribers (webhook_url, webhook_secret) VALUES ('ftp://x.cn/', '${secret}')`,
      'subscribers_webhook_format',
    );
    await refuses(
      `INSERT INTO subscribers (webhook_url, webhook_secret) VALUES ('https://user:pw@x.cn/', '${secret}')`,
      'subscribers_webhook_format',
    );
    await refuses(
      `INSERT INTO subscribers (webhook_url, webhook_secret) VALUES ('https://x.cn/', 'plain')`,
      'subscribers_webhook_secret',
    );
    await refuses(
      `INSERT INTO subscribers (webhook_url) VALUES ('https://y.cn/')`,
      'subscribers_webhook_secret',
    );
    await refuses(
      `INSERT INTO subscribers (email, lang) VALUES ('c@d.cn', 'fr')`,
      'subscribers_lang',
    );
  });

  it('refuses unknown levels and event kinds in subscriptions', async () => {
    const { rows } = await sql.client.query<{ id: string }>(
      `SELECT id FROM subscribers WHERE email = 'duty@example.com'`,
    );
    const id = rows[0]!.id;
    await refuses(
      `INSERT INTO subscriptions (subscriber_id, place_id, min_level) VALUES ('${id}', '101210101', '紫色')`,
      'subscriptions_min_level',
    );
    await refuses(
      `INSERT INTO subscriptions (subscriber_id, place_id, events) VALUES ('${id}', '101210101', ARRAY['new','ended'])`,
      'subscriptions_events',
    );
    await refuses(
      `INSERT INTO subscriptions (subscriber_id, place_id, types) VALUES ('${id}', '101210101', ARRAY[]::text[])`,
      'subscriptions_types',
    );
    await expect(
      sql.client.query(
        `INSERT INTO subscriptions (subscriber_id, place_id) VALUES ('${id}', 'no-such-place')`,
      ),
    ).rejects.toMatchObject({ code: '23503' });
    await sql.client.query(
      `INSERT INTO subscriptions (subscriber_id, place_id, min_level, events) VALUES ('${id}', '101210101', '黄色', ARRAY['new','cancel'])`,
    );
  });

  it('keeps one delivery per subscriber, warning and event type', async () => {
    const subscriber = await dutySubscriber();
    const [event] = await insertEvents('w1');
    const insert = `${INSERT_DELIVERIES} VALUES (gen_random_uuid(), '${subscriber}', ${event}, '101210101', 'w1', 'new', 'email')`;
    await sql.client.query(insert);
    await refuses(insert, 'deliveries_once');
  });

  it('refuses a delivery whose event does not exist, among rows whose events do', async () => {
    const subscriber = await dutySubscriber();
    const [event] = await insertEvents('w9');
    const missing = Number(event) + 1000;
    const insert = `${INSERT_DELIVERIES} VALUES (gen_random_uuid(), '${subscriber}', ${event}, '101210101', 'w9', 'new', 'email'),
             (gen_random_uuid(), '${subscriber}', ${missing}, '101210101', 'w10', 'new', 'email')`;
    await expect(sql.client.query(insert)).rejects.toMatchObject({
      constraint: 'deliveries_event_exists',
      code: '23503',
      message: `delivery refers to event ${missing}, which does not exist`,
    });
    const kept = await sql.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deliveries WHERE warning_id IN ('w9', 'w10')`,
    );
    expect(kept.rows[0]!.n).toBe(0);
  });

  it('refuses a delivery whose subscriber does not exist, among rows whose subscribers do', async () => {
    const subscriber = await dutySubscriber();
    const [event] = await insertEvents('w11');
    const missing = '00000000-0000-4000-8000-000000000001';
    const insert = `${INSERT_DELIVERIES} VALUES (gen_random_uuid(), '${subscriber}', ${event}, '101210101', 'w11', 'new', 'email'),
             (gen_random_uuid(), '${missing}', ${event}, '101210101', 'w11', 'new', 'email')`;
    await expect(sql.client.query(insert)).rejects.toMatchObject({
      constraint: 'deliveries_subscriber_exists',
      code: '23503',
      message: `delivery refers to subscriber ${missing}, which does not exist`,
    });
    const kept = await sql.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deliveries WHERE warning_id = 'w11'`,
    );
    expect(kept.rows[0]!.n).toBe(0);
  });

  it('takes the deliveries along when their event or subscriber is deleted, and its messages', async () => {
    const subscriber = await sql.client.query<{ id: string }>(
      `INSERT INTO subscribers (email) VALUES ('leaving@example.com') RETURNING id`,
    );
    const warnings = ['w2', 'w3', 'w4'];
    const [gone, alsoGone] = await insertEvents(...warnings);
    await sql.client.query(
      `${INSERT_DELIVERIES}
       SELECT gen_random_uuid(), $1, e.id, e.place_id, e.warning_id, 'new', 'email'
       FROM events e WHERE e.warning_id = ANY($2::text[])`,
      [subscriber.rows[0]!.id, warnings],
    );
    const ledger = async () =>
      (
        await sql.client.query<{ warning_id: string }>(
          `SELECT warning_id FROM deliveries WHERE subscriber_id = $1 ORDER BY warning_id`,
          [subscriber.rows[0]!.id],
        )
      ).rows.map((r) => r.warning_id);

    // One statement deleting two events: the trigger runs once for both (migration 0005).
    await sql.client.query(`DELETE FROM events WHERE id = ANY($1::bigint[])`, [[gone, alsoGone]]);
    expect(await ledger()).toEqual(['w4']);

    // Its messages go too (migration 0015): a sent one and one still pending.
    await sql.client.query(
      `INSERT INTO messages (subscriber_id, channel, status) VALUES ($1, 'email', 'sent'), ($1, 'email', 'pending')`,
      [subscriber.rows[0]!.id],
    );
    const messagesLeft = async () =>
      (
        await sql.client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM messages WHERE subscriber_id = $1`,
          [subscriber.rows[0]!.id],
        )
      ).rows[0]!.n;
    expect(await messagesLeft()).toBe(2);
    await sql.client.query(`DELETE FROM subscribers WHERE id = $1`, [subscriber.rows[0]!.id]);
    expect(await ledger()).toEqual([]);
    expect(await messagesLeft()).toBe(0);
  });
});
