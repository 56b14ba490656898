import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openEmbedded, openPostgres, type Database } from '../db/client.js';

/**
 * Postgres for `qwn demo`. Without DATABASE_URL: an embedded Postgres (PGlite) in memory. With
 * it: a throwaway database `qwn_demo_<random>` created on that server, migrated, and dropped
 * after, so the demo never reads or writes the database the URL names.
 */

export class DemoDatabaseError extends Error {
  override name = 'DemoDatabaseError';
}

export interface DemoDatabase {
  readonly database: Database;
  /** Says where the data lives, for the demo's first lines. */
  readonly description: string;
  /** Closes the connection and drops the throwaway database. */
  close(): Promise<void>;
}

function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

function hostOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}`;
}

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function provideDatabase(databaseUrl: string | undefined): Promise<DemoDatabase> {
  if (!databaseUrl) {
    const database = await openEmbedded();
    await database.migrate();
    return {
      database,
      description: 'embedded Postgres (PGlite, in memory; DATABASE_URL is not set)',
      close: () => database.close(),
    };
  }

  const name = `qwn_demo_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
    // The name is ours (letters, digits, _): safe to put in the statement.
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    throw new DemoDatabaseError(
      `cannot create a throwaway database on ${hostOf(databaseUrl)} (${reason(err)}); ` +
        'unset DATABASE_URL to use the embedded Postgres',
    );
  } finally {
    await admin.end().catch(() => undefined);
  }

  const drop = async () => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  };
  const database = openPostgres(withDatabaseName(databaseUrl, name), {
    poolSize: 10,
    applicationName: 'qwn demo',
  });
  try {
    await database.migrate();
  } catch (err) {
    await database.close();
    await drop();
    throw err;
  }
  return {
    database,
    description: `throwaway database ${name} on ${hostOf(databaseUrl)} (dropped at the end)`,
    async close() {
      await database.close();
      await drop();
    },
  };
}
