import { describe, expect, it } from 'vitest';
import { applyMigrations, useSqlClient } from '../support/db.js';

/**
 * Migration 0027 makes the outbox explicit: every message but a collecting cycle's has its row.
 * Messages written before it without one (a direct message in its first-attempt batch, a cycle's
 * released into one) get it as they stood, owned by the same job, so the job that still carries
 * them sends them once and nothing else claims them; a cycle still collecting keeps its message
 * for its release to write.
 */
describe('migration 0027 (every message has its row)', () => {
  const db = useSqlClient({ migratedTo: 27 });

  it('writes the rows of messages that had none, owned by the jobs that carry them', async () => {
    const client = db.client;
    const {
      rows: [subscriber],
    } = await client.query<{ id: string }>(
      `INSERT INTO subscribers (email) VALUES ('outbox@example.com') RETURNING id`,
    );
    const { rows: cycles } = await client.query<{ id: string }>(
      `INSERT INTO poll_cycles (status, released_at) VALUES ('done', now() - interval '1 minute'),
         ('running', NULL) RETURNING id`,
    );
    const [released, collecting] = cycles.map((c) => c.id);
    const {
      rows: [event],
    } = await client.query<{ id: number }>(
      `INSERT INTO events (place_id, warning_id, type, record)
       VALUES ('101010100', 'w', 'new', '{}') RETURNING id`,
    );
    const ids = {
      direct: '00000000-0000-4000-8000-000000000001',
      sent: '00000000-0000-4000-8000-000000000002',
      releasedMessage: '00000000-0000-8000-8000-000000000003',
      collectingMessage: '00000000-0000-8000-8000-000000000004',
    };
    const insert = (id: string, messageId: string, cycleId: string | null, type: string) =>
      client.query(
        `INSERT INTO deliveries (id, message_id, subscriber_id, event_id, cycle_id, place_id,
           warning_id, event_type, channel)
         VALUES (coalesce($1::uuid, gen_random_uuid()), $2, $3, $4, $5, '101010100', $6, 'new',
           'email')`,
        [id, messageId, subscriber!.id, event!.id, cycleId, type],
      );
    await insert(ids.direct, ids.direct, released!, 'w-direct');
    await insert(ids.sent, ids.sent, released!, 'w-sent');
    await client.query(
      `INSERT INTO messages (id, subscriber_id, channel, status, attempts, sent_at)
       VALUES ($1, $2, 'email', 'sent', 1, now())`,
      [ids.sent, subscriber!.id],
    );
    await client.query(
      `INSERT INTO deliveries (message_id, subscriber_id, event_id, cycle_id, place_id,
         warning_id, event_type, channel)
       SELECT m, $1, $2, c, '101010100', w, 'new', 'email'
       FROM (VALUES ($3::uuid, $4::uuid, 'w-released-1'), ($3::uuid, $4::uuid, 'w-released-2'),
                    ($5::uuid, $6::uuid, 'w-collecting')) AS v(m, c, w)`,
      [subscriber!.id, event!.id, ids.releasedMessage, released, ids.collectingMessage, collecting],
    );
    await client.query(
      `INSERT INTO first_attempt_batches (job_id, channel, message_ids) VALUES
         ('job-direct', 'email', ARRAY[$1::uuid, $2::uuid]), ('rel-job', 'email', ARRAY[$3::uuid])`,
      [ids.direct, ids.sent, ids.releasedMessage],
    );

    await applyMigrations(client, { from: 27, to: 28 });

    const { rows } = await client.query<{
      id: string;
      status: string;
      hold: string | null;
      cycle_id: string | null;
      attempts: number;
      first_job_id: string | null;
    }>(
      `SELECT id, status, hold, cycle_id, attempts, first_job_id FROM messages
       WHERE subscriber_id = $1 ORDER BY id`,
      [subscriber!.id],
    );
    expect(rows).toEqual([
      {
        id: ids.direct,
        status: 'pending',
        hold: null,
        cycle_id: null,
        attempts: 0,
        first_job_id: 'job-direct',
      },
      { id: ids.sent, status: 'sent', hold: null, cycle_id: null, attempts: 1, first_job_id: null },
      {
        id: ids.releasedMessage,
        status: 'pending',
        hold: 'cycle',
        cycle_id: released,
        attempts: 0,
        first_job_id: 'rel-job',
      },
    ]);
    const table = await client.query(`SELECT to_regclass('first_attempt_batches') AS t`);
    expect(table.rows[0]).toEqual({ t: null });
  });
});
