import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { MARK_LINGER_MS, SentRecorder } from '../../src/ledger/sent-mark.js';
import type { StatementRunner } from '../../src/db/prepared.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

describe('SentRecorder', () => {
  let database: TestDatabase;
  let ids: string[];

  beforeAll(async () => {
    database = await createTestDatabase();
    const [sub] = await queryRows<{ id: string }>(
      database.db,
      sql`INSERT INTO subscribers (name, webhook_url, webhook_secret)
          VALUES ('desk', 'http://127.0.0.1:9/hook', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')
          RETURNING id`,
    );
    const [event] = await queryRows<{ id: number }>(
      database.db,
      sql`INSERT INTO events (place_id, warning_id, type, record)
          VALUES ('101010100', 'w1', 'new', '{}'::jsonb) RETURNING id`,
    );
    // Messages of one notification each, under its id, as a check writes them.
    const rows = await queryRows<{ id: string }>(
      database.db,
      sql`WITH n AS (
            INSERT INTO deliveries (id, message_id, subscriber_id, event_id, place_id, warning_id,
                                    event_type, channel)
            SELECT v.id, v.id, ${sub!.id}, ${event!.id}, '101010100', 'w' || v.n, 'new', 'webhook'
            FROM (SELECT gen_random_uuid() AS id, n FROM generate_series(1, 300) AS n) v
            RETURNING id, subscriber_id, channel)
          INSERT INTO messages (id, subscriber_id, channel)
          SELECT id, subscriber_id, channel FROM n
          RETURNING id`,
    );
    ids = rows.map((r) => r.id);
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** The database, counting the statements that reach it. */
  function counting() {
    const counter = { statements: 0 };
    const db: StatementRunner = (statement, values) => {
      counter.statements += 1;
      return statement.run(database.db, values);
    };
    return { counter, recorder: new SentRecorder(db) };
  }

  it('records marks made together in one statement, each with its own time', async () => {
    const { counter, recorder } = counting();
    const batch = ids.slice(0, 200);
    const at = (i: number) => new Date(Date.UTC(2026, 6, 1, 8, 0, i % 60, i));
    await Promise.all(batch.map((id, i) => recorder.markSent(id, at(i))));
    expect(counter.statements).toBe(1);

    const rows = await queryRows<{ id: string; status: string; sent_at: Date }>(
      database.db,
      sql`SELECT id, status, sent_at FROM messages WHERE id = ANY(${sql.param(batch)}::uuid[])`,
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    batch.forEach((id, i) => {
      expect(byId.get(id)?.status).toBe('sent');
      expect(new Date(byId.get(id)!.sent_at).getTime()).toBe(at(i).getTime());
    });
  });

  it('writes marks that arrive during a write in the next one, and each waits for its own', async () => {
    const { counter, recorder } = counting();
    const first = recorder.markSent(ids[200]!, new Date());
    // Arrives after the first statement left: it must not be dropped or resolved early.
    while (counter.statements === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    const rest = ids.slice(201, 260).map((id) => recorder.markSent(id, new Date()));
    await first;
    await Promise.all(rest);
    expect(counter.statements).toBe(2);
    const [{ n }] = (await queryRows<{ n: number }>(
      database.db,
      sql`SELECT count(*)::int AS n FROM messages
          WHERE id = ANY(${sql.param(ids.slice(200, 260))}::uuid[]) AND status = 'sent'`,
    )) as [{ n: number }];
    expect(n).toBe(60);
  });

  it('waits a moment for more marks before writing, so sends that end close together share it', async () => {
    const counter = { statements: 0 };
    // The test ends the linger itself, so a slow machine's late timers cannot split the marks.
    const lingers: { ms: number; end: () => void }[] = [];
    const recorder = new SentRecorder(
      (statement, values) => {
        counter.statements += 1;
        return statement.run(database.db, values);
      },
      { wait: (ms) => new Promise<void>((end) => lingers.push({ ms, end })) },
    );
    // Sends ending a few milliseconds apart, as a storm's do in each process.
    const marks: Promise<void>[] = [];
    for (const id of ids.slice(290, 295)) {
      marks.push(recorder.markSent(id, new Date()));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(lingers.map((l) => l.ms)).toEqual([MARK_LINGER_MS]);
    expect(counter.statements).toBe(0);
    lingers[0]!.end();
    await Promise.all(marks);
    expect(counter.statements).toBe(1);
  });

  it('writes a mark again when its session is terminated mid-write, so no send is repeated', async () => {
    let writes = 0;
    const recorder = new SentRecorder(
      (statement, values) => {
        writes += 1;
        if (writes > 1) return statement.run(database.db, values);
        // The first write's session is ended by the server while the mark is under way.
        return database.db.transaction(async (tx) => {
          await tx.execute(sql`SELECT pg_terminate_backend(pg_backend_pid())`);
          return statement.run(tx, values);
        });
      },
      { retryDelaysMs: [10] },
    );
    const batch = ids.slice(271, 290);
    await Promise.all(batch.map((id) => recorder.markSent(id, new Date())));
    expect(writes).toBe(2);
    const [{ n }] = (await queryRows<{ n: number }>(
      database.db,
      sql`SELECT count(*)::int AS n FROM messages
          WHERE id = ANY(${sql.param(batch)}::uuid[]) AND status = 'sent'`,
    )) as [{ n: number }];
    expect(n).toBe(batch.length);
  });

  it('rejects every mark of a write that kept failing, and recovers for the next', async () => {
    let fail = true;
    let writes = 0;
    const recorder = new SentRecorder(
      (statement, values) => {
        writes += 1;
        return fail
          ? Promise.reject(new Error('connection terminated'))
          : statement.run(database.db, values);
      },
      { retryDelaysMs: [1, 1] },
    );
    const marks = ids.slice(260, 270).map((id) => recorder.markSent(id, new Date()));
    const settled = await Promise.allSettled(marks);
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
    // The first write and one more per pause.
    expect(writes).toBe(3);
    fail = false;
    await recorder.markSent(ids[270]!, new Date());
    const rows = await queryRows<{ id: string; status: string }>(
      database.db,
      sql`SELECT id, status FROM messages WHERE id = ANY(${sql.param(ids.slice(260, 271))}::uuid[])`,
    );
    expect(rows.filter((r) => r.status === 'sent').map((r) => r.id)).toEqual([ids[270]]);
  });
});
