import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { queryRows } from '../db/client.js';
import { pollCycles } from '../db/schema.js';
import { scrub, type Logger } from '../logger.js';
import { UpstreamCircuitOpenError } from '../ops/upstream.js';
import { DeprecatedEndpointError } from '../qweather/errors.js';
import type { PipelineContext } from '../runtime/context.js';
import { catchUpLateJoiners } from './catch-up.js';
import { logSkippedRecords } from '../detection/check-outcome.js';
import { releaseCycleMessages } from '../ledger/index.js';
import { pointsToCheck } from '../detection/poll-points.js';
import { checkJobId } from '../runtime/queues.js';
import {
  clearRetirementEvidence,
  currentSource,
  isV7Retirement,
  weighRetirement,
  type PolledSource,
} from '../detection/upstream-source.js';

export const POLL_JOB = 'poll';

/** Scheduler jobs carry no data; `poll --once` passes its own job key. */
export const pollPayload = z.object({ jobKey: z.string().min(1).optional() });

export type PollOutcome =
  | { ok: true; cycleId: string; source: PolledSource; listed: number; planned: number }
  | { ok: false; cycleId: string; error: string };

/**
 * Which places a cycle checks: those listed that someone watches, plus watched places that
 * still hold open warnings but left the list (to confirm their end). Nobody's unwatched place
 * costs an upstream call, unless the archive option asks for every listed place.
 */
export function planChecks(input: {
  listed: readonly string[];
  watched: ReadonlySet<string>;
  withOpenWarnings: ReadonlySet<string>;
  checkAllListed: boolean;
}): string[] {
  const listed = new Set(input.listed);
  const plan = new Set<string>();
  for (const id of listed) {
    if (input.checkAllListed || input.watched.has(id)) plan.add(id);
  }
  for (const id of input.withOpenWarnings) {
    if (!listed.has(id) && (input.checkAllListed || input.watched.has(id))) plan.add(id);
  }
  return [...plan].sort();
}

async function openCycle(
  ctx: PipelineContext,
  jobKey: string | undefined,
): Promise<{ id: string; startedAt: Date }> {
  const rows = await ctx.db
    .insert(pollCycles)
    .values({ jobKey: jobKey ?? null, startedAt: ctx.now() })
    // A retried poll job finds the cycle it already opened.
    .onConflictDoUpdate({ target: pollCycles.jobKey, set: { status: 'running' } })
    .returning({ id: pollCycles.id, startedAt: pollCycles.startedAt });
  return rows[0]!;
}

/** The poll job: one warning-list call, then one check job per place that needs it. */
export async function runPoll(
  ctx: PipelineContext,
  payload: z.infer<typeof pollPayload>,
): Promise<PollOutcome> {
  const cycle = await openCycle(ctx, payload.jobKey);
  const cycleId = cycle.id;
  // Every check carries it: a miss counts only in a cycle begun after the warning was last seen.
  const cycleStartedAt = cycle.startedAt.toISOString();
  const log = ctx.logger.child({ job: POLL_JOB, cycleId });
  const source = await currentSource(ctx.db, ctx.config);
  if (source === 'v1') {
    return pollPoints(ctx, log, cycle, { listCalls: 0, listErrors: 0 });
  }

  let listedIds: string[];
  let listSkipped: number;
  try {
    const list = await ctx.upstream.warningList({ range: ctx.config.warningRange });
    listedIds = [...new Set(list.locationIds)];
    listSkipped = list.skipped.length;
    logSkippedRecords(log, list.skipped);
    ctx.onUpstreamResult?.('warningList', null);
    if (ctx.config.qweather.alertSource === 'auto') await clearRetirementEvidence(ctx.db);
  } catch (err) {
    const auto = ctx.config.qweather.alertSource === 'auto';
    const retired = auto && isV7Retirement(err);
    if (retired) {
      // QWeather retired v7: after three cycles in a row saying so, the deployment follows it
      // to v1 (docs/configuration.md), and this cycle polls v1 at once rather than failing. Not
      // reported as an upstream failure: health and the call gate would hold back the v1 calls
      // that replace it, or the v7 calls of the cycles that must confirm it.
      const switched = await weighRetirement(ctx.db, log, {
        cycleId,
        operation: 'warningList',
        err,
        now: ctx.now(),
      });
      if (switched) return pollPoints(ctx, log, cycle, { listCalls: 1, listErrors: 1 });
    } else {
      if (auto) await clearRetirementEvidence(ctx.db);
      ctx.onUpstreamResult?.('warningList', err);
    }
    const message = scrub(err instanceof Error ? err.message : String(err));
    // A call held back by the circuit never reached the upstream: it is not counted as one.
    const called = err instanceof UpstreamCircuitOpenError ? 0 : 1;
    await ctx.db.execute(sql`
      UPDATE poll_cycles SET status = 'failed', finished_at = ${ctx.now()}, error = ${message},
        source = 'v7',
        upstream_calls = upstream_calls + ${called}, upstream_errors = upstream_errors + ${called}
      WHERE id = ${cycleId}`);
    if (retired) {
      log.info({ operation: 'warningList' }, 'warning list answered as retired');
    } else if (err instanceof DeprecatedEndpointError) {
      // The endpoint will not come back: one line that tells the operator what to do.
      log.error({ operation: 'warningList', hint: err.hint }, `v7 endpoint retired: ${err.hint}`);
    } else if (err instanceof UpstreamCircuitOpenError) {
      // Held back (src/ops/upstream.ts): the failure that opened the circuit was logged already.
      log.debug({ err }, 'warning list held back');
    } else {
      log.error({ err }, 'warning list failed');
    }
    return { ok: false, cycleId, error: message };
  }

  const watchedRows = await queryRows<{ place_id: string; english: boolean }>(
    ctx.db,
    sql`SELECT s.place_id, bool_or(u.lang = 'en' AND u.unsubscribed_at IS NULL) AS english
        FROM subscriptions s
        JOIN subscribers u ON u.id = s.subscriber_id WHERE u.active
        GROUP BY s.place_id`,
  );
  // Asked in English too where English subscribers watch (README, promises).
  const english = new Set(watchedRows.filter((r) => r.english).map((r) => r.place_id));
  const openRows = await queryRows<{ place_id: string }>(
    ctx.db,
    sql`SELECT DISTINCT place_id FROM warnings WHERE state = 'open'`,
  );
  const plan = planChecks({
    listed: listedIds,
    watched: new Set(watchedRows.map((r) => r.place_id)),
    withOpenWarnings: new Set(openRows.map((r) => r.place_id)),
    checkAllListed: ctx.config.checkAllListed,
  });

  if (ctx.config.checkAllListed && plan.length > 0) {
    // The archive keeps places nobody watches; they need a row to hold their check state.
    await ctx.db.execute(sql`
      INSERT INTO places (id, name)
      SELECT id, id FROM unnest(${sql.param(plan)}::text[]) AS t(id)
      ON CONFLICT (id) DO NOTHING`);
  }

  return startChecks(ctx, log, cycleId, {
    source: 'v7',
    listed: listedIds.length,
    listCalls: 1,
    listErrors: 0,
    skippedRecords: listSkipped,
    checks: plan.map((placeId) => ({
      key: placeId,
      data: {
        cycleId,
        placeId,
        cycleStartedAt,
        ...(english.has(placeId) ? { english: true } : {}),
      },
    })),
  });
}

/** The v1 side of a cycle: no list; every watched point is checked (src/detection/poll-points.ts). */
async function pollPoints(
  ctx: PipelineContext,
  log: Logger,
  cycle: { id: string; startedAt: Date },
  list: { listCalls: number; listErrors: number },
): Promise<PollOutcome> {
  const { points, english } = await pointsToCheck(ctx, log);
  const cycleStartedAt = cycle.startedAt.toISOString();
  // `listed` stays 0: every upstream call of a v1 cycle is a point check.
  return startChecks(ctx, log, cycle.id, {
    source: 'v1',
    listed: 0,
    ...list,
    checks: points.map((pointId) => ({
      key: pointId,
      data: {
        cycleId: cycle.id,
        pointId,
        cycleStartedAt,
        ...(english.has(pointId) ? { english: true } : {}),
      },
    })),
  });
}

/** Records the cycle's plan and enqueues one check per place or point (v7 and v1 alike). */
async function startChecks(
  ctx: PipelineContext,
  log: Logger,
  cycleId: string,
  plan: {
    source: PolledSource;
    listed: number;
    listCalls: number;
    listErrors: number;
    skippedRecords?: number;
    checks: { key: string; data: object }[];
  },
): Promise<PollOutcome> {
  const planned = plan.checks.length;
  const finished = planned === 0;
  await ctx.db.execute(sql`
    UPDATE poll_cycles SET listed = ${plan.listed}, planned = ${planned},
      upstream_calls = upstream_calls + ${plan.listCalls},
      upstream_errors = upstream_errors + ${plan.listErrors}, source = ${plan.source},
      skipped_records = skipped_records + ${plan.skippedRecords ?? 0},
      status = ${finished ? 'done' : 'running'},
      finished_at = ${finished ? ctx.now() : null}
    WHERE id = ${cycleId}`);
  // Before the checks: a warning this cycle finds ended is then told to a late joiner as in
  // force first, then as ended, never the end of a story they were not told.
  const caughtUp = await catchUpLateJoiners(ctx, log, { cycleId, source: plan.source });
  // With no check to finish it, the cycle's own messages are done collecting now.
  if (finished && caughtUp.count > 0) await releaseCycleMessages(ctx, cycleId);
  await ctx.queues.check.addBulk(
    plan.checks.map((check) => ({
      name: 'check',
      data: check.data,
      opts: { jobId: checkJobId(cycleId, check.key) },
    })),
  );
  log.info({ source: plan.source, listed: plan.listed, planned }, 'cycle planned');
  return { ok: true, cycleId, source: plan.source, listed: plan.listed, planned };
}
