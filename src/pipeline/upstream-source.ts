import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { DeprecatedEndpointError, isRetiredEndpoint } from '../qweather/errors.js';

/**
 * Which warning API the deployment polls (INTERFACE §10). `QWEATHER_ALERT_SOURCE=v7` or `v1`
 * decides alone; under `auto` (the default) it is v7 until QWeather retires the v7 warning
 * endpoints, then v1 for good. The switch is a row in Postgres, so every worker process and
 * every `poll --once` follow it from their next cycle, and a restart does not forget it.
 */
export type PolledSource = 'v7' | 'v1';

export async function currentSource(db: Db, config: Config): Promise<PolledSource> {
  const configured = config.qweather.alertSource;
  if (configured !== 'auto') return configured;
  const rows = await queryRows<{ source: PolledSource }>(
    db,
    sql`SELECT source FROM upstream_source`,
  );
  return rows[0]?.source ?? 'v7';
}

/** A v7 warning call found the endpoint gone (src/qweather/errors.ts). */
export const isV7Retirement = isRetiredEndpoint;

/** Records the switch to v1; only the process that records it logs it (once per deployment). */
export async function switchToV1(
  db: Db,
  log: Logger,
  input: { operation: string; err: unknown; now: Date },
): Promise<void> {
  const answer =
    input.err instanceof DeprecatedEndpointError ? '403 Deprecated' : `HTTP 404 (path gone)`;
  const reason = `${input.operation} answered ${answer}`;
  const recorded = await queryRows<{ switched_at: Date }>(
    db,
    sql`INSERT INTO upstream_source (singleton, source, switched_at, reason)
        VALUES (true, 'v1', ${input.now}, ${reason})
        ON CONFLICT (singleton) DO NOTHING RETURNING switched_at`,
  );
  if (recorded.length === 0) return;
  log.warn(
    {
      operation: input.operation,
      reason,
      source: 'v1',
      meaning:
        'QWeather retired the v7 warning endpoints. Every worker now polls Weather Alert v1 at ' +
        'every watched point each cycle (no list call, so more calls: see `qwn plan`); warnings ' +
        'already announced from v7 continue under their ids and are not announced again.',
    },
    'upstream source switched to v1',
  );
}
