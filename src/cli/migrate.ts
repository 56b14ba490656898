import { loadConfig, readEnvironment } from '../config.js';
import { openPostgres } from '../db/client.js';
import { UsageError } from './command.js';

export async function run(argv: string[]): Promise<number> {
  if (argv.length > 0) throw new UsageError(`takes no arguments (got "${argv.join(' ')}")`);
  const config = loadConfig(readEnvironment());
  if (!config.databaseUrl) throw new UsageError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, {
    poolSize: 1,
    applicationName: 'qwn migrate',
  });
  try {
    await database.migrate();
    console.log('migrations applied');
    return 0;
  } finally {
    await database.close();
  }
}
