import { loadConfig, type Config } from '../config.js';
import { createLogger } from '../logger.js';
import { createClientFromConfig, type QWeatherClient } from '../qweather/client.js';
import { ParameterError, QWeatherError } from '../qweather/errors.js';
import type { Place } from '../qweather/normalize.js';
import { UsageError } from './command.js';
import type { CliIo } from './io.js';
import { formatTable, type Column } from './table.js';

/** What the upstream-facing commands (lookup, top, poi, warnings) share. */

/** "--number 5" → 5; anything else becomes NaN, which the client's check then names. */
export function numberOption(value: string | boolean | undefined): number | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  return /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
}

export function stringOption(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Builds the client from the environment, runs `body`, and closes the client. A ParameterError
 * is a usage mistake (exit 2); an upstream failure is one line on stderr (exit 1).
 */
export async function withClient(
  command: string,
  io: CliIo,
  body: (client: QWeatherClient, config: Config) => Promise<number>,
): Promise<number> {
  const config = loadConfig(io.env);
  if (!config.qweather.apiUrl) {
    throw new UsageError(
      'QWEATHER_API_URL is not set: point it at your QWeather API host (or at `qwn simulate`)',
    );
  }
  // Logs go to stderr so that stdout stays a clean table or JSON; below debug the one error
  // line printed here says everything a person needs.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const logger = createLogger(verbose ? config.logLevel : 'silent', io.logs);
  let client: QWeatherClient;
  try {
    client = createClientFromConfig(config, logger);
  } catch (err) {
    if (err instanceof ParameterError) throw new UsageError(err.message);
    throw err;
  }
  try {
    return await body(client, config);
  } catch (err) {
    if (err instanceof ParameterError) throw new UsageError(err.message);
    if (err instanceof QWeatherError) {
      io.err(`qwn ${command}: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await client.close();
  }
}

const coordinate = (value: number) => value.toFixed(4);

export const PLACE_COLUMNS: readonly Column<Place>[] = [
  { header: 'id', value: (p) => p.id },
  { header: 'name', value: (p) => p.name },
  { header: 'adm2', value: (p) => p.adm2 },
  { header: 'adm1', value: (p) => p.adm1 },
  { header: 'country', value: (p) => p.country },
  { header: 'lat', value: (p) => coordinate(p.lat), align: 'right' },
  { header: 'lon', value: (p) => coordinate(p.lon), align: 'right' },
  { header: 'tz', value: (p) => p.tz },
  { header: 'rank', value: (p) => p.rank, align: 'right' },
];

export const POI_COLUMNS: readonly Column<Place>[] = [
  ...PLACE_COLUMNS.slice(0, 7),
  { header: 'type', value: (p) => p.type },
  { header: 'rank', value: (p) => p.rank, align: 'right' },
];

/** A place list as a table (or JSON); an empty list says so in words. */
export function printPlaces(
  io: CliIo,
  places: readonly Place[],
  json: boolean,
  columns: readonly Column<Place>[] = PLACE_COLUMNS,
  none = 'No places found.',
): void {
  if (json) io.out(JSON.stringify(places, null, 2));
  else io.out(places.length === 0 ? none : formatTable(places, columns));
}
