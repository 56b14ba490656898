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
 * serves to connect). Several runs on one server never meet. With `template`, the new database
 * is a copy of that one (which must have no session open on it).
 */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
  options: { template?: string } = {},
): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const template = options.template;
  if (template !== undefined && !/^[a-z0-9_]+$/.test(template)) {
    throw new Error(`createScratchDatabase: not a scratch database name: ${template}`);
  }
  // The names are ours (letters, digits, _): safe to put in the statements.
  const copy = template === undefined ? '' : ` TEMPLATE ${template}`;
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}${copy}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => dropScratchDatabase(serverUrl, name) };
}

/**
 * Drops the scratch database `name` on the server `serverUrl` points at, ending any session
 * still connected; nothing when it is gone already. For one that outlived its creator (the
 * bench's janitor, a test cleaning up after a killed process).
 */
export async function dropScratchDatabase(serverUrl: string, name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) {
    throw new Error(`dropScratchDatabase: not a scratch database name: ${name}`);
  }
  await withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
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
