import { describe, expect, it } from 'vitest';
import { applyMigrations, useSqlClient } from '../support/db.js';

/**
 * Migration 0017 drops the index retention found uncarried messages by. An earlier release's
 * sweeps could leave finished messages whose notifications were already gone (their step ran
 * ahead of the messages' step): nothing would look for them again, so the migration removes
 * them, and only them.
 */

describe('migration 0017 (messages go with their notifications)', () => {
  const db = useSqlClient({ migratedTo: 17 });

  it('removes the finished messages no notification carries, and keeps every other', async () => {
    const client = db.client;
    const sub = await client.query<{ id: string }>(
      `INSERT INTO subscribers (email) VALUES ('desk@example.com') RETURNING id`,
    );
    const subscriberId = sub.rows[0]!.id;
    await client.query(`INSERT INTO places (id, name) VALUES ('101210101', '杭州')`);
    const event = await client.query<{ id: string }>(
      `INSERT INTO events (place_id, warning_id, type, record)
       VALUES ('101210101', 'w1', 'new', '{}') RETURNING id`,
    );
    const messages = await client.query<{ id: string; status: string }>(
      `INSERT INTO messages (subscriber_id, channel, status, attempts, sent_at)
       VALUES ($1, 'webhook', 'sent', 1, now()), ($1, 'email', 'sent', 1, now()),
              ($1, 'webhook', 'sent', 1, now()), ($1, 'webhook', 'dead', 5, NULL),
              ($1, 'webhook', 'retrying', 2, NULL)
       RETURNING id, status`,
      [subscriberId],
    );
    const [direct, grouped, , , retrying] = messages.rows.map((r) => r.id);
    // A direct notification is its own message; two grouped ones share theirs.
    await client.query(
      `INSERT INTO deliveries (id, message_id, subscriber_id, event_id, place_id, warning_id,
         event_type, channel)
       VALUES ($1, $1, $3, $4, '101210101', 'w1', 'new', 'webhook'),
              (gen_random_uuid(), $2, $3, $4, '101210101', 'w1', 'update', 'email'),
              (gen_random_uuid(), $2, $3, $4, '101210101', 'w1', 'cancel', 'email')`,
      [direct, grouped, subscriberId, event.rows[0]!.id],
    );

    await applyMigrations(client, { from: 17, to: 18 });

    const kept = await client.query<{ id: string }>('SELECT id FROM messages ORDER BY id');
    expect(kept.rows.map((r) => r.id)).toEqual([direct, grouped, retrying].sort());
    const index = await client.query(
      `SELECT 1 FROM pg_indexes WHERE indexname = 'messages_created_idx'`,
    );
    expect(index.rowCount).toBe(0);
  });
});
