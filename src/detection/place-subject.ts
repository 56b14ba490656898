import { sql } from 'drizzle-orm';
import { queryPrepared } from '../db/client.js';
import type { FetchOutcome, TrackedState } from '../domain/detect.js';
import {
  KNOWN_SUBSCRIBER_COLUMNS,
  SUBSCRIBER_DELIVERY_COLUMNS,
  SUBSCRIBER_RECEIVES,
} from '../ledger/index.js';
import { UpstreamCircuitOpenError } from '../ops/upstream.js';
import { inEnglishToo, logSkippedRecords } from './check-outcome.js';
import { subscriberWarning, type CheckSubject, type Watcher } from './check-subject.js';
import { isV7Retirement, weighRetirement } from './upstream-source.js';

const OPERATION = 'warningNow';

/**
 * A v7 place (QWEATHER_ALERT_SOURCE=v7, or auto until v7 is retired): `GET /v7/warning/now` for
 * the place's LocationID, told to the subscriptions of that place.
 */
export function placeSubject(placeId: string): CheckSubject {
  return {
    table: 'places',
    key: placeId,
    logFields: { placeId },
    said: 'warnings checked',

    async fetch(ctx, log, request) {
      try {
        const answer = await ctx.upstream.warningNow({ location: placeId });
        let fetch: FetchOutcome = {
          ok: true,
          warnings: answer.warnings,
          skipped: answer.skipped.length,
        };
        logSkippedRecords(log, answer.skipped);
        ctx.onUpstreamResult?.(OPERATION, null);
        if (!request.english) return { fetch, answer: null, englishCalls: 0 };
        fetch = await inEnglishToo(
          ctx,
          log,
          fetch,
          OPERATION,
          async () => (await ctx.upstream.warningNow({ location: placeId, lang: 'en' })).warnings,
        );
        return { fetch, answer: null, englishCalls: 1 };
      } catch (err) {
        // A failed call is never read as "the warning ended" (docs/design.md, invariant 3):
        // detection does not run, and the stored state stays as it was.
        if (ctx.config.qweather.alertSource === 'auto' && isV7Retirement(err)) {
          // QWeather retired v7 (docs/configuration.md): evidence for this cycle; after three
          // cycles in a row the next cycle polls v1.
          await weighRetirement(ctx.db, log, {
            cycleId: request.cycleId,
            operation: OPERATION,
            err,
            now: ctx.now(),
          });
        } else {
          ctx.onUpstreamResult?.(OPERATION, err);
          if (err instanceof UpstreamCircuitOpenError)
            log.debug({ err }, 'warning check held back');
          else log.warn({ err }, 'warning check failed');
        }
        return { fetch: { ok: false }, answer: null, englishCalls: 0 };
      }
    },

    continuing: (_tracked, warnings) => warnings,
    mustAdopt: () => false,
    adopt: () => Promise.resolve(),
    // The poll writes every place it lists before it enqueues the place's check.
    createRow: () => Promise.resolve(false),

    watchers: () =>
      sql`SELECT s.subscriber_id, s.place_id, s.min_level, s.types, s.events,
            ${SUBSCRIBER_DELIVERY_COLUMNS}, ${KNOWN_SUBSCRIBER_COLUMNS}
          FROM subscriptions s JOIN subscribers u ON u.id = s.subscriber_id
          LEFT JOIN places p ON p.id = s.place_id
          WHERE s.place_id = ${placeId} AND ${SUBSCRIBER_RECEIVES}
          ORDER BY s.subscriber_id`,
    watches: (_row: Watcher) => true,

    // The same v7 id at two of a subscriber's places: it ends for them when it ends at both.
    async statesElsewhere(tx, warningIds, subscriberIds) {
      const rows = await queryPrepared<{
        subscriber_id: string;
        warning_id: string;
        states: TrackedState[];
      }>(
        tx,
        sql`SELECT s.subscriber_id, w.warning_id, array_agg(w.state) AS states
            FROM warnings w
            JOIN subscriptions s ON s.place_id = w.place_id
            WHERE w.warning_id = ANY(${sql.param([...warningIds])}::text[])
              AND w.place_id <> ${placeId}
              AND s.subscriber_id = ANY(${sql.param([...subscriberIds])}::uuid[])
            GROUP BY s.subscriber_id, w.warning_id`,
      );
      return new Map(rows.map((r) => [subscriberWarning(r.subscriber_id, r.warning_id), r.states]));
    },
    reportedElsewhere: () => null,
  };
}
