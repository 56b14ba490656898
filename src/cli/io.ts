import { pino, type DestinationStream } from 'pino';
import { readEnvironment } from '../config.js';
import { terminalZone } from './local-time.js';

/**
 * What a command reads and writes besides its arguments: the environment, the reader's output,
 * the error lines and the log stream. `qwn` gives it the process's; the tests give each call its
 * own, and run commands in their own process only to test the process itself.
 */
export interface CliIo {
  /** The settings: `.env` of the working folder overlaid by the environment (docs/configuration.md). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** One line (or several) of what the command prints for its reader: tables, JSON, summaries. */
  out(text: string): void;
  /** One line of an error or a warning, for a person. */
  err(text: string): void;
  /** Where a command's logger writes (stderr: stdout's last line is what a script reads). */
  readonly logs: DestinationStream;
  /** The zone CLI times are shown and read in: `TZ`, else the system's. */
  readonly timeZone: string;
  /**
   * The clock `poll --once` runs the pipeline on: the system's unless given. Tests move it to
   * the end of a quiet window or a robot's minute instead of waiting for it.
   */
  readonly now?: () => Date;
}

/** The process's own: stdout, stderr and its environment. */
export function processIo(): CliIo {
  const env = readEnvironment();
  return {
    env,
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    logs: pino.destination({ dest: 2, sync: true }),
    timeZone: terminalZone(env.TZ),
  };
}
