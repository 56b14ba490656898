import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import type { PreparedStatement } from '../../src/db/prepared.js';

/** A node of `EXPLAIN (FORMAT JSON)`, as far as the plan tests read it. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** What an index scan looks up by, and what it reads only to throw away. */
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** The index (or node type: "Seq Scan", "Tid Scan") each scan of `relation` goes through. */
export function accessPaths(node: PlanNode, relation: string, found: string[] = []): string[] {
  if (node['Relation Name'] === relation && node['Node Type'] !== 'ModifyTable') {
    if (node['Node Type'] === 'Bitmap Heap Scan') {
      // A bitmap heap scan names its indexes on its Bitmap Index Scan children.
      found.push(
        ...(node.Plans ?? []).flatMap(function indexes(n: PlanNode): string[] {
          return n['Node Type'] === 'Bitmap Index Scan'
            ? [n['Index Name']!]
            : (n.Plans ?? []).flatMap(indexes);
        }),
      );
      return found;
    }
    found.push(node['Index Name'] ?? node['Node Type']);
  }
  // Below a scan are the subplans of its filters, which may read other tables.
  for (const child of node.Plans ?? []) accessPaths(child, relation, found);
  return found;
}

/** The nodes that read `relation`, with what they look up by and what they filter. */
export function scansOf(node: PlanNode, relation: string, found: PlanNode[] = []): PlanNode[] {
  if (node['Relation Name'] === relation) found.push(node);
  for (const child of node.Plans ?? []) scansOf(child, relation, found);
  return found;
}

/** The relations the plan reads whole. */
export function scannedWhole(node: PlanNode, found: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) found.push(node['Relation Name']);
  for (const child of node.Plans ?? []) scannedWhole(child, found);
  return found;
}

/** A statement's parameter as an SQL literal, for EXECUTE: arrays with quoted elements and NULLs. */
export function literal(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (value instanceof Date) return `'${value.toISOString()}'`;
  const text = Array.isArray(value)
    ? `{${value
        .map((e) =>
          e === null ? 'NULL' : `"${String(e).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`,
        )
        .join(',')}}`
    : String(value);
  return `'${text.replace(/'/g, "''")}'`;
}

/** A statement's text and the parameters of one run of it. */
export interface BuiltStatement {
  sql: string;
  params: unknown[];
}

/** A `PreparedStatement`'s text and its parameters for `values`. */
export function builtOf<V extends object>(
  statement: PreparedStatement<V>,
  values: V,
): BuiltStatement {
  return { sql: statement.text, params: statement.values(values) };
}

/**
 * The generic plan of `query`: prepared as `name` in a session that forces generic plans,
 * explained with the query's own parameters, then deallocated.
 */
export async function genericPlan(
  client: pg.Client,
  name: string,
  query: SQL | BuiltStatement,
): Promise<PlanNode> {
  const built = 'sql' in query ? query : new PgDialect().sqlToQuery(query);
  await client.query(`SET plan_cache_mode = force_generic_plan; PREPARE ${name} AS ${built.sql}`);
  try {
    const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${built.params.map(literal).join(', ')})`,
    );
    return explained.rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await client.query(`DEALLOCATE ${name}; RESET plan_cache_mode`);
  }
}
