import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import * as schema from './schema.js';

/** The query surface shared by node-postgres and PGlite (the demo's embedded Postgres). */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  readonly db: Db;
  readonly kind: 'pg' | 'pglite';
  /** Applies `migrations/` once, whatever the number of processes doing it at the same time. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * drizzle's migrator takes no lock, so concurrent `qwn migrate` runs would race on DDL: every
 * process takes this session-level advisory lock first and the later ones find nothing to do.
 */
const MIGRATION_LOCK_KEY = 0x71776e; // "qwn"

export interface OpenOptions {
  /** Connections in the pool (node-postgres only). */
  poolSize?: number;
  /** How long an unused connection stays open; 30 s unless given. */
  idleTimeoutMs?: number;
  applicationName?: string;
}

export function openPostgres(url: string, options: OpenOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'qwn',
    // A dead connection must not hang a job past its lock.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
  });
  // An idle client that loses its server emits 'error' on the pool; without a listener the
  // process would crash (pg's documented behaviour). The next query gets a fresh client.
  pool.on('error', () => undefined);
  // The pool stops listening while a client is checked out (inside a transaction, between its
  // statements): a session killed then (pg_terminate_backend, a failover) would emit 'error'
  // with no listener and take the process down. The transaction fails instead, and the pool
  // drops the broken client on release (found by test/faults/infrastructure.test.ts).
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pg',
    async migrate() {
      const { migrate } = await import('drizzle-orm/node-postgres/migrator');
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        try {
          await migrate(drizzlePg(client), { migrationsFolder: MIGRATIONS_FOLDER });
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
        }
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** An embedded Postgres (PGlite) for `qwn demo` when DATABASE_URL is unset. */
export async function openEmbedded(dataDir?: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const client = dataDir ? new PGlite(dataDir) : new PGlite();
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    async migrate() {
      const { migrate } = await import('drizzle-orm/pglite/migrator');
      await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_FOLDER });
    },
    close: () => client.close(),
  };
}

/** Rows of a raw query, whichever driver ran it. */
export async function queryRows<T>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  const result: unknown = await db.execute(query);
  return (result as { rows: T[] }).rows;
}

/** A transaction of `Db`: what `transaction` hands its work. */
export type Tx = Db;

/**
 * Postgres types whose text qwn reads as it comes (timestamps, dates, intervals and their
 * arrays, numeric arrays): the same parsing as drizzle's raw queries, so `queryPrepared` and
 * `queryRows` give one statement the same row.
 */
const TEXT_AS_IS = new Set([1082, 1114, 1184, 1186, 1115, 1182, 1185, 1187, 1231]);
const READ_AS_IS = (text: string): string => text;
const ROW_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    TEXT_AS_IS.has(oid)
      ? READ_AS_IS
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * The node-postgres pool or client a database runs on, through drizzle's public `$client`:
 * the pool, or the client of one of qwn's transactions. Null on PGlite.
 */
function pgQueryable(db: Db): pg.Pool | pg.Client | null {
  const client = (db as { $client?: unknown }).$client;
  return client instanceof pg.Pool || client instanceof pg.Client ? client : null;
}

/**
 * Runs `work` in one transaction. On node-postgres the transaction holds its own pool client,
 * so the statements in it can be named prepared statements (`queryPrepared`); PGlite, the
 * demo's embedded database, runs drizzle's own transaction.
 */
export async function transaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const pool = pgQueryable(db);
  if (!(pool instanceof pg.Pool)) return db.transaction((tx) => work(tx as unknown as Tx));
  const client = await pool.connect();
  const tx = drizzlePg(client) as unknown as Tx;
  // A client whose ROLLBACK failed is in no known state: it leaves the pool.
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(tx);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
      broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The one builder of SQL text from drizzle's chunks (`queryPrepared`, `PreparedStatement`). */
export const dialect = new PgDialect();
const statementNames = new Map<string, string>();

/** The name of the prepared statement of `text`: derived from it, so two never share one. */
export function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `qwn_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Runs `text` as the named prepared statement `name` on node-postgres; null on PGlite, which has
 * no named statements (the caller runs it through drizzle there).
 */
export async function runNamed<T>(
  db: Db,
  name: string,
  text: string,
  values: unknown[],
): Promise<T[] | null> {
  const queryable = pgQueryable(db);
  if (!queryable) return null;
  const result = await queryable.query({ name, text, values, types: ROW_TYPES });
  return result.rows as T[];
}

/**
 * `queryRows` as a named prepared statement: each connection parses and plans it once, not on
 * every run. For the statements a storm or a quiet cycle runs thousands of times, where the
 * planning of their CTEs was a visible share of Postgres's CPU. PGlite has no named statements:
 * there it is `queryRows`. A statement of a hot path whose shape never changes is a
 * `PreparedStatement` (src/db/prepared.ts), whose text is not built again on every call.
 */
export async function queryPrepared<T>(db: Db, query: SQL): Promise<T[]> {
  const built = dialect.sqlToQuery(query);
  return (
    (await runNamed<T>(db, statementName(built.sql), built.sql, built.params)) ??
    queryRows<T>(db, query)
  );
}
