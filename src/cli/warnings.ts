import type { Warning } from '../domain/warning.js';
import type { QWeatherClient } from '../qweather/client.js';
import { isRetiredEndpoint } from '../qweather/errors.js';
import { parseCoordinates } from '../qweather/params.js';
import { UsageError } from './command.js';
import { stringOption, withClient } from './qweather-command.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn warnings <Location ID|lon,lat> [--lang L] [--json]';

interface Shown {
  location: string;
  source: 'v7' | 'v1';
  updateTime: string | null;
  warnings: Warning[];
}

/** `qwn warnings`: the warnings in force at one place (docs/operations.md). */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { lang: { type: 'string' }, json: { type: 'boolean' } },
    'warnings',
    { positionals: true },
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || !positionals[0]?.trim()) {
    throw new UsageError(`exactly one location is required`);
  }
  const location = positionals[0].trim();
  const lang = stringOption(values.lang);

  return withClient('warnings', io, async (client, config) => {
    const shown =
      config.qweather.alertSource === 'v1'
        ? await fromV1(client, location, lang)
        : await fromV7(client, location, lang).catch((err: unknown) => {
            // auto (the default) follows QWeather to v1 once v7 is retired (docs/configuration.md).
            if (config.qweather.alertSource === 'auto' && isRetiredEndpoint(err)) {
              return fromV1(client, location, lang);
            }
            throw err;
          });
    if (shown === undefined) {
      io.err(`qwn warnings: no place found for "${location}"`);
      return 1;
    }
    if (values.json === true) {
      // The raw upstream record is for the archive, not for a person reading JSON.
      const warnings = shown.warnings.map(({ raw: _raw, ...rest }) => rest);
      io.out(JSON.stringify({ ...shown, warnings }, null, 2));
    } else {
      io.out(render(shown));
    }
    return 0;
  });
}

async function fromV7(
  client: QWeatherClient,
  location: string,
  lang: string | undefined,
): Promise<Shown> {
  const now = await client.warningNow({ location, lang });
  return { location, source: 'v7', updateTime: now.updateTime, warnings: now.warnings };
}

/** v1 is addressed by coordinates; a Location ID is turned into its place's coordinates first. */
async function fromV1(
  client: QWeatherClient,
  location: string,
  lang: string | undefined,
): Promise<Shown | undefined> {
  let point = parseCoordinates(location);
  if (!point) {
    const [place] = await client.lookupCity({ location, number: 1 });
    if (!place) return undefined;
    point = { lon: place.lon, lat: place.lat };
  }
  const alerts = await client.weatherAlert({ lat: point.lat, lon: point.lon, lang });
  return { location, source: 'v1', updateTime: null, warnings: alerts.alerts };
}

const orDash = (value: string | null): string => value ?? '—';

function render(shown: Shown): string {
  const updated = shown.updateTime ? ` (updated ${shown.updateTime})` : '';
  if (shown.warnings.length === 0) return `No warnings in force at ${shown.location}${updated}.`;
  const count = shown.warnings.length === 1 ? '1 warning' : `${shown.warnings.length} warnings`;
  const blocks = shown.warnings.map((w) => {
    const type = [w.typeName, w.typeCode ? `(${w.typeCode})` : null].filter(Boolean).join(' ');
    const level = w.severity ? `${w.level} (severity ${w.severity})` : w.level;
    const facts = [
      ['level', level],
      ['type', type || '—'],
      ['status', w.related.length > 0 ? `${w.status} (of ${w.related.join(', ')})` : w.status],
      ['issued', w.sender ? `${orDash(w.pubTime)} by ${w.sender}` : orDash(w.pubTime)],
      ['start', orDash(w.startTime)],
      ['end', orDash(w.endTime)],
      ['id', w.id],
    ].map(([label, value]) => `  ${(label ?? '').padEnd(7)} ${value}`);
    const head = [w.title || '(untitled warning)', ...facts].join('\n');
    const text = w.text.trim() ? `\n\n${indent(w.text.trim())}` : '';
    const instruction = w.instruction ? `\n\n${indent(w.instruction)}` : '';
    return `${head}${text}${instruction}`;
  });
  return [`${count} in force at ${shown.location}${updated}:`, ...blocks].join('\n\n');
}

const indent = (text: string): string =>
  text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
