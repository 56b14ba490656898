import { describe, expect, it } from 'vitest';
import { applyMigrations, useSqlClient } from '../support/db.js';

/**
 * Migration 0007 moves the send state from the ledger to messages. A deployment upgraded in the
 * middle of a storm has rows sent, rows retrying and rows never tried: each must become a message
 * of its own under the same id (the webhook-id and Message-ID already used), with its state, so
 * that nothing is sent again and nothing owed is lost.
 */

describe('migration 0007 (messages)', () => {
  const db = useSqlClient({ migratedTo: 7 });

  it('makes each ledger row a message of its own under the same id, keeping its state', async () => {
    const client = db.client;
    const sub = await client.query<{ id: string }>(
      `INSERT INTO subscribers (email) VALUES ('desk@example.com') RETURNING id`,
    );
    const subscriberId = sub.rows[0]!.id;
    await client.query(`INSERT INTO places (id, name) VALUES ('101210101', '杭州')`);
    const event = await client.query<{ id: string }>(
      `INSERT INTO events (place_id, warning_id, type, record) VALUES
         ('101210101', 'w1', 'new', '{}'), ('101210101', 'w2', 'new', '{}'),
         ('101210101', 'w3', 'new', '{}')
       RETURNING id`,
    );
    const [e1, e2, e3] = event.rows.map((r) => r.id);
    const rows = await client.query<{ id: string }>(
      `INSERT INTO deliveries (subscriber_id, event_id, place_id, warning_id, event_type, channel,
         status, attempts, next_attempt_at, last_error, sent_at)
       VALUES
         ($1, $2, '101210101', 'w1', 'new', 'email', 'sent', 1, now(), NULL, now() - interval '1 hour'),
         ($1, $3, '101210101', 'w2', 'new', 'email', 'retrying', 3, now() + interval '5 minutes',
          '451 try later', NULL),
         ($1, $4, '101210101', 'w3', 'new', 'email', 'pending', 0, now(), NULL, NULL)
       RETURNING id`,
      [subscriberId, e1, e2, e3],
    );
    const [sent, retrying, pending] = rows.rows.map((r) => r.id);

    await applyMigrations(client, { from: 7, to: 8 });

    const messages = await client.query<{
      id: string;
      status: string;
      attempts: number;
      last_error: string | null;
      sent_at: Date | null;
      hold: string | null;
    }>(`SELECT id, status, attempts, last_error, sent_at, hold FROM messages ORDER BY attempts`);
    expect(messages.rows).toEqual([
      expect.objectContaining({ id: pending, status: 'pending', attempts: 0, hold: null }),
      expect.objectContaining({ id: sent, status: 'sent', attempts: 1, last_error: null }),
      expect.objectContaining({ id: retrying, status: 'retrying', last_error: '451 try later' }),
    ]);
    expect(messages.rows.find((m) => m.id === sent)?.sent_at).toBeInstanceOf(Date);
    const carried = await client.query<{ id: string; message_id: string }>(
      `SELECT id, message_id FROM deliveries`,
    );
    for (const row of carried.rows) expect(row.message_id).toBe(row.id);
    // The ledger keeps no send state of its own any more.
    const columns = await client.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'deliveries'`,
    );
    expect(columns.rows.map((c) => c.column_name)).not.toContain('status');
  });
});
