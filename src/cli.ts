import { createRequire } from 'node:module';
import { ConfigError, loadConfig, MissingSettingError } from './config.js';
import { scrub } from './logger.js';
import {
  explainConnectionFailure,
  serviceEndpoints,
  ServiceUnreachableError,
} from './ops/connection-failure.js';
import { missingDevelopmentPackage, UsageError, type CommandModule } from './cli/command.js';
import type { CliIo } from './cli/io.js';

/**
 * The `qwn` command (docs/operations.md); src/main.ts runs it in the process. Each command lives in
 * `src/cli/<name>.ts`, loaded only when used so that `qwn lookup` does not pay for BullMQ or
 * Postgres.
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<CommandModule> }> = {
  migrate: { summary: 'apply migrations/ to DATABASE_URL', load: () => import('./cli/migrate.js') },
  seed: {
    summary: 'make the subscribers of a seed file exist',
    load: () => import('./cli/seed.js'),
  },
  poll: {
    summary: 'poll --once: one whole cycle in the foreground',
    load: () => import('./cli/poll.js'),
  },
  worker: { summary: 'the long-running service', load: () => import('./cli/worker.js') },
  lookup: { summary: 'city lookup', load: () => import('./cli/lookup.js') },
  top: { summary: 'popular cities', load: () => import('./cli/top.js') },
  poi: { summary: 'POI search by name or by range', load: () => import('./cli/poi.js') },
  warnings: { summary: 'warnings in force at a location', load: () => import('./cli/warnings.js') },
  simulate: {
    summary: 'run the built-in QWeather simulator',
    load: () => import('./cli/simulate.js'),
  },
  demo: { summary: 'the whole pipeline on built-in defaults', load: () => import('./cli/demo.js') },
  sandbox: {
    summary: 'simulator, mail sink, webhook receiver: try your own seed without Docker',
    load: () => import('./cli/sandbox.js'),
  },
  plan: {
    summary: 'upstream calls and cost of the subscriptions, v7 and v1',
    load: () => import('./cli/plan.js'),
  },
  subscribers: {
    summary: 'list subscribers, their places, filters and state',
    load: () => import('./cli/subscribers.js'),
  },
  preview: {
    summary: 'print the message a subscriber would receive',
    load: () => import('./cli/preview.js'),
  },
  'test-send': {
    summary: 'send a subscriber one marked test message through their channel',
    load: () => import('./cli/test-send.js'),
  },
  deliveries: { summary: 'list deliveries', load: () => import('./cli/deliveries.js') },
  redeliver: { summary: 'send deliveries again', load: () => import('./cli/redeliver.js') },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(
    ([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`,
  );
  return [
    'usage: qwn <command> [options]      qwn <command> --help      qwn --version',
    '',
    'commands:',
    ...lines,
  ].join('\n');
}

/** `qwn <argv>`: its exit code. Every failure is one line on `io.err`, never a stack trace. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await runCommand(argv, io);
  } catch (err) {
    const { failureMessage } = await import('./db/problems.js');
    io.err(`qwn: ${scrub(failureMessage(err))}`);
    return 1;
  }
}

async function runCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
    io.out(`qwn ${version} (Node ${process.versions.node})`);
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.out(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`qwn: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    const mod = await command.load();
    return await mod.run(rest, io);
  } catch (err) {
    const missing = missingDevelopmentPackage(err);
    if (missing) {
      io.err(
        `qwn ${name}: needs ${missing}, a development dependency that this install left out ` +
          '(npm ci --omit=dev, the image): run it from a full install (npm install)',
      );
      return 1;
    }
    if (err instanceof UsageError || err instanceof MissingSettingError) {
      io.err(`qwn ${name}: ${err.message}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      io.err(`qwn ${name}: configuration error\n${err.message}`);
      return 2;
    }
    const unreachable =
      err instanceof ServiceUnreachableError ? err.message : explainWithConfiguration(err, io);
    if (unreachable) {
      io.err(`qwn ${name}: ${scrub(unreachable)}`);
      return 1;
    }
    // Loaded on failure only: `qwn lookup` does not pay for Postgres's modules.
    const { databaseProblem } = await import('./db/problems.js');
    const { PortInUseError } = await import('./ops/http-server.js');
    const problem = err instanceof PortInUseError ? err.message : databaseProblem(err);
    if (problem) {
      io.err(`qwn ${name}: ${problem}`);
      return 1;
    }
    throw err;
  }
}

/** A failure to reach Postgres or Redis, said with the setting that points there. */
function explainWithConfiguration(err: unknown, io: CliIo): string | null {
  try {
    return explainConnectionFailure(err, serviceEndpoints(loadConfig(io.env)));
  } catch {
    return null;
  }
}
