import { UsageError } from './command.js';
import {
  POI_COLUMNS,
  numberOption,
  printPlaces,
  stringOption,
  withClient,
} from './qweather-command.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE = [
  'usage: qwn poi <text> [--type scenic] [--city C] [--number N] [--lang L] [--json]',
  '       qwn poi --near <lon,lat> [--radius KM] [--type scenic] [--number N] [--lang L] [--json]',
].join('\n');

/** `qwn poi`: POI search by name, or around a point (docs/operations.md). */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      type: { type: 'string' },
      city: { type: 'string' },
      near: { type: 'string' },
      radius: { type: 'string' },
      number: { type: 'string' },
      lang: { type: 'string' },
      json: { type: 'boolean' },
    },
    'poi',
    { positionals: true },
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const text = positionals.join(' ').trim();
  const near = stringOption(values.near);
  if ((text === '') === (near === undefined)) {
    throw new UsageError(`give either a POI name or --near <lon,lat>`);
  }
  if (near !== undefined && values.city !== undefined) {
    throw new UsageError('--city applies to a search by name, not to --near');
  }
  if (near === undefined && values.radius !== undefined) {
    throw new UsageError('--radius applies to --near, not to a search by name');
  }
  // `scenic` is the only category QWeather offers; the client rejects anything else.
  const type = (stringOption(values.type) ?? 'scenic') as 'scenic';
  const common = {
    type,
    number: numberOption(values.number),
    lang: stringOption(values.lang),
  };

  return withClient('poi', io, async (client) => {
    const pois =
      near === undefined
        ? await client.lookupPoi({ location: text, city: stringOption(values.city), ...common })
        : await client.poiRange({ location: near, radius: numberOption(values.radius), ...common });
    printPlaces(io, pois, values.json === true, POI_COLUMNS, 'No points of interest found.');
    return 0;
  });
}
