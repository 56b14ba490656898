import { listSubscribers, type SubscriberListing } from '../admin/subscribers.js';
import { loadConfig, MissingSettingError } from '../config.js';
import { openPostgres } from '../db/client.js';
import { assertMigrated } from '../db/problems.js';
import { parseCommandLine } from './command.js';
import { warningTypeOf } from '../domain/warning-types.js';
import { formatTable } from './table.js';
import type { CliIo } from './io.js';

const USAGE = `usage: qwn subscribers [--json]

Every subscriber with its channel, address, language, state (active, unsubscribed, disabled by
a 410 or a revoked robot, paused by an admin) and the places it watches with their filters. A
robot is shown as vendor host#fingerprint: its URL is a credential.`;

function filterText(p: SubscriberListing['places'][number]): string {
  const parts = [
    ...(p.minLevel ? [`≥${p.minLevel}`] : []),
    ...(p.types
      ? [`types ${p.types.map((code) => warningTypeOf(code)?.zh ?? code).join(',')}`]
      : []),
    ...(p.events ? [`events ${p.events.join(',')}`] : []),
  ];
  return parts.length > 0 ? `${p.name} (${parts.join('; ')})` : p.name;
}

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(argv, { json: { type: 'boolean' } }, 'subscribers');
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new MissingSettingError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, {
    poolSize: 1,
    applicationName: 'qwn subscribers',
  });
  try {
    await assertMigrated(database.db);
    const subscribers = await listSubscribers(database.db);
    if (values.json) {
      io.out(JSON.stringify(subscribers, null, 2));
      return 0;
    }
    if (subscribers.length === 0) {
      io.out('No subscribers: add some with qwn seed <file>.');
      return 0;
    }
    io.out(
      formatTable(subscribers, [
        { header: 'name', value: (s) => s.name ?? '' },
        { header: 'channel', value: (s) => s.channel },
        { header: 'address', value: (s) => s.address },
        { header: 'lang', value: (s) => s.lang },
        {
          header: 'state',
          value: (s) => (s.stateDetail ? `${s.state}: ${s.stateDetail}` : s.state),
        },
        { header: 'places', value: (s) => s.places.map(filterText).join('; ') },
        { header: 'id', value: (s) => s.id },
      ]),
    );
    const count = (state: string) => subscribers.filter((s) => s.state === state).length;
    io.out(
      `${subscribers.length} subscribers: ${count('active')} active, ${count('unsubscribed')} ` +
        `unsubscribed, ${count('disabled')} disabled, ${count('paused')} paused`,
    );
    return 0;
  } finally {
    await database.close();
  }
}
