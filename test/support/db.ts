import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { MIGRATIONS_FOLDER, openPostgres, type Database } from '../../src/db/client.js';
import { createScratchDatabase } from '../../src/db/scratch.js';
import { ADMIN_URL } from './postgres-server.js';

export { ADMIN_URL };

export interface TestDatabase extends Database {
  readonly url: string;
  readonly name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file, migrated unless asked not to. A migrated one is a copy of
 * the run's template (test/support/global-setup.ts), migrated once per run: a copy takes a third
 * of the time the migrations take.
 */
export async function createTestDatabase(
  options: { migrate?: boolean } = {},
): Promise<TestDatabase> {
  const migrated = options.migrate !== false;
  const template = migrated ? inject('migratedTemplate') : undefined;
  const { name, url, drop } = await createScratchDatabase(ADMIN_URL, 'qwn_test', { template });
  const database = openPostgres(url, { poolSize: 5, applicationName: 'qwn test' });
  // A run without the global setup (one file through an editor's runner) migrates for itself.
  if (migrated && template === undefined) await database.migrate();
  return {
    ...database,
    url,
    name,
    async drop() {
      await database.close();
      await drop();
    },
  };
}

/**
 * A fresh migrated database and one plain pg client on it, for the enclosing describe block:
 * tests that speak SQL as an admin would. Read `client` and `database` inside tests and hooks.
 * With `migratedTo`, only the migrations numbered below it are applied: a test of one migration
 * puts in the rows an older release wrote, then applies it (`applyMigrations`).
 */
export function useSqlClient(options: { migratedTo?: number } = {}): {
  readonly client: pg.Client;
  readonly database: TestDatabase;
} {
  let database: TestDatabase | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    database = await createTestDatabase({ migrate: options.migratedTo === undefined });
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    if (options.migratedTo !== undefined) {
      await applyMigrations(client, { to: options.migratedTo });
    }
  });
  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useSqlClient: read before its beforeAll ran');
    return value;
  };
  return {
    get client() {
      return ready(client);
    },
    get database() {
      return ready(database);
    },
  };
}

/**
 * Resolves once some session of the database at `url` waits on a lock: a test holding a race
 * open knows the other side has reached it. Fails naming `what` after ten seconds.
 */
export async function waitForLockWait(url: string, what: string): Promise<void> {
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (rows[0]!.n > 0) return;
      if (Date.now() > deadline) throw new Error(`no session came to wait on a lock: ${what}`);
      await sleep(20);
    }
  } finally {
    await watcher.end();
  }
}

/** Applies the migrations numbered from `from` up to, not including, `to`, statement by statement. */
export async function applyMigrations(
  client: pg.Client,
  range: { from?: number; to: number },
): Promise<void> {
  const from = range.from ?? 0;
  const journal = JSON.parse(
    readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8'),
  ) as { entries: { idx: number; tag: string }[] };
  for (const entry of journal.entries.filter((e) => e.idx >= from && e.idx < range.to)) {
    const text = readFileSync(join(MIGRATIONS_FOLDER, `${entry.tag}.sql`), 'utf8');
    for (const statement of text.split('--> statement-breakpoint')) {
      if (statement.trim()) await client.query(statement);
    }
  }
}

/**
 * `db`, except that `write` runs once, just before its first transaction begins: another
 * session's commit between a check's unlocked read and its locked one. `interleaved()` says
 * whether it ran.
 */
export function writeBeforeFirstTransaction<T extends object>(
  db: T,
  write: () => Promise<void>,
): { db: T; interleaved: () => boolean } {
  let interleaved = false;
  // qwn's transactions begin by taking a client from the pool (src/db/client.ts, `transaction`).
  const pool = (db as { $client: pg.Pool }).$client;
  const watchedPool = new Proxy(pool, {
    get(target, name) {
      const value = Reflect.get(target, name, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...a: unknown[]) => unknown;
      if (name !== 'connect') return method.bind(target);
      return async (...args: unknown[]) => {
        if (!interleaved) {
          interleaved = true;
          await write();
        }
        return method.apply(target, args);
      };
    },
  });
  const proxy = new Proxy(db, {
    get(target, name) {
      if (name === '$client') return watchedPool;
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
  return { db: proxy, interleaved: () => interleaved };
}
