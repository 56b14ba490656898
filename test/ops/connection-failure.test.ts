import { describe, expect, it } from 'vitest';
import {
  assertRedisAnswers,
  explainConnectionFailure,
  serviceEndpoints,
  ServiceUnreachableError,
} from '../../src/ops/connection-failure.js';

const config = {
  databaseUrl: 'postgres://qwn:hunter2@db.internal:5999/qwn',
  redisUrl: 'rediss://:s3cret-pass@cache.internal:6380/0',
};
const endpoints = serviceEndpoints(config);

/** A Node socket error as net.connect raises it. */
function socketError(code: string, address: string, port: number): Error {
  return Object.assign(new Error(`connect ${code} ${address}:${port}`), { code, address, port });
}

describe('connection failures', () => {
  it('reads host and port from the URLs, and nothing else', () => {
    expect(endpoints).toEqual([
      {
        service: 'Postgres',
        variable: 'DATABASE_URL',
        host: 'db.internal',
        port: 5999,
        check: 'pg_isready -h db.internal -p 5999',
      },
      {
        service: 'Redis',
        variable: 'REDIS_URL',
        host: 'cache.internal',
        port: 6380,
        check: 'redis-cli -h cache.internal -p 6380 --tls ping',
      },
    ]);
    expect(serviceEndpoints({ databaseUrl: undefined, redisUrl: 'redis://127.0.0.1' })).toEqual([
      expect.objectContaining({ service: 'Redis', host: '127.0.0.1', port: 6379 }),
    ]);
  });

  it('names the service, the variable, the address and the check', () => {
    const refused = socketError('ECONNREFUSED', '10.0.0.5', 5999);
    expect(explainConnectionFailure(refused, endpoints)).toBe(
      'cannot reach Postgres at db.internal:5999 (DATABASE_URL): connection refused (nothing ' +
        'listens there). Check that Postgres runs there and that DATABASE_URL is right: ' +
        'pg_isready -h db.internal -p 5999',
    );
    // Wrapped by drizzle ("Failed query: …") and split over IPv6 and IPv4 by Node.
    const wrapped = Object.assign(new Error('Failed query: select 1'), {
      cause: Object.assign(new AggregateError([socketError('ECONNREFUSED', '::1', 6380)]), {
        code: 'ECONNREFUSED',
      }),
    });
    expect(explainConnectionFailure(wrapped, endpoints)).toMatch(
      /^cannot reach Redis at cache\.internal:6380 \(REDIS_URL\): connection refused .*redis-cli -h cache\.internal -p 6380 --tls ping$/,
    );
    const unknownHost = Object.assign(new Error('getaddrinfo ENOTFOUND db.internal'), {
      code: 'ENOTFOUND',
      hostname: 'db.internal',
    });
    expect(explainConnectionFailure(unknownHost, endpoints)).toContain(
      'cannot reach Postgres at db.internal:5999 (DATABASE_URL): host name not found',
    );
  });

  it('says a login was refused without the user or the password', () => {
    for (const [code, reason] of [
      ['28P01', 'password authentication failed'],
      ['3D000', 'the database named in DATABASE_URL does not exist'],
    ]) {
      const err = Object.assign(new Error('password authentication failed for user "qwn"'), {
        code,
      });
      const line = explainConnectionFailure(err, endpoints)!;
      expect(line).toContain(
        `Postgres at db.internal:5999 (DATABASE_URL) refused the connection: ${reason}`,
      );
      expect(line).not.toMatch(/hunter2|"qwn"/);
    }
    const redis = explainConnectionFailure(
      new Error('WRONGPASS invalid username-password pair or user is disabled.'),
      endpoints,
    )!;
    expect(redis).toBe(
      'Redis at cache.internal:6380 (REDIS_URL) refused the login: wrong user name or password. ' +
        'Check the credentials in REDIS_URL.',
    );
  });

  it('leaves other errors and other addresses alone', () => {
    expect(explainConnectionFailure(new Error('boom'), endpoints)).toBeNull();
    expect(
      explainConnectionFailure(socketError('ECONNREFUSED', '10.0.0.9', 443), endpoints),
    ).toBeNull();
  });

  it('turns a Redis that does not answer into one error naming it', async () => {
    const listeners = new Set<(err: unknown) => void>();
    const silent = {
      ping: () => {
        setTimeout(() => {
          for (const l of listeners) l(socketError('ECONNREFUSED', '10.0.0.6', 6380));
        }, 5);
        return new Promise<never>(() => undefined);
      },
      on: (_: 'error', l: (err: unknown) => void) => listeners.add(l),
      off: (_: 'error', l: (err: unknown) => void) => listeners.delete(l),
    };
    const attempt = assertRedisAnswers(silent, endpoints[1]!, 100);
    await expect(attempt).rejects.toBeInstanceOf(ServiceUnreachableError);
    await expect(attempt).rejects.toThrow(
      /^cannot reach Redis at cache\.internal:6380 \(REDIS_URL\): connection refused/,
    );
    expect(listeners.size).toBe(0);
  });
});
