import { sql } from 'drizzle-orm';
import { loadConfig } from '../config.js';
import { openPostgres, queryRows } from '../db/client.js';
import { callPlan, PRICE_SOURCE, type CallVolume } from '../domain/plan.js';
import { watchedPoints } from '../detection/poll-points.js';
import { currentSource } from '../detection/upstream-source.js';
import { parseCommandLine, UsageError } from './command.js';
import { formatTable } from './table.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn plan [--json]';

/**
 * `qwn plan` (docs/configuration.md): what the current subscriptions and settings cost upstream, in v7
 * (a quiet day and a storm that lists every watched place) and in v1, and the month's price at
 * QWeather's published tiers (src/domain/plan.ts).
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { json: { type: 'boolean' } }, 'plan');
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`takes no arguments; ${USAGE}`);
  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new UsageError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, { poolSize: 1, applicationName: 'qwn plan' });
  try {
    const [places] = await queryRows<{ n: number; english: number }>(
      database.db,
      sql`SELECT count(DISTINCT s.place_id)::int AS n,
            count(DISTINCT s.place_id) FILTER (
              WHERE u.lang = 'en' AND u.unsubscribed_at IS NULL)::int AS english
          FROM subscriptions s
          JOIN subscribers u ON u.id = s.subscriber_id WHERE u.active`,
    );
    const { points, english } = await watchedPoints(database.db, config.qweather.v1Points);
    const plan = callPlan({
      watchedPlaces: places?.n ?? 0,
      v1Points: points.length,
      englishPlaces: places?.english ?? 0,
      englishPoints: english.size,
      pollIntervalSeconds: config.pollIntervalSeconds,
      monthlyCalls: config.qweather.monthlyCalls,
    });
    const source = await currentSource(database.db, config);
    const report = {
      source,
      alertSource: config.qweather.alertSource,
      v1PointsMode: config.qweather.v1Points,
      ...plan,
      prices: PRICE_SOURCE,
    };
    if (values.json) {
      io.out(JSON.stringify(report));
      return 0;
    }
    io.out(
      [
        `source in use: ${source} (QWEATHER_ALERT_SOURCE=${config.qweather.alertSource})`,
        `watched places: ${plan.watchedPlaces}; v1 points: ${plan.v1Points} (V1_POINTS=${config.qweather.v1Points})`,
        `asked again in English (lang=en) for English subscribers: ${plan.englishPlaces} places, ${plan.englishPoints} v1 points (counted in the storm and v1 rows)`,
        `poll interval: ${plan.pollIntervalSeconds} s; v1 interval in use: ${plan.v1IntervalSeconds} s` +
          (plan.monthlyCalls === null
            ? ''
            : ` (QWEATHER_MONTHLY_CALLS=${plan.monthlyCalls.toLocaleString('en-US')})`),
        '',
        formatTable<[string, number, CallVolume]>(
          [
            ['v7 quiet', plan.pollIntervalSeconds, plan.v7Quiet],
            ['v7 storm', plan.pollIntervalSeconds, plan.v7Storm],
            ['v1', plan.v1IntervalSeconds, plan.v1],
          ],
          [
            { header: 'mode', value: ([mode]) => mode },
            { header: 'every', value: ([, every]) => `${every} s`, align: 'right' },
            { header: 'per cycle', value: ([, , v]) => count(v.perCycle), align: 'right' },
            { header: 'per day', value: ([, , v]) => count(v.perDay), align: 'right' },
            { header: 'per month', value: ([, , v]) => count(v.perMonth), align: 'right' },
            {
              header: 'month (CNY)',
              value: ([, , v]) => `${v.beyondTiers ? '≥ ' : ''}¥${count(v.costYuan)}`,
              align: 'right',
            },
          ],
        ),
        '',
        `A month is 30 days. Prices: QWeather pay-as-you-go, ${PRICE_SOURCE}.`,
        'Above the last tier or 1,000,000 calls a day, QWeather prices by agreement (sales).',
      ].join('\n'),
    );
    return 0;
  } finally {
    await database.close();
  }
}

function count(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 2 });
}
