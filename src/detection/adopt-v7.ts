import { sql } from 'drizzle-orm';
import type { Point } from '../domain/points.js';
import type { Tx } from '../db/client.js';

/**
 * The pipeline side of the v7 → v1 handover (docs/configuration.md, docs/design.md invariant 10). At its first
 * applied v1 check, a point takes over the warnings still open from v7 at the places whose
 * subscriptions watch it: copied into the point's tracked warnings under their v7 ids, as last
 * seen now. From then on detection at the point treats them like its own: a v1 alert that
 * continues one is matched to it (src/domain/handover.ts) and announces nothing; one that no
 * alert continues ends by the usual miss rule and is told as `expired` under the id the
 * subscribers know. Once per point (`alert_points.v7_adopted_at`), and nothing to copy on an
 * installation that never polled v7.
 */
export async function adoptV7Warnings(
  tx: Tx,
  point: Point,
  placeIds: readonly string[],
  now: Date,
): Promise<void> {
  if (placeIds.length > 0) {
    await tx.execute(sql`
      INSERT INTO warnings (place_id, warning_id, state, title, level, type_code, type_name,
        status, start_time, end_time, record, raw, first_seen, last_seen, misses, closed_at,
        occurrence)
      SELECT ${point.key}, w.warning_id, w.state, w.title, w.level, w.type_code, w.type_name,
        w.status, w.start_time, w.end_time, w.record, w.raw, w.first_seen, ${now}, 0, NULL,
        w.occurrence
      FROM warnings w
      WHERE w.place_id = ANY(${sql.param([...new Set(placeIds)])}::text[])
        AND w.state = 'open' AND w.record->>'source' = 'v7'
      ON CONFLICT (place_id, warning_id) DO NOTHING`);
  }
  await tx.execute(sql`UPDATE alert_points SET v7_adopted_at = ${now} WHERE id = ${point.key}`);
}
