import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbedded, queryRows, transaction, type Database } from '../../src/db/client.js';
import { plainArray, PreparedStatement } from '../../src/db/prepared.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * A `PreparedStatement` builds its text once and fills only its values on each run: the same
 * rows as the statement built by drizzle with those values, on node-postgres and on PGlite.
 */
interface Values {
  ids: string[];
  at: Date;
  label: string | null;
}

const built: string[] = [];
const statement = new PreparedStatement<Values>((p) => {
  built.push('built');
  // `at` twice, a constant between: each place gets its own parameter.
  return sql`SELECT v.id, ${p.at}::timestamptz AS at, ${p.label}::text AS label,
      ${p.at}::timestamptz + make_interval(secs => ${90}) AS later, ${'fixed'}::text AS fixed
    FROM unnest(${p.ids}::uuid[]) WITH ORDINALITY AS v(id, n) ORDER BY v.n`;
});

const direct = (values: Values) =>
  sql`SELECT v.id, ${values.at}::timestamptz AS at, ${values.label}::text AS label,
      ${values.at}::timestamptz + make_interval(secs => ${90}) AS later, ${'fixed'}::text AS fixed
    FROM unnest(${sql.param(values.ids)}::uuid[]) WITH ORDINALITY AS v(id, n) ORDER BY v.n`;

const A = '6f1c9a3e-2b7d-4c1a-9e55-0a1b2c3d4e5f';
const B = '0e2d4f6a-8b1c-4d3e-a5f7-9b0c1d2e3f4a';
const runs: Values[] = [
  { ids: [A, B], at: new Date('2026-07-01T00:00:00Z'), label: 'first' },
  { ids: [B], at: new Date('2026-07-02T12:30:00Z'), label: null },
];

describe('a prepared statement', () => {
  let pg: TestDatabase;
  let lite: Database;

  beforeAll(async () => {
    pg = await createTestDatabase();
    lite = await openEmbedded();
  });
  afterAll(async () => {
    await pg.drop();
    await lite.close();
  });

  it('is built once, when it is made, and numbers each place of its text', () => {
    expect(built).toHaveLength(1);
    expect(statement.text).toContain('$1::timestamptz AS at, $2::text AS label');
    expect(statement.text).toContain('$3::timestamptz + make_interval(secs => $4)');
    expect(statement.values(runs[0]!)).toEqual([
      runs[0]!.at,
      'first',
      runs[0]!.at,
      90,
      'fixed',
      [A, B],
    ]);
  });

  it('gives the rows drizzle gives for the same values, on node-postgres', async () => {
    for (const values of runs) {
      const rows = await transaction(pg.db, (tx) => statement.run(tx, values));
      expect(rows).toEqual(await queryRows(pg.db, direct(values)));
    }
    const [first] = await statement.run<{ at: string; later: string }>(pg.db, runs[0]!);
    expect(first).toMatchObject({ at: '2026-07-01 00:00:00+00', later: '2026-07-01 00:01:30+00' });
    const named = await transaction(pg.db, async (tx) => {
      await statement.run(tx, runs[1]!);
      return queryRows<{ statement: string }>(
        tx,
        sql`SELECT statement FROM pg_prepared_statements WHERE name = ${statement.name}`,
      );
    });
    expect(named).toEqual([{ statement: statement.text }]);
  });

  it('gives the rows drizzle gives for the same values, on PGlite', async () => {
    for (const values of runs) {
      const rows = await statement.run(lite.db, values);
      expect(rows).toEqual(await queryRows(lite.db, direct(values)));
      expect(rows).toHaveLength(values.ids.length);
    }
  });

  it('reads an array as plain text as pg reads the same JS array, on both drivers', async () => {
    const arrays = new PreparedStatement<{ ids: unknown; n: unknown; words: unknown; at: unknown }>(
      (p) => sql`SELECT ${p.ids}::uuid[] AS ids, ${p.n}::bigint[] AS n, ${p.words}::text[] AS words,
        ${p.at}::timestamptz[] AS at`,
    );
    const at = ['2026-07-01T00:00:00.000Z', '2026-12-31T23:59:59.999Z'];
    const js = { ids: [A, B], n: [1, 9007199254740991, -3], words: ['webhook', 'email'], at };
    const plain = {
      ids: plainArray(js.ids),
      n: plainArray(js.n),
      words: plainArray(js.words),
      at: plainArray(at),
    };
    for (const db of [pg.db, lite.db]) {
      const [viaPlain] = await arrays.run(db, plain);
      expect(viaPlain).toEqual((await arrays.run(db, js))[0]);
      expect(viaPlain).toMatchObject({ ids: [A, B], words: ['webhook', 'email'] });
    }
    expect(plainArray([])).toBe('{}');
  });

  it('refuses a text with a "$" of its own, which PGlite would fill wrongly', () => {
    expect(
      () => new PreparedStatement<{ n: number }>((p) => sql`SELECT ${p.n}::int AS "$2"`),
    ).toThrow(/holds a "\$" of its own/);
  });
});
