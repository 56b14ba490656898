import { sql } from 'drizzle-orm';
import type { FetchOutcome } from '../domain/detect.js';
import { continueHandedOver } from '../domain/handover.js';
import type { Point, V1PointsMode } from '../domain/points.js';
import { UpstreamCircuitOpenError } from '../ops/upstream.js';
import { adoptV7Warnings } from './adopt-v7.js';
import { inEnglishToo, logSkippedRecords } from './check-outcome.js';
import type { CheckSubject } from './check-subject.js';
import {
  statesElsewhere,
  subscriptionsAt,
  subscriptionsNear,
  watchesPoint,
  type PointSubscriptionRow,
} from './point-subscriptions.js';

const OPERATION = 'weatherAlert';

/**
 * A v1 point (QWEATHER_ALERT_SOURCE=v1, or auto once v7 is retired): `GET /weatheralert/v1/
 * current/{lat}/{lon}`, in the point's local times, told to the subscriptions that watch it.
 *
 * One alert id is returned at every point of its area, so alerts are tracked per point (each
 * point's misses and chain links are its own) while notifications are keyed per subscriber: the
 * ledger's unique (subscriber, warning id, event type) makes the second point that reports an
 * alert to the same subscriber a no-op, and an alert ends for a subscriber when it is over at
 * every point they watch (docs/v1.md).
 */
export function pointSubject(point: Point, mode: V1PointsMode): CheckSubject<PointSubscriptionRow> {
  const call = (ctx: Parameters<CheckSubject['fetch']>[0], lang?: 'en') =>
    // Times with the point's own offset: what a subscriber there reads on the message.
    ctx.upstream.weatherAlert({ lat: point.lat, lon: point.lon, localTime: true, lang });
  return {
    table: 'alert_points',
    key: point.key,
    logFields: { pointId: point.key },
    said: 'alerts checked',

    async fetch(ctx, log, request) {
      try {
        const result = await call(ctx);
        let fetch: FetchOutcome = {
          ok: true,
          warnings: result.alerts,
          skipped: result.skipped.length,
        };
        logSkippedRecords(log, result.skipped);
        if (request.english) {
          fetch = await inEnglishToo(
            ctx,
            log,
            fetch,
            OPERATION,
            async () => (await call(ctx, 'en')).alerts,
          );
        }
        ctx.onUpstreamResult?.(OPERATION, null);
        return {
          fetch,
          answer: { tag: result.tag, attributions: result.attributions },
          englishCalls: request.english ? 1 : 0,
        };
      } catch (err) {
        // docs/design.md invariant 3: a failed call says nothing; the stored state stays as it was.
        ctx.onUpstreamResult?.(OPERATION, err);
        // Held back by the upstream circuit (src/ops/upstream.ts): the refusal that opened it
        // was logged when it happened, and a line per point per cycle would bury it.
        if (err instanceof UpstreamCircuitOpenError) log.debug({ err }, 'alert check held back');
        else log.warn({ err }, 'alert check failed');
        return { fetch: { ok: false }, answer: null, englishCalls: 0 };
      }
    },

    // Alerts that continue a warning told from v7 carry its id (src/domain/handover.ts).
    continuing: continueHandedOver,
    mustAdopt: (row) => !row.v7_adopted_at,
    // The first applied v1 answer here takes over what v7 left open (src/detection/adopt-v7.ts).
    async adopt(tx, now) {
      const watching = await subscriptionsAt(tx, point, mode);
      await adoptV7Warnings(
        tx,
        point,
        watching.map((sub) => sub.place_id),
        now,
      );
    },
    // The poll creates the row; a check enqueued by an older cycle may find none yet.
    async createRow(tx) {
      await tx.execute(sql`
        INSERT INTO alert_points (id, lat, lon)
        VALUES (${point.key}, ${point.lat}, ${point.lon})
        ON CONFLICT (id) DO NOTHING`);
      return true;
    },

    watchers: () => subscriptionsNear(point),
    watches: (row) => watchesPoint(row, point, mode),
    statesElsewhere: (tx, alertIds, subscriberIds) =>
      statesElsewhere(tx, point, alertIds, subscriberIds, mode),
    reportedElsewhere: (cycleId, alertIds) =>
      sql`SELECT DISTINCT warning_id, type, occurrence FROM events
          WHERE cycle_id = ${cycleId} AND place_id <> ${point.key}
            AND warning_id = ANY(${sql.param([...alertIds])}::text[])`,
  };
}
