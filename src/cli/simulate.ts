import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../config.js';
import { createLogger, registerSecret } from '../logger.js';
import {
  loadPlacesFromCsv,
  startSimulator,
  SimulatorInputError,
  type Scenario,
} from '../simulator/index.js';
import { parseCommandLine, UsageError } from './command.js';
import type { CliIo } from './io.js';

const USAGE =
  'usage: qwn simulate [--port P] [--host H] [--scenario FILE] [--places DIR] [--key K] [--jwt-public-key PEM_FILE] [--retire-v7]';

/** `qwn simulate`: the built-in QWeather simulator in the foreground until SIGINT/SIGTERM. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(
    argv,
    {
      port: { type: 'string' },
      host: { type: 'string' },
      scenario: { type: 'string' },
      places: { type: 'string' },
      key: { type: 'string' },
      'jwt-public-key': { type: 'string' },
      // As QWeather today: the v7 warning paths answer 403 "Deprecated".
      'retire-v7': { type: 'boolean' },
    },
    'simulate',
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new UsageError(`--port must be a port number 0-65535, got "${values.port}"`);
  }

  const config = loadConfig(io.env);
  // Logs go to stderr so that stdout carries only the URL line.
  const logger = createLogger(config.logLevel, io.logs);
  registerSecret(values.key);

  let scenario: Scenario | undefined;
  if (values.scenario) {
    const text = await readFile(values.scenario, 'utf8').catch((err: unknown) => {
      throw new UsageError(`--scenario: cannot read ${values.scenario}: ${(err as Error).message}`);
    });
    try {
      scenario = (
        /\.ya?ml$/i.test(values.scenario) ? parseYaml(text) : JSON.parse(text)
      ) as Scenario;
    } catch (err) {
      throw new UsageError(
        `--scenario: ${values.scenario} is not valid JSON/YAML: ${(err as Error).message}`,
      );
    }
  }
  const places = values.places
    ? await loadPlacesFromCsv(values.places).catch((err: unknown) => {
        throw new UsageError(`--places: ${(err as Error).message}`);
      })
    : undefined;
  const jwtPublicKeyPem = values['jwt-public-key']
    ? await readFile(values['jwt-public-key'], 'utf8')
    : undefined;

  let simulator;
  try {
    simulator = await startSimulator({
      port,
      host: values.host,
      places,
      scenario,
      apiKey: values.key,
      jwtPublicKeyPem,
      v7Retired: values['retire-v7'] === true,
      logger,
    });
  } catch (err) {
    if (err instanceof SimulatorInputError) throw new UsageError(`--scenario: ${err.message}`);
    throw err;
  }

  // The key is not echoed: stdout may end up in a log.
  const auth = values.key ? ' QWEATHER_API_KEY=<the --key value>' : '';
  io.out(
    `qwn simulator listening on ${simulator.url} (point qwn at it: QWEATHER_API_URL=${simulator.url}${auth})`,
  );

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await simulator.close();
  logger.info('simulator stopped');
  return 0;
}
