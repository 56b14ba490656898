import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { CliIo } from './io.js';

/** What every `src/cli/<name>.ts` exports: run with the arguments after the command name. */
export interface CommandModule {
  run(argv: string[], io: CliIo): Promise<number>;
}

/** A mistake in the command line itself: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util parseArgs with `-h/--help` added, its mistakes turned into one-line usage errors.
 * Positional arguments are refused unless the command takes them.
 */
export function parseCommandLine<O extends Options, P extends boolean = false>(
  argv: string[],
  options: O,
  command: string,
  o: { positionals?: P } = {},
) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: (o.positionals ?? false) as P,
      strict: true,
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new UsageError(`${message} (see qwn ${command} --help)`);
  }
}

/** `--timeout-seconds`-style values: a positive number of seconds, in milliseconds. */
export function positiveSecondsOption(
  value: string | undefined,
  fallbackSeconds: number,
  flag: string,
): number {
  const seconds = Number(value ?? fallbackSeconds);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`${flag} must be a positive number`);
  }
  return seconds * 1000;
}

/**
 * Packages only the demo and the sandbox use: development dependencies, absent from a
 * production install (`npm ci --omit=dev`, the image).
 */
const DEVELOPMENT_PACKAGES = [
  '@electric-sql/pglite',
  'smtp-server',
  'standardwebhooks',
  'mailparser',
  'tsx',
];

/** The development package whose absence `err` reports, if it is one. */
export function missingDevelopmentPackage(err: unknown): string | null {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' || typeof message !== 'string') return null;
  return DEVELOPMENT_PACKAGES.find((name) => message.includes(`'${name}'`)) ?? null;
}
