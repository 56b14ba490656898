import { openPostgres, type Database } from '../../src/db/client.js';
import { createScratchDatabase } from '../../src/db/scratch.js';

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
  const { name, url, drop } = await createScratchDatabase(ADMIN_URL, 'qwn_test');
  const database = openPostgres(url, { poolSize: 5, applicationName: 'qwn test' });
  if (options.migrate !== false) await database.migrate();
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
