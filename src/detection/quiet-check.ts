import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { PreparedStatement, runOn, type StatementRunner } from '../db/prepared.js';
import type { PipelineContext } from '../runtime/context.js';
import { GroupCommit } from '../runtime/group-commit.js';
import type { DetectResult } from '../domain/detect.js';
import type { WarningRow } from './warning-store.js';

/**
 * What every applied check writes to its place or point row, quiet or not: the cycle that
 * checked it (a re-run of that cycle's check is then a no-op), the newest fetch start, and the
 * last good answer's time. The SET list of an UPDATE of `places` or `alert_points` (aliased
 * `c`), from SQL expressions so that one check's parameters and a batch's columns say it the
 * same way.
 */
export function placeBookkeeping(check: {
  cycleId: SQL;
  fetchOk: SQL;
  fetchStartedAt: SQL;
  now: SQL;
}): SQL {
  return sql`last_cycle_id = ${check.cycleId},
    last_fetched_at = GREATEST(c.last_fetched_at, ${check.fetchStartedAt}),
    last_ok_at = CASE WHEN ${check.fetchOk} THEN ${check.now} ELSE c.last_ok_at END`;
}

/**
 * What an applied check writes to its point row besides `placeBookkeeping`: the tag and
 * attributions of the answer it applied, or, when it applied none (`applied` false: a failed or
 * stale fetch), those of the last one. For an UPDATE of `alert_points` aliased `c`.
 */
export function pointAnswerBookkeeping(answer: { applied: SQL; tag: SQL; attributions: SQL }): SQL {
  return sql`last_tag = CASE WHEN ${answer.applied} THEN ${answer.tag} ELSE c.last_tag END,
    attributions = CASE WHEN ${answer.applied} THEN ${answer.attributions} ELSE c.attributions END`;
}

/** What a changing check writes as it locks its row (`lockCheckedRow`). */
export interface LockRequest {
  cycleId: string;
  key: string;
  fetchOk: boolean;
  fetchStartedAt: Date;
  now: Date;
  /**
   * alert_points only: the answer the check fetched. It applies unless the fetch failed or is
   * older than the last one applied (`isStale`, decided here from the locked row); otherwise the
   * point keeps the last answer's tag and attributions.
   */
  answer?: { tag: string | null; attributions: readonly string[] };
}

/** `LockRequest` as its statement's values: the answer's parts on their own. */
interface LockValues extends Omit<LockRequest, 'answer'> {
  tag: string | null;
  attributions: readonly string[];
}

/** The statement of `lockCheckedRow`, for a table and whether the check fetched an answer. */
function lockStatement(table: CheckedTable, answered: boolean): PreparedStatement<LockValues> {
  return new PreparedStatement<LockValues>((p) => {
    const pointColumns = table === 'alert_points' ? sql`, last_tag, v7_adopted_at` : sql``;
    const answerColumns = answered
      ? sql`, ${pointAnswerBookkeeping({
          applied: sql`(${p.fetchOk}::boolean AND NOT coalesce(
            (SELECT last_fetched_at FROM locked) > ${p.fetchStartedAt}::timestamptz, false))`,
          tag: sql`${p.tag}::text`,
          attributions: sql`${p.attributions}::text[]`,
        })}`
      : sql``;
    return sql`WITH locked AS (
        SELECT xmin::text AS version, last_cycle_id, last_fetched_at${pointColumns}
        FROM ${sql.identifier(table)} WHERE id = ${p.key} FOR UPDATE),
      written AS (
        UPDATE ${sql.identifier(table)} c
        SET ${placeBookkeeping({
          cycleId: sql`${p.cycleId}::uuid`,
          fetchOk: sql`${p.fetchOk}::boolean`,
          fetchStartedAt: sql`${p.fetchStartedAt}::timestamptz`,
          now: sql`${p.now}::timestamptz`,
        })}${answerColumns}
        WHERE id = ${p.key}
          AND (SELECT last_cycle_id FROM locked) IS DISTINCT FROM ${p.cycleId}::uuid)
      SELECT * FROM locked`;
  });
}

const LOCK_STATEMENTS = {
  places: { plain: lockStatement('places', false), answered: lockStatement('places', true) },
  alert_points: {
    plain: lockStatement('alert_points', false),
    answered: lockStatement('alert_points', true),
  },
} as const;

/**
 * The statement a changing check begins with: it locks the check's row, which serializes the
 * checks of one place or point across processes and cycles, and writes the row's bookkeeping in
 * the same statement (a round trip less per check). Every check that writes warnings thus
 * changes the row, which the quiet check's version compare relies on. A re-run of the cycle's
 * check writes nothing. Returns the row as it was before this write (`CheckedRow`, without its
 * warnings), or nothing when there is no row.
 */
export function lockCheckedRow<T>(
  db: Db,
  table: CheckedTable,
  { answer, ...check }: LockRequest,
): Promise<T[]> {
  const statements = LOCK_STATEMENTS[table];
  return answer
    ? statements.answered.run<T>(db, { ...check, ...answer })
    : statements.plain.run<T>(db, { ...check, tag: null, attributions: [] });
}

/**
 * The rows a check keeps its bookkeeping on: a v7 place, or a v1 point (src/detection/point-subject.ts),
 * whose row also keeps the tag and attributions of its last applied answer. Either's warnings
 * are those of `warnings` whose `place_id` is the row's id.
 */
export type CheckedTable = 'places' | 'alert_points';

/** One check's read: its row, and the warnings seen there since `windowStart`. */
interface ReadRequest {
  key: string;
  windowStart: Date;
}

/** A checked row as a quiet check reads it. */
export interface CheckedRow {
  version: string;
  last_cycle_id: string | null;
  last_fetched_at: Date | null;
  tracked: WarningRow[] | null;
  /** alert_points only. */
  last_tag?: string | null;
  /** alert_points only: when the point took over v7's open warnings; null until then. */
  v7_adopted_at?: Date | null;
}

/**
 * What a check's unlocked read saw in an answer that changes something: the row's version
 * (`xmin`) and what it detected. A check that goes on to take the lock and finds the same
 * version takes that detection: every check that writes a place's or point's warnings updates
 * its row in the same transaction, so the same version and answer detect the same.
 */
export interface UnlockedRead {
  version: string;
  detected: DetectResult;
}

/**
 * An array parameter, read as a statement of its own (an InitPlan). Postgres estimates the rows
 * of `unnest` over a known array by its length: a custom plan of a few checks then always
 * costed less than the generic plan, which assumes ten, and every batch was planned anew. Behind
 * a sub-select the array is unknown to both, so they cost the same and the generic plan stays.
 */
function arrayParam(values: Placeholder, type: string): SQL {
  return sql`(SELECT ${values}::${sql.raw(type)}[])`;
}

/** The requests of `CHECKED_READS`, as its column arrays. */
interface ReadValues {
  keys: string[];
  windowStarts: string[];
}

export function checkedReadValues(requests: readonly ReadRequest[]): ReadValues {
  return {
    keys: requests.map((r) => r.key),
    windowStarts: requests.map((r) => r.windowStart.toISOString()),
  };
}

/**
 * The reads of many checks' rows in one statement, one result per request that found its row
 * (`ord`, from 1, says which). Each row and its warnings are looked up by key whatever the plan:
 * a lateral lookup behind OFFSET 0 cannot be flattened into a join that hashes every row.
 */
function checkedReads(table: CheckedTable): PreparedStatement<ReadValues> {
  return new PreparedStatement<ReadValues>((p) => {
    const pointColumns = table === 'alert_points' ? sql`c.last_tag, c.v7_adopted_at,` : sql``;
    return sql`SELECT i.ord::int AS ord, c.*
        FROM unnest(${arrayParam(p.keys, 'text')}, ${arrayParam(p.windowStarts, 'timestamptz')})
          WITH ORDINALITY AS i(key, window_start, ord)
        CROSS JOIN LATERAL (
          SELECT c.xmin::text AS version, c.last_cycle_id, c.last_fetched_at, ${pointColumns}
            (SELECT json_agg(json_build_object(
                'warning_id', w.warning_id, 'state', w.state, 'record', w.record, 'raw', w.raw,
                'first_seen', w.first_seen, 'last_seen', w.last_seen, 'misses', w.misses,
                'last_miss_at', w.last_miss_at, 'closed_at', w.closed_at,
                'occurrence', w.occurrence))
             FROM warnings w WHERE w.place_id = c.id AND w.last_seen > i.window_start) AS tracked
          FROM ${sql.identifier(table)} c WHERE c.id = i.key OFFSET 0) c`;
  });
}

/**
 * `checkedReads` of each table. Exported for the test that holds their generic plans to index
 * lookups (test/db/quiet-check-plan.int.test.ts).
 */
export const CHECKED_READS = {
  places: checkedReads('places'),
  alert_points: checkedReads('alert_points'),
} as const;

/** One quiet check's write: its bookkeeping, and the warnings it saw, if its row is `version`. */
export interface QuietWriteRequest {
  cycleId: string;
  key: string;
  fetchOk: boolean;
  fetchStartedAt: Date;
  now: Date;
  version: string;
  seen: readonly string[];
  /**
   * alert_points only: the answer this check applied (its tag and attributions), or null when
   * it applied none (a failed or stale fetch) and the point keeps those of the last one.
   */
  answer?: { tag: string | null; attributions: readonly string[] } | null;
}

/** The requests of `QUIET_WRITES`, as its column arrays. */
interface WriteValues {
  keys: string[];
  versions: string[];
  cycleIds: string[];
  fetchOk: boolean[];
  fetchStartedAt: string[];
  now: string[];
  applied: boolean[];
  tags: (string | null)[];
  /** Each request's attributions as a JSON array: arrays of arrays do not fit `unnest`. */
  attributions: string[];
  /** The warnings each check saw, one (key, warning id) pair a warning. */
  seenKeys: string[];
  seenWarnings: string[];
}

export function quietWriteValues(requests: readonly QuietWriteRequest[]): WriteValues {
  return {
    keys: requests.map((r) => r.key),
    versions: requests.map((r) => r.version),
    cycleIds: requests.map((r) => r.cycleId),
    fetchOk: requests.map((r) => r.fetchOk),
    fetchStartedAt: requests.map((r) => r.fetchStartedAt.toISOString()),
    now: requests.map((r) => r.now.toISOString()),
    applied: requests.map((r) => Boolean(r.answer)),
    tags: requests.map((r) => r.answer?.tag ?? null),
    attributions: requests.map((r) => JSON.stringify(r.answer?.attributions ?? [])),
    seenKeys: requests.flatMap((r) => r.seen.map(() => r.key)),
    seenWarnings: requests.flatMap((r) => r.seen),
  };
}

/**
 * Many quiet checks' writes in one statement: each row's bookkeeping and the last-seen times of
 * the warnings its check saw, applied only to a row that is still the version its check read.
 * Returns the `ord` (from 1) of each request applied. The rows must be distinct: one row cannot
 * take two checks' writes in one statement. Bookkeeping only, so no wait for the WAL flush (as
 * in the locked path). Each row to update is found by key first and then updated by its address
 * (`ctid`): a join of the requests with the table may be planned as a hash of the whole table. A
 * row another transaction updated meanwhile is left alone: its new version has another address
 * and another `xmin`.
 */
function quietWrites(table: CheckedTable): PreparedStatement<WriteValues> {
  return new PreparedStatement<WriteValues>((p) => {
    const answerColumns =
      table === 'alert_points'
        ? sql`, ${pointAnswerBookkeeping({
            applied: sql`i.applied`,
            tag: sql`i.tag`,
            attributions: sql`ARRAY(SELECT jsonb_array_elements_text(i.attributions))`,
          })}`
        : sql``;
    return sql`WITH input AS (
          SELECT * FROM unnest(${arrayParam(p.keys, 'text')}, ${arrayParam(p.versions, 'text')},
              ${arrayParam(p.cycleIds, 'uuid')}, ${arrayParam(p.fetchOk, 'boolean')},
              ${arrayParam(p.fetchStartedAt, 'timestamptz')}, ${arrayParam(p.now, 'timestamptz')},
              ${arrayParam(p.applied, 'boolean')}, ${arrayParam(p.tags, 'text')},
              ${arrayParam(p.attributions, 'jsonb')})
            WITH ORDINALITY AS i(key, version, cycle_id, fetch_ok, fetch_started_at, now,
                                 applied, tag, attributions, ord)),
        target AS (
          SELECT i.*, c.row FROM input i
          CROSS JOIN LATERAL (
            SELECT c.ctid AS row FROM ${sql.identifier(table)} c
            WHERE c.id = i.key AND c.xmin::text = i.version OFFSET 0) c),
        checked AS (
          UPDATE ${sql.identifier(table)} c SET ${placeBookkeeping({
            cycleId: sql`i.cycle_id`,
            fetchOk: sql`i.fetch_ok`,
            fetchStartedAt: sql`i.fetch_started_at`,
            now: sql`i.now`,
          })}${answerColumns}
          FROM target i
          WHERE c.ctid = i.row AND c.xmin::text = i.version
            AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))
          RETURNING c.id, i.now, i.ord),
        seen_rows AS (
          SELECT w.row, k.now FROM checked k
          JOIN unnest(${arrayParam(p.seenKeys, 'text')}, ${arrayParam(p.seenWarnings, 'text')})
            AS s(key, warning_id) ON s.key = k.id
          CROSS JOIN LATERAL (
            SELECT w.ctid AS row FROM warnings w
            WHERE w.place_id = s.key AND w.warning_id = s.warning_id OFFSET 0) w),
        seen AS (
          UPDATE warnings w SET last_seen = r.now, misses = 0, last_miss_at = NULL
          FROM seen_rows r WHERE w.ctid = r.row)
        SELECT ord::int AS ord FROM checked`;
  });
}

/**
 * `quietWrites` of each table. Exported for the test that holds their generic plans
 * (test/db/quiet-check-plan.int.test.ts).
 */
export const QUIET_WRITES = {
  places: quietWrites('places'),
  alert_points: quietWrites('alert_points'),
} as const;

/**
 * The quiet checks of one process and table, their reads and their writes each many per
 * statement (a `GroupCommit` each). A quiet cycle is thousands of checks that each read one row
 * and wrote its bookkeeping, two statements apiece, and each statement costs both processes a
 * round trip whatever it carries: together they were most of a quiet cycle's CPU. A read or
 * write that finds no statement running goes at once; those that arrive while one runs go in
 * the next.
 */
export class QuietChecks {
  readonly #reads: GroupCommit<ReadRequest, CheckedRow | null>;
  readonly #writes: GroupCommit<QuietWriteRequest, boolean>;

  constructor(table: CheckedTable, run: StatementRunner) {
    this.#reads = new GroupCommit(
      async (requests) => {
        const found = new Map<number, CheckedRow>();
        const rows = await run<ReadValues, CheckedRow & { ord: number }>(
          CHECKED_READS[table],
          checkedReadValues(requests),
        );
        for (const { ord, ...row } of rows) found.set(ord, row);
        return requests.map((_, i) => found.get(i + 1) ?? null);
      },
      { maxItems: MAX_CHECKS_PER_STATEMENT },
    );
    this.#writes = new GroupCommit(
      async (requests) => {
        // A second write for a row in the same batch (a re-run beside its first run) is left
        // to the locked path, as if another check had changed the row in between.
        const first = new Map<string, number>();
        requests.forEach((r, i) => {
          if (!first.has(r.key)) first.set(r.key, i);
        });
        // In key order, as every batch locks its rows: two processes' batches that share rows
        // (a re-run) then wait for each other instead of deadlocking.
        const distinct = [...first.entries()]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, i]) => i);
        const written = await run<WriteValues, { ord: number }>(
          QUIET_WRITES[table],
          quietWriteValues(distinct.map((i) => requests[i]!)),
        );
        const applied = new Set(written.map((row) => distinct[row.ord - 1]));
        return requests.map((_, i) => applied.has(i));
      },
      { maxItems: MAX_CHECKS_PER_STATEMENT },
    );
  }

  /** The row as it is now, with its warnings seen since `windowStart`; null if it is gone. */
  read(key: string, windowStart: Date): Promise<CheckedRow | null> {
    return this.#reads.add({ key, windowStart });
  }

  /** Whether the write applied: false when the row is no longer the version read. */
  write(request: QuietWriteRequest): Promise<boolean> {
    return this.#writes.add(request);
  }
}

/** Most checks one statement carries: a process runs CHECK_CONCURRENCY of them at a time. */
const MAX_CHECKS_PER_STATEMENT = 100;

const quietChecks = new WeakMap<PipelineContext, Record<CheckedTable, QuietChecks>>();

/** The process's quiet checks of `table`: one per pipeline context, so its checks share statements. */
export function quietChecksFor(ctx: PipelineContext, table: CheckedTable): QuietChecks {
  let checks = quietChecks.get(ctx);
  if (!checks) {
    checks = {
      places: new QuietChecks('places', runOn(ctx.db)),
      alert_points: new QuietChecks('alert_points', runOn(ctx.db)),
    };
    quietChecks.set(ctx, checks);
  }
  return checks[table];
}
