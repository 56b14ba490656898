import { openEmbedded, openPostgres, type Database } from '../db/client.js';
import { createScratchDatabase, type ScratchDatabase } from '../db/scratch.js';

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

  let scratch: ScratchDatabase;
  try {
    scratch = await createScratchDatabase(databaseUrl, 'qwn_demo');
  } catch (err) {
    throw new DemoDatabaseError(
      `cannot create a throwaway database on ${hostOf(databaseUrl)} (${reason(err)}); ` +
        'unset DATABASE_URL to use the embedded Postgres',
    );
  }
  const { name, drop } = scratch;
  const database = openPostgres(scratch.url, {
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
