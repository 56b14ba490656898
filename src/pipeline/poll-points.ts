import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import { parsePointKey, subscriptionPointKeys } from '../domain/points.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from './context.js';
import { checkJobId } from './queues.js';

/**
 * The v1 side of a poll cycle (QWEATHER_ALERT_SOURCE=v1). v1 has no "locations with alerts"
 * list, so every watched point is checked every cycle; points are shared, so the cost is one
 * call per distinct point, however many subscribers watch it.
 */
export async function watchedPoints(ctx: PipelineContext): Promise<{
  points: string[];
  /** Active subscriptions that cannot be watched in v1: their place has no coordinates. */
  withoutCoordinates: number;
}> {
  const rows = await queryRows<{ points: string[] | null; lat: number | null; lon: number | null }>(
    ctx.db,
    sql`SELECT s.points, p.lat, p.lon FROM subscriptions s
        JOIN subscribers u ON u.id = s.subscriber_id
        LEFT JOIN places p ON p.id = s.place_id
        WHERE u.active`,
  );
  const points = new Set<string>();
  let withoutCoordinates = 0;
  for (const row of rows) {
    const keys = subscriptionPointKeys(row, row.points);
    if (keys.length === 0) withoutCoordinates += 1;
    for (const key of keys) points.add(key);
  }
  return { points: [...points].sort(), withoutCoordinates };
}

/**
 * Plans the checks of an opened cycle: one check job per watched point, on the check queue
 * (its global rate limit is the upstream's QPM budget in either mode).
 */
export async function planPointChecks(
  ctx: PipelineContext,
  cycleId: string,
  log: Logger,
): Promise<{ ok: true; cycleId: string; listed: number; planned: number }> {
  const { points, withoutCoordinates } = await watchedPoints(ctx);
  if (withoutCoordinates > 0) {
    log.warn(
      { subscriptions: withoutCoordinates },
      'subscriptions without coordinates are not watched in v1 mode (seed them again)',
    );
  }
  if (points.length > 0) {
    const parsed = points.flatMap((key) => {
      const point = parsePointKey(key);
      return point ? [point] : [];
    });
    await ctx.db.execute(sql`
      INSERT INTO alert_points (id, lat, lon)
      SELECT * FROM unnest(${sql.param(parsed.map((p) => p.key))}::text[],
                           ${sql.param(parsed.map((p) => p.lat))}::float8[],
                           ${sql.param(parsed.map((p) => p.lon))}::float8[])
      ON CONFLICT (id) DO NOTHING`);
  }

  const finished = points.length === 0;
  // No list call in v1: `listed` stays 0 and every upstream call is a point check.
  await ctx.db.execute(sql`
    UPDATE poll_cycles SET listed = 0, planned = ${points.length},
      status = ${finished ? 'done' : 'running'},
      finished_at = ${finished ? ctx.now() : null}
    WHERE id = ${cycleId}`);
  await ctx.queues.check.addBulk(
    points.map((pointId) => ({
      name: 'check',
      data: { cycleId, pointId },
      opts: { jobId: checkJobId(cycleId, pointId) },
    })),
  );
  log.info({ points: points.length }, 'cycle planned');
  return { ok: true, cycleId, listed: 0, planned: points.length };
}
