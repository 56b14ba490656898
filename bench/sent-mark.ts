import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPostgres } from '../src/db/client.js';
import { createScratchDatabase } from '../src/db/scratch.js';
import type { PreparedStatement } from '../src/db/prepared.js';
import { SentRecorder } from '../src/ledger/index.js';
import { median } from './median.js';
import { cpuSeconds, leaveToJanitor, releaseJanitor, startJanitor } from './procs.js';

/**
 * What the sent mark costs Postgres (issue 38, item 4): the same messages marked sent in the same
 * flushes by `SentRecorder`, in the ledger's `messages` (its mark changes `status`, which the due
 * and open indexes' predicates name, and `sent_at`, which the subscriber index holds: a new row
 * version with new index entries) and in a copy whose indexes name none of the columns the mark
 * changes (the mark is a HOT update: a row version on the same page, no index entry). The
 * difference is the most a HOT mark could save; making it HOT would first need the due work out
 * of the row: a table of its own, with an insert and a delete per message, measured third.
 * Prints the backend's CPU, WAL bytes and row versions per message for each, `--runs` times in
 * turns.
 *
 *   npm run bench:sent-mark -- [--rows N] [--batch N] [--runs N] [--pg URL]
 */

const HOT_TABLE = 'messages_hot';
const DUE_TABLE = 'messages_due';

export interface MarkVariantResult {
  table: string;
  rows: number;
  cpuMsPerRow: number;
  walBytesPerRow: number;
  updates: number;
  hotUpdates: number;
}

/** Marks `rows` pending messages of `table` sent, `batch` a flush, through `SentRecorder`. */
async function markAll(
  client: pg.Client,
  table: string,
  rows: number,
  batch: number,
): Promise<MarkVariantResult> {
  const ids = Array.from({ length: rows }, () => randomUUID());
  const now = new Date();
  await client.query(
    `INSERT INTO ${table} (id, subscriber_id, channel, status, next_attempt_at, first_job_id,
       claimed_until, created_at, updated_at)
     SELECT id, gen_random_uuid(), 'webhook', 'pending', $2, 'job', $2::timestamptz + interval '2 min', $2, $2
     FROM unnest($1::uuid[]) AS id`,
    [ids, now],
  );
  await client.query(`VACUUM ANALYZE ${table}`);
  // The ledger's own statement; for the copy, the same text on its table.
  const recorder = new SentRecorder(
    async <V extends object, T>(statement: PreparedStatement<V>, values: V) => {
      const text = statement.text.replace('UPDATE messages d', `UPDATE ${table} d`);
      const result = await client.query({
        name: `mark_${table}`,
        text,
        values: statement.values(values),
      });
      return result.rows as T[];
    },
  );
  const shuffled = [...ids].sort(() => Math.random() - 0.5);
  const countersBefore = await updateCounters(client, table);
  const cost = await backendCost(client, rows, async () => {
    for (let i = 0; i < shuffled.length; i += batch) {
      const at = new Date();
      await Promise.all(shuffled.slice(i, i + batch).map((id) => recorder.markSent(id, at)));
    }
  });
  const counters = await updateCounters(client, table);
  await client.query(`TRUNCATE ${table}`);
  return {
    table,
    rows,
    ...cost,
    updates: counters.updates - countersBefore.updates,
    hotUpdates: counters.hot - countersBefore.hot,
  };
}

/** Rows a check writes at a time: a storm's check owes about 65 notifications. */
const CHECK_ROWS = 65;

/**
 * What a HOT mark would need first: whether a message is due kept in a table of its own, a row
 * written with the message (`CHECK_ROWS` at a time, as checks write them) and deleted by its
 * mark (`batch` at a time), found through its due time as the sweeper finds due messages.
 */
async function dueRowsInAndOut(
  client: pg.Client,
  rows: number,
  batch: number,
): Promise<MarkVariantResult> {
  const ids = Array.from({ length: rows }, () => randomUUID());
  const shuffled = [...ids].sort(() => Math.random() - 0.5);
  const cost = await backendCost(client, rows, async () => {
    for (let i = 0; i < ids.length; i += CHECK_ROWS) {
      await client.query({
        name: 'due_in',
        text: `INSERT INTO ${DUE_TABLE} (id, next_attempt_at) SELECT id, $2 FROM unnest($1::uuid[]) AS id`,
        values: [ids.slice(i, i + CHECK_ROWS), new Date()],
      });
    }
    for (let i = 0; i < shuffled.length; i += batch) {
      await client.query({
        name: 'due_out',
        text: `DELETE FROM ${DUE_TABLE} WHERE id = ANY($1::uuid[])`,
        values: [shuffled.slice(i, i + batch)],
      });
    }
  });
  await client.query(`TRUNCATE ${DUE_TABLE}`);
  return { table: DUE_TABLE, rows, ...cost, updates: 0, hotUpdates: 0 };
}

/**
 * What `work` on `client` cost its Postgres backend per row: CPU (from /proc, so a local server)
 * and WAL bytes (server-wide: nothing else runs in the bench's scratch database).
 */
async function backendCost(
  client: pg.Client,
  rows: number,
  work: () => Promise<void>,
): Promise<Pick<MarkVariantResult, 'cpuMsPerRow' | 'walBytesPerRow'>> {
  const { rows: found } = await client.query<{ pid: number; lsn: string }>(
    'SELECT pg_backend_pid() AS pid, pg_current_wal_lsn() AS lsn',
  );
  const { pid, lsn } = found[0]!;
  const cpuBefore = cpuSeconds(pid);
  await work();
  const cpu = cpuSeconds(pid) - cpuBefore;
  const { rows: wal } = await client.query<{ bytes: string }>(
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes',
    [lsn],
  );
  return { cpuMsPerRow: (cpu * 1000) / rows, walBytesPerRow: Number(wal[0]!.bytes) / rows };
}

/** The table's updates and HOT updates so far, this backend's own included. */
async function updateCounters(
  client: pg.Client,
  table: string,
): Promise<{ updates: number; hot: number }> {
  // This backend's counters now, not when it next goes idle.
  await client.query('SELECT pg_stat_force_next_flush()');
  const row = (
    await client.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = $1`,
      [table],
    )
  ).rows[0]!;
  return { updates: Number(row.upd), hot: Number(row.hot) };
}

/**
 * Both variants on a scratch database migrated as qwn's, `runs` times in turns (the ledger's
 * table first). The HOT copy keeps the ledger's columns, checks and fillfactor, and indexes
 * only what a mark never changes (id, subscriber, due time).
 */
export async function measureSentMarks(o: {
  pgUrl: string;
  rows: number;
  batch: number;
  runs: number;
  /** Told of the scratch database as soon as it exists (the command's janitor). */
  created?: (database: { serverUrl: string; name: string }) => void;
}): Promise<MarkVariantResult[]> {
  const scratch = await createScratchDatabase(o.pgUrl, 'qwn_bench_mark');
  o.created?.({ serverUrl: o.pgUrl, name: scratch.name });
  try {
    const database = openPostgres(scratch.url, { poolSize: 1 });
    await database.migrate();
    await database.close();
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    try {
      await client.query(
        `CREATE TABLE ${HOT_TABLE} (LIKE messages INCLUDING ALL) WITH (fillfactor = 50)`,
      );
      // LIKE … INCLUDING ALL copied the ledger's indexes: the copy keeps only those a mark
      // leaves alone.
      const { rows: indexes } = await client.query<{ name: string; def: string }>(
        `SELECT indexname AS name, indexdef AS def FROM pg_indexes
         WHERE tablename = $1 AND indexname NOT LIKE '%pkey'`,
        [HOT_TABLE],
      );
      for (const index of indexes) await client.query(`DROP INDEX ${index.name}`);
      await client.query(`CREATE INDEX ON ${HOT_TABLE} (subscriber_id)`);
      await client.query(`CREATE INDEX ON ${HOT_TABLE} (next_attempt_at)`);
      await client.query(
        `CREATE TABLE ${DUE_TABLE} (id uuid PRIMARY KEY, next_attempt_at timestamptz NOT NULL)`,
      );
      await client.query(`CREATE INDEX ON ${DUE_TABLE} (next_attempt_at)`);
      const results: MarkVariantResult[] = [];
      for (let run = 0; run < o.runs; run += 1) {
        for (const table of ['messages', HOT_TABLE]) {
          results.push(await markAll(client, table, o.rows, o.batch));
        }
        results.push(await dueRowsInAndOut(client, o.rows, o.batch));
      }
      return results;
    } finally {
      await client.end();
    }
  } finally {
    await scratch.drop();
  }
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      rows: { type: 'string', default: '100000' },
      batch: { type: 'string', default: '100' },
      runs: { type: 'string', default: '3' },
      pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    },
  });
  const o = {
    pgUrl: args.pg,
    rows: Number(args.rows),
    batch: Number(args.batch),
    runs: Number(args.runs),
  };
  // A janitor drops the scratch database should this command be killed outright; the test
  // that runs `measureSentMarks` inside vitest drops its own.
  await startJanitor();
  const results = await measureSentMarks({
    ...o,
    created: (database) => leaveToJanitor({ type: 'database', ...database }),
  });
  releaseJanitor();
  console.log(
    `sent marks: ${o.rows.toLocaleString('en')} messages a run, ${o.batch} a flush, ${o.runs} runs in turns; Postgres backend CPU (local server)`,
  );
  for (const table of ['messages', HOT_TABLE, DUE_TABLE]) {
    const mine = results.filter((r) => r.table === table);
    const cpu = mine.map((r) => r.cpuMsPerRow * 1000);
    console.log(
      `${table.padEnd(14)} CPU µs/message ${median(cpu).toFixed(1)} (${cpu.map((c) => c.toFixed(1)).join(' / ')})` +
        `  WAL bytes/message ${Math.round(median(mine.map((r) => r.walBytesPerRow)))}` +
        `  HOT updates ${mine.map((r) => `${r.hotUpdates}/${r.updates}`).join(', ')}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
