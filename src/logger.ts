import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * The one pino root. Secrets never reach a log line (docs/design.md, invariant 7): known
 * secret fields are redacted by name, registered secret values are scrubbed from every string,
 * and URLs lose their `key=` parameter and credentials.
 */

const registeredSecrets = new Set<string>();

/** Remember a secret value so that it is scrubbed wherever it shows up in logs or errors. */
export function registerSecret(value: string | undefined): void {
  // Very short values would scrub ordinary words; real keys are long.
  if (value && value.length >= 6) registeredSecrets.add(value);
}

/** What a secret is logged as, wherever it was. */
const REDACTED = '[redacted]';

const URL_KEY_PARAM = /([?&](?:key|token|access_token|sig|sign)=)[^&#\s"']*/gi;
// Feishu / Lark robots carry their token in the path: /open-apis/bot/v2/hook/TOKEN.
const URL_HOOK_TOKEN = /(\/bot\/v2\/hook\/)[^/?#\s"']+/gi;
// The user name may be empty: redis://:password@host is how Redis URLs carry a password.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s"':]*(?::[^/@\s"']*)?@/gi;

/** Removes query keys and credentials from anything that looks like a URL, and known secrets. */
export function scrub(text: string): string {
  let out = text
    .replace(URL_KEY_PARAM, `$1${REDACTED}`)
    .replace(URL_HOOK_TOKEN, `$1${REDACTED}`)
    .replace(URL_USERINFO, `$1${REDACTED}@`);
  for (const secret of registeredSecrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/**
 * Fields whose value is a secret whatever it looks like: at any depth of a log line, and in a
 * child's bindings (headers included: `x-qw-api-key` carries the upstream's key).
 */
const SECRET_FIELDS = new Set([
  'key',
  'apiKey',
  'secret',
  'password',
  'pass',
  'privateKey',
  'privateKeyPem',
  'authorization',
  'token',
  'x-qw-api-key',
]);

function scrubDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrub(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  // An Error's message and stack are not enumerable, and a Date has no entries: serialize
  // them first, or the walk below would log them as {}.
  if (value instanceof Error) return scrubDeep(pino.stdSerializers.err(value), depth + 1);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_FIELDS.has(k) ? REDACTED : scrubDeep(v, depth + 1);
  }
  return out;
}

export function createLogger(level: string = 'info', destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'qwn' },
      // Secret fields are redacted by name, in the walk of `formatters.log` and, for a child's
      // bindings (which that walk never sees), by the serializers below; not by pino's
      // `redact`, whose paths cost 16 µs a line and a child, twice the rest of a line's logging.
      formatters: {
        // Runs before pino's serializers: errors are serialized (once) and scrubbed here.
        log: (object) => scrubDeep(object) as Record<string, unknown>,
      },
      serializers: {
        ...Object.fromEntries([...SECRET_FIELDS].map((field) => [field, () => REDACTED])),
        // pino's default `err` serializer would run on what formatters.log already serialized
        // and name every error's type "Object".
        err: (err: unknown) => err,
      },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a) => (typeof a === 'string' ? scrub(a) : a));
          return method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
    },
    destination,
  );
}

export type { Logger };
