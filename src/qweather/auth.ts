import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import { registerSecret } from '../logger.js';
import { ParameterError } from './errors.js';

/** How a request proves who it is: exactly one method per request (facts note, "Auth"). */
export type QWeatherAuth =
  | { kind: 'key'; key: string; transport: 'query' | 'header' }
  | { kind: 'jwt'; keyId: string; projectId: string; privateKeyPem: string }
  | { kind: 'none' };

/** What to add to one request. */
export interface AuthParts {
  query: Record<string, string>;
  headers: Record<string, string>;
}

export interface Authenticator {
  parts(): Promise<AuthParts>;
  /** Forget a cached token after the upstream refused it, so the next call signs afresh. */
  invalidate(): void;
  /** Every secret value this authenticator may put on the wire, for scrubbing. */
  readonly secrets: readonly string[];
}

// QWeather allows up to 24 h; 15 minutes limits the damage of a leaked token.
const TOKEN_LIFETIME_SECONDS = 900;
// iat 30 s in the past tolerates a server clock slightly behind ours (QWeather's own advice).
const IAT_SKEW_SECONDS = 30;
// Re-sign a minute early so that a token never expires while a request is in flight.
const RENEW_BEFORE_SECONDS = 60;

export function createAuthenticator(auth: QWeatherAuth, now: () => number): Authenticator {
  switch (auth.kind) {
    case 'none':
      return {
        parts: () => Promise.resolve({ query: {}, headers: {} }),
        invalidate() {},
        secrets: [],
      };
    case 'key': {
      if (!auth.key) throw new ParameterError('key', 'must not be empty');
      registerSecret(auth.key);
      const parts: AuthParts =
        auth.transport === 'header'
          ? { query: {}, headers: { 'x-qw-api-key': auth.key } }
          : { query: { key: auth.key }, headers: {} };
      return { parts: () => Promise.resolve(parts), invalidate() {}, secrets: [auth.key] };
    }
    case 'jwt':
      return createJwtAuthenticator(auth, now);
  }
}

function createJwtAuthenticator(
  auth: Extract<QWeatherAuth, { kind: 'jwt' }>,
  now: () => number,
): Authenticator {
  const secrets: string[] = [];
  let keyPromise: Promise<CryptoKey> | undefined;
  let cached: { token: Promise<string>; exp: number } | undefined;

  const sign = async (iat: number, exp: number): Promise<string> => {
    keyPromise ??= importPKCS8(auth.privateKeyPem, 'EdDSA');
    const token = await new SignJWT({ sub: auth.projectId })
      .setProtectedHeader({ alg: 'EdDSA', kid: auth.keyId })
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await keyPromise);
    registerSecret(token);
    secrets.push(token);
    // Old tokens are expired; keep the scrub list from growing without bound.
    if (secrets.length > 4) secrets.shift();
    return token;
  };

  return {
    secrets,
    async parts() {
      const nowSeconds = Math.floor(now() / 1000);
      if (!cached || nowSeconds >= cached.exp - RENEW_BEFORE_SECONDS) {
        const iat = nowSeconds - IAT_SKEW_SECONDS;
        const exp = iat + TOKEN_LIFETIME_SECONDS;
        const token = sign(iat, exp);
        // Concurrent callers share one signing; a failed one is not cached.
        cached = { token, exp };
        token.catch(() => {
          if (cached?.token === token) cached = undefined;
        });
      }
      return { query: {}, headers: { authorization: `Bearer ${await cached.token}` } };
    },
    invalidate() {
      cached = undefined;
    },
  };
}
