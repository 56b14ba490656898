import type { Config } from '../config.js';
import { errorChain, type ErrorFields } from '../error-chain.js';
import { withTimeout } from './with-timeout.js';

/**
 * "connect ECONNREFUSED 127.0.0.1:5999" does not say that this is Postgres, which setting
 * points there, or what to try. These turn a failure to reach Postgres or Redis into one line
 * that does, built from the host and port of the URL only: user names and passwords in
 * DATABASE_URL and REDIS_URL never appear.
 */

export interface ServiceEndpoint {
  readonly service: 'Postgres' | 'Redis';
  readonly variable: 'DATABASE_URL' | 'REDIS_URL';
  readonly host: string;
  readonly port: number;
  /** The command an operator runs to see whether the service answers there. */
  readonly check: string;
}

/** A service that did not answer; its message is the whole explanation. */
export class ServiceUnreachableError extends Error {
  override name = 'ServiceUnreachableError';
}

/** The endpoints of a configuration, from the URLs' host and port alone. */
export function serviceEndpoints(config: Pick<Config, 'databaseUrl' | 'redisUrl'>) {
  const endpoints: ServiceEndpoint[] = [];
  const db = hostPort(config.databaseUrl, 5432);
  if (db) {
    endpoints.push({
      service: 'Postgres',
      variable: 'DATABASE_URL',
      ...db,
      check: `pg_isready -h ${db.host} -p ${db.port}`,
    });
  }
  const redis = hostPort(config.redisUrl, 6379);
  if (redis) {
    const tls = config.redisUrl.startsWith('rediss:') ? ' --tls' : '';
    endpoints.push({
      service: 'Redis',
      variable: 'REDIS_URL',
      ...redis,
      check: `redis-cli -h ${redis.host} -p ${redis.port}${tls} ping`,
    });
  }
  return endpoints;
}

/** The endpoint of one service; the Redis one always exists (REDIS_URL has a default). */
export function endpointOf(
  config: Pick<Config, 'databaseUrl' | 'redisUrl'>,
  service: ServiceEndpoint['service'],
): ServiceEndpoint | undefined {
  return serviceEndpoints(config).find((e) => e.service === service);
}

function hostPort(url: string | undefined, defaultPort: number) {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    const host = parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost';
    return { host, port: parsed.port ? Number(parsed.port) : defaultPort };
  } catch {
    return null;
  }
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

/** Postgres refusals of the login itself (SQLSTATE), said without the user or password. */
const POSTGRES_LOGIN_REASONS: Record<string, string> = {
  '28P01': 'password authentication failed',
  '28000': 'the server refused the login (unknown role, or pg_hba.conf)',
  '3D000': 'the database named in DATABASE_URL does not exist',
};

const messageOf = (e: ErrorFields): string => (typeof e.message === 'string' ? e.message : '');

function say(endpoint: ServiceEndpoint, reason: string): string {
  return (
    `cannot reach ${endpoint.service} at ${endpoint.host}:${endpoint.port} (${endpoint.variable}): ` +
    `${reason}. Check that ${endpoint.service} runs there and that ${endpoint.variable} is right: ` +
    `${endpoint.check}`
  );
}

/**
 * One line for a failure to reach (or log in to) Postgres or Redis; null when the error is
 * something else or names an address the configuration does not.
 */
export function explainConnectionFailure(
  err: unknown,
  endpoints: readonly ServiceEndpoint[],
): string | null {
  const chain = errorChain(err);
  const redis = endpoints.find((p) => p.service === 'Redis');
  for (const e of chain) {
    if (redis && /^(WRONGPASS|NOAUTH)\b/.test(messageOf(e))) {
      return (
        `${redis.service} at ${redis.host}:${redis.port} (${redis.variable}) refused the ` +
        `login: ${messageOf(e).startsWith('NOAUTH') ? 'a password is required' : 'wrong user name or password'}. ` +
        `Check the credentials in ${redis.variable}.`
      );
    }
    const code = typeof e.code === 'string' ? e.code : '';
    const postgres = endpoints.find((p) => p.service === 'Postgres');
    if (postgres && code in POSTGRES_LOGIN_REASONS) {
      return (
        `${postgres.service} at ${postgres.host}:${postgres.port} (${postgres.variable}) ` +
        `refused the connection: ${POSTGRES_LOGIN_REASONS[code]}. Check the user, password ` +
        `and database name in ${postgres.variable}.`
      );
    }
    if (!(code in NETWORK_REASONS)) continue;
    const port = typeof e.port === 'number' ? e.port : null;
    const host =
      typeof e.hostname === 'string' ? e.hostname : typeof e.address === 'string' ? e.address : '';
    const endpoint =
      endpoints.find((p) => p.port === port && p.host === host) ??
      endpoints.find((p) => p.port === port) ??
      endpoints.find((p) => port === null && p.host === host);
    if (endpoint) return say(endpoint, NETWORK_REASONS[code]!);
  }
  // node-postgres's own connect timeout carries no code.
  const postgres = endpoints.find((p) => p.service === 'Postgres');
  if (postgres && chain.some((e) => /timeout expired|connection timeout/i.test(messageOf(e)))) {
    return say(postgres, 'no answer within the connect timeout');
  }
  return null;
}

/**
 * Makes sure Redis answers before a foreground command relies on it: ioredis retries for
 * ever, so a wrong REDIS_URL would otherwise hang the command with a log line per retry.
 */
export async function assertRedisAnswers(
  redis: {
    ping(): Promise<unknown>;
    on(event: 'error', listener: (err: unknown) => void): unknown;
    off(event: 'error', listener: (err: unknown) => void): unknown;
  },
  endpoint: ServiceEndpoint,
  timeoutMs = 5000,
): Promise<void> {
  let lastError: unknown;
  const remember = (err: unknown) => {
    lastError = err;
  };
  redis.on('error', remember);
  try {
    await withTimeout('Redis PING', timeoutMs, redis.ping());
  } catch (err) {
    const explained = explainConnectionFailure(lastError ?? err, [endpoint]);
    throw new ServiceUnreachableError(
      explained ?? say(endpoint, `no answer within ${Math.round(timeoutMs / 1000)} s`),
    );
  } finally {
    redis.off('error', remember);
  }
}
