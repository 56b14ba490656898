import { UsageError } from './command.js';
import { numberOption, printPlaces, stringOption, withClient } from './qweather-command.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn top [--range world|cn|…] [--number N] [--lang L] [--json]';

/** `qwn top`: popular cities (docs/operations.md). */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      range: { type: 'string' },
      number: { type: 'string' },
      lang: { type: 'string' },
      json: { type: 'boolean' },
    },
    'top',
    { positionals: true },
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected "${positionals[0]}"`);

  return withClient('top', io, async (client) => {
    const places = await client.topCities({
      range: stringOption(values.range),
      number: numberOption(values.number),
      lang: stringOption(values.lang),
    });
    printPlaces(io, places, values.json === true);
    return 0;
  });
}
