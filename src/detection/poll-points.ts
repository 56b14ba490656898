import { sql } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import type { Db } from '../db/client.js';
import { parsePointKey, subscriptionPointKeys, type V1PointsMode } from '../domain/points.js';
import type { Logger } from '../logger.js';
import type { PipelineContext } from '../runtime/context.js';

/**
 * The v1 side of a poll cycle (QWEATHER_ALERT_SOURCE=v1, or auto once v7 is retired). v1 has no "locations with alerts"
 * list, so every watched point is checked every cycle; points are shared, so the cost is one
 * call per distinct point, however many subscribers watch it.
 */
export async function watchedPoints(
  db: Db,
  mode: V1PointsMode,
): Promise<{
  points: string[];
  /** The points English subscribers watch: asked in English too (README, promises). */
  english: Set<string>;
  /** Active subscriptions that cannot be watched in v1: their place has no coordinates. */
  withoutCoordinates: number;
}> {
  const rows = await queryRows<{
    points: string[] | null;
    place_id: string;
    country: string | null;
    lat: number | null;
    lon: number | null;
    english: boolean;
  }>(
    db,
    sql`SELECT s.points, s.place_id, p.country, p.lat, p.lon,
          (u.lang = 'en' AND u.unsubscribed_at IS NULL) AS english
        FROM subscriptions s
        JOIN subscribers u ON u.id = s.subscriber_id
        LEFT JOIN places p ON p.id = s.place_id
        WHERE u.active`,
  );
  const points = new Set<string>();
  const english = new Set<string>();
  let withoutCoordinates = 0;
  for (const row of rows) {
    const keys = subscriptionPointKeys(row, row.points, mode);
    if (keys.length === 0) withoutCoordinates += 1;
    for (const key of keys) {
      points.add(key);
      if (row.english) english.add(key);
    }
  }
  return { points: [...points].sort(), english, withoutCoordinates };
}

/**
 * The points a v1 cycle checks: every watched point, each with its `alert_points` row (which
 * holds the point's check state). Subscriptions that cannot be watched are reported once.
 */
export async function pointsToCheck(
  ctx: PipelineContext,
  log: Logger,
): Promise<{ points: string[]; english: Set<string> }> {
  const { points, english, withoutCoordinates } = await watchedPoints(
    ctx.db,
    ctx.config.qweather.v1Points,
  );
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
  return { points, english };
}
