import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import { RETENTION_LOCK } from '../../src/ledger/index.js';
import { pruneExpired } from '../../src/pipeline/retention.js';
import { useSqlClient, waitForLockWait } from '../support/db.js';

/**
 * RETENTION_DAYS on a real database: rows on both sides of the cut, and the rows that must
 * stay however old they are (a delivery still retrying, a warning still open).
 */

const NOW = new Date('2026-11-20T00:00:00Z');
const DAY = 86_400_000;
const ago = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();
const LIMITS = { days: 90, batch: 1000, maxBatches: 10 };

describe('retention', () => {
  const sqlClient = useSqlClient();
  let subscriber: string;
  let nextCycle = 0;

  beforeEach(async () => {
    await sqlClient.client.query(
      'TRUNCATE test_sends, subscriber_changes, deliveries, messages, events, poll_cycles, warnings, subscriptions, subscribers, places, alert_points',
    );
    await sqlClient.client.query(
      `INSERT INTO places (id, name, lat, lon) VALUES ('101020100', 'Shanghai', 31.2304, 121.4737)`,
    );
    const { rows } = await sqlClient.client.query<{ id: string }>(
      `INSERT INTO subscribers (name, email) VALUES ('Desk', 'desk@example.com') RETURNING id`,
    );
    subscriber = rows[0]!.id;
  });

  async function cycle(daysAgo: number, status = 'done'): Promise<string> {
    nextCycle += 1;
    const { rows } = await sqlClient.client.query<{ id: string }>(
      `INSERT INTO poll_cycles (job_key, status, started_at, finished_at)
       VALUES ($1, $2, $3, CASE WHEN $2 = 'running' THEN NULL ELSE $3::timestamptz END)
       RETURNING id`,
      [`job-${nextCycle}`, status, ago(daysAgo)],
    );
    return rows[0]!.id;
  }

  /** A `new` event for a warning and one delivery of it, both `daysAgo` old. */
  async function notified(
    warningId: string,
    daysAgo: number,
    status: 'pending' | 'sent' | 'retrying' | 'dead',
    cycleId: string | null = null,
  ): Promise<{ event: string; delivery: string }> {
    const { rows: events } = await sqlClient.client.query<{ id: string }>(
      `INSERT INTO events (cycle_id, place_id, warning_id, type, record, detected_at)
       VALUES ($1, '101020100', $2, 'new', '{}', $3) RETURNING id::text`,
      [cycleId, warningId, ago(daysAgo)],
    );
    const event = events[0]!.id;
    // A message of its own, under the notification's id, as a subscriber who does not group.
    const { rows: deliveries } = await sqlClient.client.query<{ id: string }>(
      `WITH m AS (
         INSERT INTO messages (subscriber_id, channel, status, attempts, sent_at, created_at,
                               next_attempt_at)
         VALUES ($1, 'email', $5, 1, CASE WHEN $5 = 'sent' THEN $6::timestamptz END, $6, $6)
         RETURNING id)
       INSERT INTO deliveries (id, message_id, subscriber_id, event_id, cycle_id, place_id,
                               warning_id, event_type, channel, created_at)
       SELECT m.id, m.id, $1, $2, $3, '101020100', $4, 'new', 'email', $6 FROM m
       RETURNING id`,
      [subscriber, event, cycleId, warningId, status, ago(daysAgo)],
    );
    return { event, delivery: deliveries[0]!.id };
  }

  async function ids(table: string, column = 'id'): Promise<string[]> {
    const { rows } = await sqlClient.client.query<{ id: string }>(
      `SELECT ${column}::text AS id FROM ${table} ORDER BY 1`,
    );
    return rows.map((r) => r.id);
  }

  it('removes exactly the old, finished rows', async () => {
    const oldCycle = await cycle(120);
    const runningCycle = await cycle(100, 'running');
    const newCycle = await cycle(10);
    const sent = await notified('W-old-sent', 100, 'sent', oldCycle);
    const dead = await notified('W-old-dead', 95, 'dead', oldCycle);
    const retrying = await notified('W-old-retrying', 100, 'retrying', oldCycle);
    const pending = await notified('W-old-pending', 91, 'pending');
    // A warning in force for over three months: its ledger row keeps it from being told twice.
    const open = await notified('W-open', 100, 'sent', oldCycle);
    await sqlClient.client.query(
      `INSERT INTO warnings (place_id, warning_id, state, title, level, status, record,
                             first_seen, last_seen)
       VALUES ('101020100', 'W-open', 'open', 'Drought', '黄色', 'active', '{}', $1, $2)`,
      [ago(100), ago(0)],
    );
    const recent = await notified('W-recent', 89, 'sent', newCycle);
    // v1: the alert is tracked at a point, the delivery names the subscriber's place.
    const atPoint = await notified('W-point', 100, 'sent', oldCycle);
    await sqlClient.client.query(
      `INSERT INTO warnings (place_id, warning_id, state, title, level, status, record,
                             first_seen, last_seen)
       VALUES ('31.23,121.47', 'W-point', 'open', 'Heat', '橙色', 'active', '{}', $1, $2)`,
      [ago(100), ago(0)],
    );

    const outcome = await pruneExpired(sqlClient.database.db, LIMITS, NOW);

    expect(outcome).toEqual({ deliveries: 2, messages: 2, events: 2, poll_cycles: 1 });
    const keptDeliveries = [retrying, pending, open, recent, atPoint].map((n) => n.delivery).sort();
    expect(await ids('deliveries')).toEqual(keptDeliveries);
    expect(keptDeliveries).not.toContain(sent.delivery);
    expect(keptDeliveries).not.toContain(dead.delivery);
    // Each kept notification keeps its message; the removed ones took theirs along.
    expect(await ids('messages')).toEqual(keptDeliveries);
    const keptEvents = [retrying, pending, open, recent, atPoint].map((n) => n.event);
    expect(await ids('events')).toEqual(keptEvents.sort((a, b) => Number(a) - Number(b)));
    expect(await ids('poll_cycles')).toEqual([runningCycle, newCycle].sort());
    expect(await ids('warnings', 'warning_id')).toEqual(['W-open', 'W-point']);
    // The kept events of the removed cycle stay, without it.
    const { rows } = await sqlClient.client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE cycle_id IS NULL',
    );
    expect(rows[0]!.n).toBe(4);

    // Nothing more to do: a second run removes nothing.
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({});
  });

  it('goes in bounded batches, oldest first, and picks up where it stopped', async () => {
    for (let i = 0; i < 5; i += 1) await notified(`W-${i}`, 100 + i, 'sent');
    const limits = { days: 90, batch: 2, maxBatches: 1 };
    expect(await pruneExpired(sqlClient.database.db, limits, NOW)).toEqual({
      deliveries: 2,
      messages: 2,
      events: 2,
    });
    const { rows } = await sqlClient.client.query<{ warning_id: string }>(
      'SELECT warning_id FROM deliveries ORDER BY warning_id',
    );
    expect(rows.map((r) => r.warning_id)).toEqual(['W-0', 'W-1', 'W-2']);
    expect(await pruneExpired(sqlClient.database.db, limits, NOW)).toEqual({
      deliveries: 2,
      messages: 2,
      events: 2,
    });
    expect(await pruneExpired(sqlClient.database.db, limits, NOW)).toEqual({
      deliveries: 1,
      messages: 1,
      events: 1,
    });
    expect(await ids('deliveries')).toEqual([]);
  });

  /** One sent email message carrying a notification of each warning, `daysAgo` old each. */
  async function grouped(notifications: { warningId: string; daysAgo: number }[]): Promise<string> {
    const { rows } = await sqlClient.client.query<{ id: string }>(
      `INSERT INTO messages (subscriber_id, channel, status, attempts, sent_at, created_at,
                             next_attempt_at)
       VALUES ($1, 'email', 'sent', 1, $2, $2, $2) RETURNING id`,
      [subscriber, ago(Math.min(...notifications.map((n) => n.daysAgo)))],
    );
    const message = rows[0]!.id;
    for (const { warningId, daysAgo } of notifications) {
      await sqlClient.client.query(
        `WITH e AS (
           INSERT INTO events (place_id, warning_id, type, record, detected_at)
           VALUES ('101020100', $2, 'new', '{}', $4) RETURNING id)
         INSERT INTO deliveries (message_id, subscriber_id, event_id, place_id, warning_id,
                                 event_type, channel, created_at)
         SELECT $1, $3, e.id, '101020100', $2, 'new', 'email', $4 FROM e`,
        [message, warningId, subscriber, ago(daysAgo)],
      );
    }
    return message;
  }

  it('takes a message along with the last notification it carried, never before', async () => {
    const message = await grouped([
      { warningId: 'W-a', daysAgo: 100 },
      { warningId: 'W-b', daysAgo: 95 },
    ]);
    const stillCarried = await grouped([
      { warningId: 'W-c', daysAgo: 100 },
      { warningId: 'W-d', daysAgo: 10 },
    ]);
    const oneAtATime = { days: 90, batch: 1, maxBatches: 1 };
    // Both messages' oldest notifications go first (one per statement); their messages stay.
    expect(await pruneExpired(sqlClient.database.db, oneAtATime, NOW)).toEqual({
      deliveries: 1,
      events: 1,
    });
    expect(await pruneExpired(sqlClient.database.db, oneAtATime, NOW)).toEqual({
      deliveries: 1,
      events: 1,
    });
    expect(await ids('messages')).toEqual([message, stillCarried].sort());
    // The last of the first message's notifications takes it along.
    expect(await pruneExpired(sqlClient.database.db, oneAtATime, NOW)).toEqual({
      deliveries: 1,
      messages: 1,
      events: 1,
    });
    expect(await ids('messages')).toEqual([stillCarried]);
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({});
    const { rows } = await sqlClient.client.query<{ warning_id: string }>(
      'SELECT warning_id FROM deliveries',
    );
    expect(rows.map((r) => r.warning_id)).toEqual(['W-d']);
  });

  it('removes notifications in one sweep at a time, so none leaves its message behind', async () => {
    const message = await grouped([
      { warningId: 'W-a', daysAgo: 100 },
      { warningId: 'W-b', daysAgo: 95 },
    ]);
    const other = new pg.Client({ connectionString: sqlClient.database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [RETENTION_LOCK]);
      const pruning = pruneExpired(sqlClient.database.db, LIMITS, NOW);
      await waitForLockWait(sqlClient.database.url, 'retention behind another sweep');
      expect(await ids('messages')).toEqual([message]);
      await other.query('COMMIT');
      expect(await pruning).toEqual({ deliveries: 2, messages: 1, events: 2 });
    } finally {
      await other.end();
    }
    expect(await ids('messages')).toEqual([]);
  });

  it("removes qwn test-send's records older than the ledger keeps", async () => {
    await sqlClient.client.query(
      `INSERT INTO test_sends (id, subscriber_id, channel, sent_at, ok, detail)
       VALUES (gen_random_uuid(), $1, 'email', $2, true, 'old'),
              (gen_random_uuid(), $1, 'email', $3, false, 'recent')`,
      [subscriber, ago(91), ago(89)],
    );
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({ test_sends: 1 });
    const { rows } = await sqlClient.client.query<{ detail: string }>(
      'SELECT detail FROM test_sends',
    );
    expect(rows).toEqual([{ detail: 'recent' }]);
  });

  it('removes the record of subscribers’ changes older than the ledger keeps', async () => {
    await sqlClient.client.query(
      `INSERT INTO subscriber_changes (subscriber_id, changed_at) VALUES ($1, $2), ($1, $3)`,
      [subscriber, ago(91), ago(89)],
    );
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({
      subscriber_changes: 1,
    });
    const { rows } = await sqlClient.client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM subscriber_changes WHERE changed_at > $1',
      [ago(90)],
    );
    expect(rows).toEqual([{ n: 1 }]);
  });

  it('keeps the latest cycle even when it is older than the cut', async () => {
    await cycle(200);
    const latest = await cycle(150, 'failed');
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({ poll_cycles: 1 });
    expect(await ids('poll_cycles')).toEqual([latest]);
  });

  it('removes the points no subscription watches, whatever their age', async () => {
    await sqlClient.client.query(
      `INSERT INTO alert_points (id, lat, lon) VALUES
         ('31.23,121.47', 31.23, 121.47), ('30.27,120.16', 30.27, 120.16), ('22.54,114.06', 22.54, 114.06)`,
    );
    const { rows } = await sqlClient.client.query<{ id: string }>(
      `INSERT INTO subscribers (name, email, active) VALUES ('Off', 'off@example.com', false)
       RETURNING id`,
    );
    // The desk watches the place's own coordinates; a switched-off subscriber names a point.
    await sqlClient.client.query(
      `INSERT INTO subscriptions (subscriber_id, place_id, points) VALUES
         ($1, '101020100', NULL), ($2, '101020100', ARRAY['30.27,120.16'])`,
      [subscriber, rows[0]!.id],
    );
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({ alert_points: 1 });
    expect(await ids('alert_points')).toEqual(['30.27,120.16', '31.23,121.47']);

    await sqlClient.client.query('DELETE FROM subscriptions');
    expect(await pruneExpired(sqlClient.database.db, LIMITS, NOW)).toEqual({ alert_points: 2 });
    expect(await ids('alert_points')).toEqual([]);
  });

  it('finds old rows through indexes', async () => {
    await sqlClient.client.query('SET enable_seqscan = off');
    try {
      for (const [query, index] of [
        [
          'SELECT id FROM deliveries WHERE created_at < now() ORDER BY created_at LIMIT 10',
          'deliveries_created_idx',
        ],
        [
          'SELECT id FROM events WHERE detected_at < now() ORDER BY detected_at LIMIT 10',
          'events_detected_idx',
        ],
        ['SELECT 1 FROM deliveries WHERE event_id = 1', 'deliveries_event_idx'],
        ["SELECT 1 FROM warnings WHERE warning_id = 'W'", 'warnings_warning_idx'],
        [
          'SELECT id FROM poll_cycles WHERE started_at < now() ORDER BY started_at LIMIT 10',
          'poll_cycles_started_idx',
        ],
      ] as const) {
        const { rows } = await sqlClient.client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query}`);
        expect(rows.map((r) => r['QUERY PLAN']).join('\n'), query).toContain(index);
      }
    } finally {
      await sqlClient.client.query('RESET enable_seqscan');
    }
  });
});
