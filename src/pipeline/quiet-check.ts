import { sql, type SQL } from 'drizzle-orm';
import { queryPrepared } from '../db/client.js';
import {
  detectChanges,
  type DetectSettings,
  type FetchOutcome,
  type TrackedWarning,
} from '../domain/detect.js';
import { emptyOutcome, isStale, type CheckOutcome } from './check-outcome.js';
import type { PipelineContext } from './context.js';
import { GroupCommit } from './group-commit.js';
import { toTracked, type WarningRow } from './warning-store.js';

/**
 * What every applied check writes to its place row, quiet or not: the cycle that checked it
 * (a re-run of that cycle's check is then a no-op), the newest fetch start, and the last good
 * answer's time. The SET list of an UPDATE of `places` (aliased `p`), from SQL expressions so
 * that one check's parameters and a batch's columns say it the same way.
 */
export function placeBookkeeping(check: {
  cycleId: SQL;
  fetchOk: SQL;
  fetchStartedAt: SQL;
  now: SQL;
}): SQL {
  return sql`last_cycle_id = ${check.cycleId},
    last_fetched_at = GREATEST(p.last_fetched_at, ${check.fetchStartedAt}),
    last_ok_at = CASE WHEN ${check.fetchOk} THEN ${check.now} ELSE p.last_ok_at END`;
}

/** The place's row version (`xmin`) and the warnings tracked there, as one read saw them. */
export interface PlaceRead {
  version: string;
  tracked: TrackedWarning[];
}

/** One check's read: its place, and the warnings seen there since `windowStart`. */
interface ReadRequest {
  placeId: string;
  windowStart: Date;
}

interface ReadRow {
  ord: number;
  version: string;
  last_cycle_id: string | null;
  last_fetched_at: Date | null;
  tracked: WarningRow[] | null;
}

/**
 * An array parameter, read as a statement of its own (an InitPlan). Postgres estimates the rows
 * of `unnest` over a known array by its length: a custom plan of a few checks then always
 * costed less than the generic plan, which assumes ten, and every batch was planned anew. Behind
 * a sub-select the array is unknown to both, so they cost the same and the generic plan stays.
 */
function arrayParam(values: readonly unknown[], type: string): SQL {
  return sql`(SELECT ${sql.param(values)}::${sql.raw(type)}[])`;
}

/**
 * The reads of many checks' places in one statement, a row per request that found its place
 * (`ord`, from 1, says which). Each place and its warnings are looked up by key whatever the
 * plan: a lateral lookup behind OFFSET 0 cannot be flattened into a join that hashes every
 * place. Exported for the test that holds its generic plan to index lookups
 * (test/db/quiet-check-plan.int.test.ts).
 */
export function placeReads(requests: readonly ReadRequest[]): SQL {
  const placeIds = arrayParam(
    requests.map((r) => r.placeId),
    'text',
  );
  const windowStarts = arrayParam(
    requests.map((r) => r.windowStart.toISOString()),
    'timestamptz',
  );
  return sql`SELECT i.ord::int AS ord, p.version, p.last_cycle_id, p.last_fetched_at, p.tracked
        FROM unnest(${placeIds}, ${windowStarts})
          WITH ORDINALITY AS i(place_id, window_start, ord)
        CROSS JOIN LATERAL (
          SELECT p.xmin::text AS version, p.last_cycle_id, p.last_fetched_at,
            (SELECT json_agg(json_build_object(
                'warning_id', w.warning_id, 'state', w.state, 'record', w.record, 'raw', w.raw,
                'first_seen', w.first_seen, 'last_seen', w.last_seen, 'misses', w.misses,
                'closed_at', w.closed_at))
             FROM warnings w WHERE w.place_id = p.id AND w.last_seen > i.window_start) AS tracked
          FROM places p WHERE p.id = i.place_id OFFSET 0) p`;
}

/** One quiet check's write: its bookkeeping, and the warnings it saw, if its place is `version`. */
export interface QuietWriteRequest {
  cycleId: string;
  placeId: string;
  fetchOk: boolean;
  fetchStartedAt: Date;
  now: Date;
  version: string;
  seen: readonly string[];
}

/**
 * Many quiet checks' writes in one statement: each place's bookkeeping and the last-seen times
 * of the warnings its check saw, applied only to a place row that is still the version its
 * check read. Returns the `ord` (from 1) of each request applied. The places must be distinct:
 * one row cannot take two checks' writes in one statement. Bookkeeping only, so no wait for the
 * WAL flush (as in the locked path). Each row to update is found by key first and then updated
 * by its address (`ctid`): a join of the requests with the table may be planned as a hash of the
 * whole table. A row another transaction updated meanwhile is left alone: its new version has
 * another address and another `xmin`. Exported for the test that holds its generic plan
 * (test/db/quiet-check-plan.int.test.ts).
 */
export function quietWrites(requests: readonly QuietWriteRequest[]): SQL {
  const column = (pick: (r: QuietWriteRequest) => unknown, type: string) =>
    arrayParam(requests.map(pick), type);
  const seenPlaces = arrayParam(
    requests.flatMap((r) => r.seen.map(() => r.placeId)),
    'text',
  );
  const seenWarnings = arrayParam(
    requests.flatMap((r) => r.seen),
    'text',
  );
  return sql`WITH input AS (
          SELECT * FROM unnest(${column((r) => r.placeId, 'text')},
              ${column((r) => r.version, 'text')}, ${column((r) => r.cycleId, 'uuid')},
              ${column((r) => r.fetchOk, 'boolean')},
              ${column((r) => r.fetchStartedAt.toISOString(), 'timestamptz')},
              ${column((r) => r.now.toISOString(), 'timestamptz')})
            WITH ORDINALITY AS i(place_id, version, cycle_id, fetch_ok, fetch_started_at, now, ord)),
        target AS (
          SELECT i.*, p.row FROM input i
          CROSS JOIN LATERAL (
            SELECT p.ctid AS row FROM places p
            WHERE p.id = i.place_id AND p.xmin::text = i.version OFFSET 0) p),
        place AS (
          UPDATE places p SET ${placeBookkeeping({
            cycleId: sql`i.cycle_id`,
            fetchOk: sql`i.fetch_ok`,
            fetchStartedAt: sql`i.fetch_started_at`,
            now: sql`i.now`,
          })}
          FROM target i
          WHERE p.ctid = i.row AND p.xmin::text = i.version
            AND EXISTS (SELECT set_config('synchronous_commit', 'off', true))
          RETURNING p.id, i.now, i.ord),
        seen_rows AS (
          SELECT w.row, pl.now FROM place pl
          JOIN unnest(${seenPlaces}, ${seenWarnings}) AS s(place_id, warning_id)
            ON s.place_id = pl.id
          CROSS JOIN LATERAL (
            SELECT w.ctid AS row FROM warnings w
            WHERE w.place_id = s.place_id AND w.warning_id = s.warning_id OFFSET 0) w),
        seen AS (
          UPDATE warnings w SET last_seen = r.now, misses = 0
          FROM seen_rows r WHERE w.ctid = r.row)
        SELECT ord::int AS ord FROM place`;
}

/** What a batch read found for one check: null when its place is gone. */
type PlaceFound = Omit<ReadRow, 'ord'> | null;

/**
 * The quiet checks of one process, their reads and their writes each many per statement (a
 * `GroupCommit` each). A quiet cycle is thousands of checks that each read one place and wrote
 * its bookkeeping, two statements apiece, and each statement costs both processes a round trip
 * whatever it carries: together they were most of a quiet cycle's CPU. A read or write that
 * finds no statement running goes at once; those that arrive while one runs go in the next.
 */
export class QuietChecks {
  readonly #reads: GroupCommit<ReadRequest, PlaceFound>;
  readonly #writes: GroupCommit<QuietWriteRequest, boolean>;

  constructor(execute: <T>(query: SQL) => Promise<T[]>) {
    this.#reads = new GroupCommit(
      async (requests) => {
        const found = new Map<number, ReadRow>();
        for (const row of await execute<ReadRow>(placeReads(requests))) found.set(row.ord, row);
        return requests.map((_, i) => {
          const row = found.get(i + 1);
          if (!row) return null;
          const { ord: _ord, ...place } = row;
          return place;
        });
      },
      { maxItems: MAX_CHECKS_PER_STATEMENT },
    );
    this.#writes = new GroupCommit(
      async (requests) => {
        // A second write for a place in the same batch (a re-run beside its first run) is left
        // to the locked path, as if another check had changed the row in between.
        const first = new Map<string, number>();
        requests.forEach((r, i) => {
          if (!first.has(r.placeId)) first.set(r.placeId, i);
        });
        // In key order, as every batch locks its rows: two processes' batches that share places
        // (a re-run) then wait for each other instead of deadlocking.
        const distinct = [...first.entries()]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, i]) => i);
        const applied = new Set(
          (await execute<{ ord: number }>(quietWrites(distinct.map((i) => requests[i]!)))).map(
            (row) => distinct[row.ord - 1],
          ),
        );
        return requests.map((_, i) => applied.has(i));
      },
      { maxItems: MAX_CHECKS_PER_STATEMENT },
    );
  }

  /** The place as it is now, with its warnings seen since `windowStart`; null if it is gone. */
  read(placeId: string, windowStart: Date): Promise<PlaceFound> {
    return this.#reads.add({ placeId, windowStart });
  }

  /** Whether the write applied: false when the place row is no longer the version read. */
  write(request: QuietWriteRequest): Promise<boolean> {
    return this.#writes.add(request);
  }
}

/** Most checks one statement carries: a process runs CHECK_CONCURRENCY of them at a time. */
const MAX_CHECKS_PER_STATEMENT = 100;

const quietChecks = new WeakMap<PipelineContext, QuietChecks>();

/** The process's quiet checks: one per pipeline context, so its checks share statements. */
function quietChecksFor(ctx: PipelineContext): QuietChecks {
  let checks = quietChecks.get(ctx);
  if (!checks) {
    checks = new QuietChecks((query) => queryPrepared(ctx.db, query));
    quietChecks.set(ctx, checks);
  }
  return checks;
}

/**
 * Most checks change nothing: the answer holds the warnings already stored, or the call failed.
 * Such a check reads the place and its tracked warnings without a lock, and writes its
 * bookkeeping (last-seen times, the place's cycle and fetch times) only if the place row is
 * still the version it read (`xmin`), each with other checks of the process in one statement
 * (`QuietChecks`). Every check that writes warnings also updates its place row, so another
 * check in between makes the write a no-op and this returns `read: null`: the locked
 * transaction then does the check as before. When the answer changes anything it returns what
 * it read, which saves a locked check that finds the same row version a second read.
 */
export async function applyQuietCheck(
  ctx: PipelineContext,
  input: {
    cycleId: string;
    placeId: string;
    fetch: FetchOutcome;
    fetchStartedAt: Date;
    now: Date;
    settings: DetectSettings;
  },
): Promise<{ outcome: CheckOutcome } | { read: PlaceRead | null }> {
  const { cycleId, placeId, fetch, fetchStartedAt, now, settings } = input;
  const checks = quietChecksFor(ctx);
  const place = await checks.read(placeId, new Date(now.getTime() - settings.reappearWindowMs));
  if (!place) return { read: null };
  const result = emptyOutcome(fetch.ok);
  if (place.last_cycle_id === cycleId) return { outcome: { ...result, applied: false } };
  const tracked = (place.tracked ?? []).map(toTracked);
  const read = { version: place.version, tracked };
  let seen: string[] = [];
  if (fetch.ok && !isStale(place.last_fetched_at, fetchStartedAt)) {
    const detected = detectChanges({ tracked, fetch, now, settings });
    if (detected.events.length > 0 || detected.changes.length > 0) return { read };
    seen = detected.seen;
  }
  const applied = await checks.write({
    cycleId,
    placeId,
    fetchOk: fetch.ok,
    fetchStartedAt,
    now,
    version: place.version,
    seen,
  });
  return applied ? { outcome: result } : { read: null };
}
