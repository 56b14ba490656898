/** What every `src/cli/<name>.ts` exports: run with the arguments after the command name. */
export interface CommandModule {
  run(argv: string[]): Promise<number>;
}

/** A mistake in the command line itself: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
