import {
  findSubscriber,
  previewMessage,
  renderForTerminal,
  sampleWarning,
  storedWarning,
  type PreviewSubscriber,
} from '../admin/preview.js';
import { loadConfig, MissingSettingError } from '../config.js';
import { openPostgres, type Db } from '../db/client.js';
import { assertMigrated } from '../db/problems.js';
import type { EventType } from '../domain/detect.js';
import { parseCommandLine, UsageError } from './command.js';
import type { CliIo } from './io.js';

const EVENTS: readonly EventType[] = ['new', 'update', 'cancel', 'expired', 'resumed'];

const USAGE = `usage: qwn preview <subscriber> [--event new|update|cancel|expired|resumed] [--warning ID]

Prints the message the subscriber would receive, rendered as the pipeline renders it: the email
(subject and text), the webhook body or the robot post. <subscriber> is an email address, a
webhook URL, a robot's host#fingerprint, a name or an id. Without --warning, a sample rainstorm
warning at the subscriber's first place; with it, that stored warning as last seen. Sends nothing.`;

/** The one subscriber `who` names, or a usage error that says why not. */
export async function oneSubscriber(
  db: Db,
  who: string,
  command: string,
): Promise<PreviewSubscriber> {
  const found = await findSubscriber(db, who);
  if (found.length === 0) {
    throw new UsageError(`no subscriber has the email, webhook URL, name or id "${who}"`);
  }
  if (found.length > 1) {
    throw new UsageError(
      `"${who}" names ${found.length} subscribers: give one's id (qwn subscribers lists them) to ${command}`,
    );
  }
  return found[0]!;
}

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { event: { type: 'string' }, warning: { type: 'string' } },
    'preview',
    { positionals: true },
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError('name one subscriber (see qwn preview --help)');
  const event = (values.event ?? 'new') as EventType;
  if (!EVENTS.includes(event)) {
    throw new UsageError(`unknown --event "${values.event}"; expected one of ${EVENTS.join(', ')}`);
  }
  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new MissingSettingError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, {
    poolSize: 1,
    applicationName: 'qwn preview',
  });
  try {
    await assertMigrated(database.db);
    let sub = await oneSubscriber(database.db, positionals[0]!, 'preview');
    const now = new Date();
    let warning = sampleWarning(sub, now, false);
    if (values.warning !== undefined) {
      const stored = await storedWarning(database.db, values.warning.trim());
      if (!stored) throw new UsageError(`no stored warning has the id "${values.warning}"`);
      warning = stored.warning;
      sub = { ...sub, place: stored.place };
    }
    io.out(renderForTerminal(sub, previewMessage(sub, warning, event, now)));
    return 0;
  } finally {
    await database.close();
  }
}
