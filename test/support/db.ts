import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgres, type Database } from '../../src/db/client.js';

/** The server the integration tests use (.ci/run makes sure it answers). */
export const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase extends Database {
  readonly url: string;
  readonly name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** A fresh database for one test file (STYLE §10), migrated unless asked not to. */
export async function createTestDatabase(
  options: { migrate?: boolean } = {},
): Promise<TestDatabase> {
  const name = `qwn_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = ADMIN_URL.replace(/\/test$/, `/${name}`);
  const database = openPostgres(url, { poolSize: 5, applicationName: 'qwn test' });
  if (options.migrate !== false) await database.migrate();
  return {
    ...database,
    url,
    name,
    async drop() {
      await database.close();
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
