import { sql, Placeholder, type SQL } from 'drizzle-orm';
import { dialect, queryRows, runNamed, statementName, type Db } from './client.js';

/**
 * The value a statement's placeholder stands for at build time. A builder may only interpolate
 * it (`${p.ids}::uuid[]`): its value exists only when the statement runs.
 */
export type Placeholders<Values> = { readonly [K in keyof Values]: Placeholder<K & string> };

/** Where each of a built statement's parameters comes from: a placeholder's value or a constant. */
type Slot = { readonly placeholder: string } | { readonly constant: unknown };

/**
 * A statement that a hot path runs thousands of times in a storm, its SQL text built once when
 * its module loads: `queryPrepared` built the text from drizzle's chunks on every call, 2 to 3 %
 * of a worker's CPU in a storm (issue 38). Each run only fills the placeholders' values in
 * order and runs it as a named prepared statement; on PGlite (the demo) it goes through
 * drizzle's raw query, which parses its rows the same way.
 */
export class PreparedStatement<Values extends object> {
  readonly text: string;
  readonly name: string;
  private readonly slots: readonly Slot[];
  private readonly pieces: readonly string[];

  constructor(build: (p: Placeholders<Values>) => SQL) {
    const names = new Proxy({} as Placeholders<Values>, {
      get: (_, key) => sql.placeholder(String(key)),
    });
    const built = dialect.sqlToQuery(build(names));
    this.text = built.sql;
    this.name = statementName(built.sql);
    this.slots = built.params.map((p) =>
      p instanceof Placeholder ? { placeholder: (p as Placeholder<string>).name } : { constant: p },
    );
    // "$n" is where parameter n goes; PGlite's run puts the values back in these places.
    this.pieces = built.sql.split(/\$\d+/);
    if (this.pieces.length !== this.slots.length + 1) {
      throw new Error(`a prepared statement's text holds a "$" of its own: ${built.sql}`);
    }
  }

  /** The parameters of one run, in the text's order. */
  values(values: Values): unknown[] {
    const named = values as Record<string, unknown>;
    return this.slots.map((slot) =>
      'placeholder' in slot ? named[slot.placeholder] : slot.constant,
    );
  }

  async run<T>(db: Db, values: Values): Promise<T[]> {
    const params = this.values(values);
    const named = await runNamed<T>(db, this.name, this.text, params);
    if (named) return named;
    const chunks: SQL[] = [];
    this.pieces.forEach((piece, i) => {
      chunks.push(sql.raw(piece));
      if (i < params.length) chunks.push(sql`${sql.param(params[i])}`);
    });
    return queryRows<T>(db, sql.join(chunks));
  }
}

/**
 * Runs prepared statements for a part that batches its own (`GroupCommit`): the database
 * itself (`runOn`), or a test's wrapper that counts or fails its statements.
 */
export type StatementRunner = <V extends object, T>(
  statement: PreparedStatement<V>,
  values: V,
) => Promise<T[]>;

/** The runner of `db`. */
export const runOn =
  (db: Db): StatementRunner =>
  (statement, values) =>
    statement.run(db, values);

/** Postgres's text of an array whose elements need no quoting: see `plainArray`. */
export type ArrayText = string & { readonly __arrayText: true };

/**
 * An array parameter of uuids, numbers or fixed words (channel names, event types) as
 * Postgres's array text, joined once: pg quotes and escapes every element of a JS array, about
 * 1 % of a storm's worker samples for the check's column arrays. Never for free text (a place
 * or warning id may hold a comma).
 */
export function plainArray(values: readonly (string | number)[]): ArrayText {
  return `{${values.join(',')}}` as ArrayText;
}
