import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { DeprecatedEndpointError, isRetiredEndpoint } from '../qweather/errors.js';

/**
 * Which warning API the deployment polls (docs/configuration.md). `QWEATHER_ALERT_SOURCE=v7` or `v1`
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

/**
 * Cycles in a row whose v7 warning calls must say the endpoint is retired before `auto` follows
 * (README, promises): one odd answer, a proxy's page or a bad hour never moves a deployment.
 */
export const RETIREMENT_CYCLES = 3;

function answerOf(err: unknown): string {
  return err instanceof DeprecatedEndpointError ? '403 Deprecated' : 'HTTP 404 (problem+json)';
}

/**
 * Counts this cycle's evidence that v7 is retired (once per cycle, whichever call saw it) and
 * returns the cycles in a row that have had some.
 */
export async function recordRetirementEvidence(
  db: Db,
  input: { cycleId: string; operation: string; err: unknown; now: Date },
): Promise<number> {
  const reason = `${input.operation} answered ${answerOf(input.err)}`;
  const [row] = await queryRows<{ cycles: number }>(
    db,
    sql`INSERT INTO v7_retirement AS r (singleton, cycles, last_cycle_id, first_seen_at, reason)
        VALUES (true, 1, ${input.cycleId}, ${input.now}, ${reason})
        ON CONFLICT (singleton) DO UPDATE SET
          cycles = CASE WHEN r.last_cycle_id = excluded.last_cycle_id THEN r.cycles
                        ELSE r.cycles + 1 END,
          last_cycle_id = excluded.last_cycle_id, reason = excluded.reason
        RETURNING cycles`,
  );
  return row?.cycles ?? 1;
}

/** A cycle whose list call answered anything but retirement ends the streak. */
export async function clearRetirementEvidence(db: Db): Promise<void> {
  await db.execute(sql`DELETE FROM v7_retirement`);
}

/**
 * What a v7 warning call that answered "retired" means under `auto`: one more cycle of evidence,
 * and the switch to v1 once there are `RETIREMENT_CYCLES` in a row. Returns whether the
 * deployment now polls v1.
 */
export async function weighRetirement(
  db: Db,
  log: Logger,
  input: { cycleId: string; operation: string; err: unknown; now: Date },
): Promise<boolean> {
  const cycles = await recordRetirementEvidence(db, input);
  if (cycles < RETIREMENT_CYCLES) {
    log.warn(
      {
        operation: input.operation,
        cycles,
        needed: RETIREMENT_CYCLES,
        answer: answerOf(input.err),
      },
      'v7 answered as retired',
    );
    return false;
  }
  await switchToV1(db, log, input);
  return true;
}

/** Records the switch to v1; only the process that records it logs it (once per deployment). */
export async function switchToV1(
  db: Db,
  log: Logger,
  input: { operation: string; err: unknown; now: Date },
): Promise<void> {
  const reason = `${input.operation} answered ${answerOf(input.err)} in ${RETIREMENT_CYCLES} cycles in a row`;
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
