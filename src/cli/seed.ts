import { readFile } from 'node:fs/promises';
import { describeSeedProblem } from '../admin/seed-problems.js';
import { applySeed, parseSeedText, seedFormatOf, SeedError } from '../admin/seed.js';
import { loadConfig } from '../config.js';
import { openPostgres } from '../db/client.js';
import { localTime } from './local-time.js';
import { assertMigrated } from '../db/problems.js';
import { createLogger } from '../logger.js';
import { createClientFromConfig } from '../qweather/client.js';
import { parseCommandLine, UsageError } from './command.js';
import type { CliIo } from './io.js';

const USAGE = 'usage: qwn seed <file.json|file.yaml> [--dry-run] [--resubscribe <email>]...';

/**
 * `qwn seed <file> [--dry-run] [--resubscribe <email>]...` (docs/operations.md): exit 0 when
 * applied, 1 on any problem. An unsubscribed subscriber stays so unless named by --resubscribe.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandLine(
    argv,
    {
      'dry-run': { type: 'boolean', default: false },
      resubscribe: { type: 'string', multiple: true },
    },
    'seed',
    { positionals: true },
  );
  if (parsed.values.help) {
    io.out(USAGE);
    return 0;
  }
  const [file, ...extra] = parsed.positionals;
  if (file === undefined || extra.length > 0) throw new UsageError(USAGE);
  const format = seedFormatOf(file);
  if (format === null)
    throw new UsageError(`${file}: the file name must end in .json, .yaml or .yml`);
  const dryRun = parsed.values['dry-run'] === true;
  const resubscribe = parsed.values.resubscribe ?? [];

  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new UsageError('DATABASE_URL is not set');
  if (!config.qweather.apiUrl) {
    throw new UsageError('QWEATHER_API_URL is not set (names in the file are resolved through it)');
  }

  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    io.err(`qwn seed: cannot read ${file} (${code})`);
    return 1;
  }
  let doc: unknown;
  try {
    doc = parseSeedText(text, format);
  } catch (err) {
    if (err instanceof SeedError) {
      const at =
        err.line === null ? '' : `:${err.line}${err.column === null ? '' : `:${err.column}`}`;
      io.err(`${file}${at}: ${err.reason}`);
      io.err('nothing written');
      return 1;
    }
    throw err;
  }

  // stdout carries the result (and the generated secrets); logs go to stderr.
  const logger = createLogger(config.logLevel, io.logs);
  const lookup = createClientFromConfig(config, logger);
  const database = openPostgres(config.databaseUrl, { poolSize: 2, applicationName: 'qwn seed' });
  try {
    // Before the first lookup: the place names are not worth resolving into a database that
    // cannot take them.
    await assertMigrated(database.db);
    const result = await applySeed({ db: database.db, lookup, logger }, doc, {
      dryRun,
      resubscribe,
    });
    if (!result.ok) {
      for (const problem of result.problems) io.err(describeSeedProblem(doc, problem));
      const count = result.problems.length;
      io.err(`${count} problem${count === 1 ? '' : 's'} in ${file}; nothing written`);
      return 1;
    }
    const counts = `${result.created} created, ${result.updated} updated, ${result.unchanged} unchanged, ${result.subscriptionsRemoved} subscription${result.subscriptionsRemoved === 1 ? '' : 's'} removed`;
    io.out(dryRun ? `dry run (nothing written): would have ${counts}` : `seeded: ${counts}`);
    for (const { email, outcome } of result.resubscribed) {
      io.out(
        outcome === 'resubscribed'
          ? `${dryRun ? 'would resubscribe' : 'resubscribed'} ${email}: emails are sent to it again`
          : `${email} was not unsubscribed: nothing to undo`,
      );
    }
    for (const s of result.unsubscribed) {
      const who = `subscribers[${s.index}]${s.name === null ? '' : ` ${JSON.stringify(s.name)}`} <${s.email}>`;
      io.out(
        `${who} unsubscribed at ${localTime(s.since, io.timeZone)}: left unsubscribed (qwn seed ${file} --resubscribe ${s.email} undoes it)`,
      );
    }
    for (const { subscriber, secret } of result.generatedSecrets) {
      io.out(`generated secret for ${subscriber}: ${secret}`);
    }
    if (result.generatedSecrets.length > 0) {
      io.out('each generated secret is shown only this once: give it to the webhook consumer now');
    }
    return 0;
  } finally {
    await Promise.allSettled([database.close(), lookup.close()]);
  }
}
