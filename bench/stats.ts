import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type pg from 'pg';

/** What Postgres and Redis count about themselves, read before and after each scenario. */

/**
 * The `application_name` of the bench's own sessions (statistics, activity sampling): they
 * watch a cycle rather than run it, so their backends are neither ended nor counted.
 */
export const BENCH_SESSION_NAME = 'qwn bench';

/** The pipeline's backends of the bench database, as a `pg_stat_activity` condition. */
export const PIPELINE_BACKENDS = `datname = current_database()
  AND application_name NOT LIKE '${BENCH_SESSION_NAME}%'`;

export interface TableWrites {
  ins: number;
  upd: number;
  del: number;
}

export type TableStats = Record<string, TableWrites>;

/**
 * Backends report their table counters when they go idle, at most once a second and otherwise
 * up to ten seconds later; a backend that exits reports at once. Ending the idle backends of
 * the bench database (the pools open new ones on their next query) makes the counters exact
 * without waiting.
 */
export async function flushTableStats(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
     WHERE ${PIPELINE_BACKENDS} AND pid <> pg_backend_pid() AND state = 'idle'`,
  );
  const pids = rows.map((r) => r.pid);
  if (pids.length === 0) return;
  await client.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS t(pid)', [pids]);
  for (let i = 0; i < 100; i += 1) {
    const left = await client.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[])', [
      pids,
    ]);
    if (left.rowCount === 0) break;
    await sleep(20);
  }
}

export async function readTableStats(client: pg.Client): Promise<TableStats> {
  const { rows } = await client.query<{ relname: string; ins: string; upd: string; del: string }>(
    `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_user_tables`,
  );
  return Object.fromEntries(
    rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), del: Number(r.del) }]),
  );
}

export function tableDelta(before: TableStats, after: TableStats): TableStats {
  const out: TableStats = {};
  for (const [table, a] of Object.entries(after)) {
    const b = before[table] ?? { ins: 0, upd: 0, del: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, del: a.del - b.del };
    if (d.ins || d.upd || d.del) out[table] = d;
  }
  return out;
}

export async function readTransactions(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Transactions of each other database of the server, by its oid. WAL is counted server-wide
 * only: when these move during a scenario, someone else's writes are in its WAL figure.
 */
export async function readOtherTransactions(client: pg.Client): Promise<Map<number, number>> {
  const { rows } = await client.query<{ id: number; n: string }>(
    `SELECT datid::int AS id, (xact_commit + xact_rollback)::text AS n FROM pg_stat_database
     WHERE datname IS NOT NULL AND datname <> current_database()`,
  );
  return new Map(rows.map((r) => [r.id, Number(r.n)]));
}

/**
 * The other databases' transactions between two readings: those of a database created
 * meanwhile count whole, a dropped one's are gone (a sum over all would go down with it).
 */
export function otherTransactionsBetween(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number {
  let n = 0;
  for (const [id, count] of after) n += Math.max(0, count - (before.get(id) ?? 0));
  return n;
}

/** WAL the server has written (pg_stat_wal, Postgres 14+; the whole server, and the bench's
 * database is the only busy one while a scenario runs). */
export async function readWalBytes(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ b: string }>(
    `SELECT wal_bytes::text AS b FROM pg_stat_wal`,
  );
  return Number(rows[0]?.b ?? 0);
}

export interface RedisStats {
  cpuSeconds: number;
  commands: Record<string, number>;
}

export async function readRedisStats(redis: Redis): Promise<RedisStats> {
  const cpu = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  const commandstats = await redis.info('commandstats');
  const commands: Record<string, number> = {};
  for (const m of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    commands[m[1]!] = Number(m[2]);
  }
  return { cpuSeconds: field('used_cpu_user') + field('used_cpu_sys'), commands };
}

export function redisDelta(
  before: RedisStats,
  after: RedisStats,
): { cpuSeconds: number; commands: number; top: [string, number][] } {
  const deltas = Object.entries(after.commands)
    .map(([name, calls]) => [name, calls - (before.commands[name] ?? 0)] as [string, number])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  return {
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    commands: deltas.reduce((n, [, calls]) => n + calls, 0),
    top: deltas.slice(0, 8),
  };
}

/**
 * Samples what the bench database's backends are doing (pg_stat_activity) every `everyMs`:
 * a poor man's wait-event profile, enough to tell lock waits from WAL flushes from CPU.
 */
export function samplePgActivity(
  client: pg.Client,
  everyMs = 100,
): () => Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let running = true;
  let failed = false;
  const loop = (async () => {
    // Sampling is best effort: a lost connection ends it, not the bench.
    while (running && !failed) {
      const { rows } = await client.query<{ what: string; n: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS what, count(*) AS n
         FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
         GROUP BY 1`,
      );
      for (const r of rows) counts[r.what] = (counts[r.what] ?? 0) + Number(r.n);
      await sleep(everyMs);
    }
  })().catch(() => {
    failed = true;
  });
  return async () => {
    running = false;
    await loop;
    return counts;
  };
}
