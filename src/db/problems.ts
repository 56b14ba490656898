import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { MIGRATIONS_FOLDER } from './client.js';

/**
 * Database failures as an operator reads them (docs/operations.md): what went wrong and what to do,
 * never the SQL text or its parameters, which carry subscribers' addresses and webhook URLs.
 */

export const NOT_MIGRATED = 'the database is not migrated: run `qwn migrate`';

/** The database lacks tables or migrations this code needs. */
export class NotMigratedError extends Error {
  override name = 'NotMigratedError';
  constructor() {
    super(NOT_MIGRATED);
  }
}

/** Postgres error codes that mean the schema is older than the code: a table, column or schema missing. */
const SCHEMA_MISSING = new Set(['42P01', '42703', '3F000', '42883']);

interface PgError {
  code: string;
  message: string;
}

/** The Postgres error somewhere in `err`'s cause chain (drizzle wraps it with the query). */
function pgErrorIn(err: unknown): PgError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth += 1) {
    const candidate = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (
      typeof candidate.code === 'string' &&
      /^[0-9A-Z]{5}$/.test(candidate.code) &&
      typeof candidate.message === 'string'
    ) {
      return { code: candidate.code, message: candidate.message };
    }
    e = candidate.cause;
  }
  return undefined;
}

/**
 * One line for a failure that came from Postgres, or null when it did not: "not migrated" for
 * a missing table or column, else Postgres's own message (which names no parameter values).
 */
export function databaseProblem(err: unknown): string | null {
  if (err instanceof NotMigratedError) return err.message;
  const pg = pgErrorIn(err);
  if (!pg) return null;
  if (SCHEMA_MISSING.has(pg.code)) return NOT_MIGRATED;
  return `a database statement failed: ${pg.message} (${pg.code})`;
}

/**
 * What an operator is told of any failure: `databaseProblem` for Postgres's, and never drizzle's
 * "Failed query: <SQL> params: <values>" wrapping, whose values are subscribers' data.
 */
export function failureMessage(err: unknown): string {
  const problem = databaseProblem(err);
  if (problem) return problem;
  if (err instanceof Error && err.message.startsWith('Failed query:')) {
    return err.cause ? failureMessage(err.cause) : 'a database statement failed';
  }
  return err instanceof Error ? err.message : String(err);
}

let journalLength: number | undefined;

/** How many migrations this code ships (`migrations/meta/_journal.json`). */
function shippedMigrations(): number {
  journalLength ??= (
    JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
      entries: unknown[];
    }
  ).entries.length;
  return journalLength;
}

/**
 * Throws `NotMigratedError` unless every migration this code ships has been applied: a command
 * that reads or writes the store says so before its first statement fails on a missing table.
 */
export async function assertMigrated(db: {
  execute(query: ReturnType<typeof sql>): Promise<unknown>;
}): Promise<void> {
  let applied: number;
  try {
    const result = (await db.execute(
      sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`,
    )) as { rows: { n: number }[] };
    applied = result.rows[0]?.n ?? 0;
  } catch (err) {
    if (databaseProblem(err) === NOT_MIGRATED) throw new NotMigratedError();
    throw err;
  }
  if (applied < shippedMigrations()) throw new NotMigratedError();
}
