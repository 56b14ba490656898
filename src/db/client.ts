import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
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

/** The two drizzle internals a named statement needs (present on both drivers' databases). */
interface DrizzleInternals {
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
  session: {
    prepareQuery(
      query: { sql: string; params: unknown[] },
      fields: undefined,
      name: string,
      isResponseInArrayMode: false,
    ): { execute(): Promise<unknown> };
  };
}

const statementNames = new Map<string, string>();

/**
 * `queryRows` as a named prepared statement: each connection parses and plans it once, not on
 * every run. For the statements a storm or a quiet cycle runs thousands of times, where the
 * planning of their CTEs was a visible share of Postgres's CPU. The name derives from the text,
 * so two statements can never share one.
 */
export async function queryPrepared<T>(db: Db, query: SQL): Promise<T[]> {
  const { dialect, session } = db as unknown as DrizzleInternals;
  const built = dialect.sqlToQuery(query);
  let name = statementNames.get(built.sql);
  if (!name) {
    name = `qwn_${createHash('sha1').update(built.sql).digest('hex').slice(0, 20)}`;
    statementNames.set(built.sql, name);
  }
  const result = await session.prepareQuery(built, undefined, name, false).execute();
  return (result as { rows: T[] }).rows;
}

/** A transaction of `Db`, as `db.transaction(async (tx) => …)` hands it over. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
