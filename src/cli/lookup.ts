import { UsageError } from './command.js';
import { numberOption, printPlaces, stringOption, withClient } from './qweather-command.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE =
  'usage: qwn lookup <text|Location ID|lon,lat|ADCode> [--adm A] [--range cn] [--number N] [--lang L] [--json]';

/** `qwn lookup`: the city lookup as a table (docs/operations.md). */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      adm: { type: 'string' },
      range: { type: 'string' },
      number: { type: 'string' },
      lang: { type: 'string' },
      json: { type: 'boolean' },
    },
    'lookup',
    { positionals: true },
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  // Several words are one name ("New York").
  const location = positionals.join(' ').trim();
  if (location === '') throw new UsageError(`a place to look up is required`);

  return withClient('lookup', io, async (client) => {
    const places = await client.lookupCity({
      location,
      adm: stringOption(values.adm),
      range: stringOption(values.range),
      number: numberOption(values.number),
      lang: stringOption(values.lang),
    });
    printPlaces(io, places, values.json === true, undefined, `No place matches "${location}".`);
    return 0;
  });
}
