import { loadConfig, MissingSettingError } from '../config.js';
import { openPostgres } from '../db/client.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const HELP = `usage: qwn migrate

Applies migrations/ to DATABASE_URL. Safe when several processes start at once: one applies
them while the others wait, and a database already up to date is left as it is.`;

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(argv, {}, 'migrate');
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new MissingSettingError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, {
    poolSize: 1,
    applicationName: 'qwn migrate',
  });
  try {
    await database.migrate();
    io.out('migrations applied');
    return 0;
  } finally {
    await database.close();
  }
}
