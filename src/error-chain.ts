/**
 * An error and what it wraps. Drivers and clients wrap the error that says what happened
 * (drizzle a pg error with its SQLSTATE, undici a refused address, Node an AggregateError of
 * its IPv6 and IPv4 tries): readers look along the chain, not at the outer error alone.
 */

/** The fields readers look for, each unknown until checked. */
export interface ErrorFields {
  code?: unknown;
  port?: unknown;
  address?: unknown;
  hostname?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** The error, its causes and, for an AggregateError, its members; at most six levels deep. */
export function errorChain(err: unknown, depth = 0): ErrorFields[] {
  if (depth > 5 || err === null || typeof err !== 'object') return [];
  const fields = err as ErrorFields;
  const members = Array.isArray(fields.errors) ? fields.errors : [];
  return [
    fields,
    ...errorChain(fields.cause, depth + 1),
    ...members.flatMap((m: unknown) => errorChain(m, depth + 1)),
  ];
}
