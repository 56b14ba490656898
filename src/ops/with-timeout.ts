export class OpsTimeoutError extends Error {
  override name = 'OpsTimeoutError';
}

/**
 * Bounds a probe: a Redis connection with `maxRetriesPerRequest: null` queues commands forever
 * while it is down, and a health check that hangs is worse than one that says "no".
 */
export async function withTimeout<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OpsTimeoutError(`${what} did not answer in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
    // The loser may still settle; its rejection is already reported through the race.
    work.catch(() => undefined);
  }
}
