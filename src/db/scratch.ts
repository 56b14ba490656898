import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database of its own on a Postgres server, for one demo run, benchmark or test file. */
export interface ScratchDatabase {
  readonly name: string;
  readonly url: string;
  /** Drops it, ending any session still connected. */
  readonly drop: () => Promise<void>;
}

/**
 * Creates `<prefix>_<random hex>` on the server `serverUrl` points at (any database there
 * serves to connect). Several runs on one server never meet.
 */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  // The name is ours (letters, digits, _): safe to put in the statements.
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () =>
      withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

async function withClient(url: string, run: (client: pg.Client) => Promise<unknown>) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await run(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
