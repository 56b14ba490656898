import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { z } from 'zod';
import { parseMailFrom } from './channels/mime.js';
import { scrub } from './logger.js';

/**
 * The only reader of the environment. Everything else receives a `Config`.
 * A wrong value becomes one line naming the variable; all bad variables are reported at once.
 */

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const httpUrl = z
  .string()
  .url('must be an absolute URL')
  // zod runs the refinement after a failed .url() too: an unparseable value must not throw here.
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'must be an http(s) URL')
  .transform((u) => u.replace(/\/+$/, ''));

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const envSchema = z.object({
  DATABASE_URL: optional(
    z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL'),
  ),
  REDIS_URL: optional(z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')),
  QUEUE_PREFIX: optional(z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only')),
  QWEATHER_API_URL: optional(httpUrl),
  QWEATHER_GEO_URL: optional(httpUrl),
  QWEATHER_API_KEY: optional(z.string().min(1)),
  QWEATHER_KEY_TRANSPORT: optional(z.enum(['query', 'header'])),
  QWEATHER_JWT_KEY_ID: optional(z.string().min(1)),
  QWEATHER_JWT_PROJECT_ID: optional(z.string().min(1)),
  QWEATHER_JWT_PRIVATE_KEY: optional(z.string().min(1)),
  QWEATHER_ALERT_SOURCE: optional(z.enum(['auto', 'v7', 'v1'])),
  V1_POINTS: optional(z.enum(['exact', 'place'])),
  QWEATHER_MONTHLY_CALLS: optional(int(1, 1_000_000_000_000)),
  QWEATHER_QPM: optional(int(1, 1_000_000)),
  QWEATHER_TIMEOUT_MS: optional(int(100, 120_000)),
  WARNING_RANGE: optional(z.string().regex(/^[a-z]{2}$/, 'must be a two-letter country code')),
  POLL_INTERVAL_SECONDS: optional(int(1, 86_400)),
  CHECK_ALL_LISTED: optional(bool),
  EXPIRE_AFTER_MISSES: optional(int(1, 100)),
  EXPIRE_AFTER_SECONDS: optional(int(0, 86_400)),
  CHECK_CONCURRENCY: optional(int(1, 1000)),
  DELIVERY_CONCURRENCY: optional(int(1, 1000)),
  SMTP_URL: optional(z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')),
  MAIL_FROM: optional(
    z
      .string()
      .refine(
        (v) => parseMailFrom(v) !== undefined,
        'must hold one email address on one line, e.g. "qwn alerts <alerts@example.com>"',
      ),
  ),
  WEBHOOK_ALLOW_PRIVATE: optional(bool),
  WEBHOOK_TIMEOUT_MS: optional(int(100, 120_000)),
  // An address to bind, not a name: 127.0.0.1, ::1, 0.0.0.0 (every interface), ::.
  HTTP_HOST: optional(
    z.string().refine((v) => isIP(v) !== 0, 'must be an IP address such as 127.0.0.1 or 0.0.0.0'),
  ),
  HTTP_PORT: optional(int(0, 65_535)),
  // The base of the links in emails (unsubscribe): paths are appended, so no query or fragment.
  PUBLIC_URL: optional(
    httpUrl.refine(
      (u) => !/[?#@]/.test(u.replace(/^https?:\/\//, '')),
      'must be a plain base URL such as https://alerts.example.com (no user, query or fragment)',
    ),
  ),
  // Signs the unsubscribe links (HMAC-SHA256): as hard to guess as the links must be.
  UNSUBSCRIBE_SECRET: optional(z.string().min(32, 'must be at least 32 characters')),
  // At least a week: shorter would cut into detection's 72-hour window and leave no time to
  // ask what happened last weekend.
  RETENTION_DAYS: optional(int(7, 36_500)),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])),
});

/** Every variable the configuration reads (the README, .env.example and compose list these). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

export interface JwtCredentials {
  readonly keyId: string;
  readonly projectId: string;
  /** PKCS8 PEM text (read from the file when the variable held a path). */
  readonly privateKeyPem: string;
}

export interface Config {
  readonly databaseUrl: string | undefined;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  readonly qweather: {
    readonly apiUrl: string | undefined;
    readonly geoUrl: string | undefined;
    readonly apiKey: string | undefined;
    readonly keyTransport: 'query' | 'header';
    readonly jwt: JwtCredentials | undefined;
    /** `auto`: v7 while QWeather serves it, then v1 for good (src/detection/upstream-source.ts). */
    readonly alertSource: 'auto' | 'v7' | 'v1';
    /** How subscriptions become v1 points (src/domain/points.ts). */
    readonly v1Points: 'exact' | 'place';
    /** A monthly call budget: the v1 cycle is lengthened to fit (src/domain/plan.ts). */
    readonly monthlyCalls: number | undefined;
    readonly qpm: number;
    readonly timeoutMs: number;
  };
  readonly warningRange: string;
  readonly pollIntervalSeconds: number;
  readonly checkAllListed: boolean;
  readonly expireAfterMisses: number;
  /** The least time from a warning's last sighting to the miss that ends it (README, promises). */
  readonly expireAfterSeconds: number;
  readonly checkConcurrency: number;
  readonly deliveryConcurrency: number;
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string | undefined;
  readonly webhookAllowPrivate: boolean;
  readonly webhookTimeoutMs: number;
  readonly httpHost: string;
  readonly httpPort: number;
  /** Where the worker's HTTP server is reached from outside (docs/subscribers.md); no trailing slash. */
  readonly publicUrl: string | undefined;
  readonly unsubscribeSecret: string | undefined;
  /** Finished notifications, events and poll cycles older than this are pruned. */
  readonly retentionDays: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

/**
 * A setting this command needs is absent (valid as configuration, since other commands do
 * without it). The CLI reports it like a usage mistake: one line, exit code 2.
 */
export class MissingSettingError extends Error {
  override name = 'MissingSettingError';
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** Values are quoted in errors up to this many characters. */
const SHOWN_MAX = 60;

/**
 * A bad value as an error may quote it: keys, secrets and passwords never; URLs without their
 * credentials and key parameters; anything long shortened.
 */
function shownValue(name: string, value: string | undefined): string | null {
  if (value === undefined || /_KEY$|PRIVATE|SECRET|PASS|TOKEN/.test(name)) return null;
  const text = (/URL$/.test(name) ? scrub(value) : value).replace(/\s+/g, ' ');
  return text.length <= SHOWN_MAX ? text : `${text.slice(0, SHOWN_MAX - 1)}…`;
}

function readPrivateKey(value: string): string {
  if (value.includes('-----BEGIN')) return value.replace(/\\n/g, '\n');
  const path = resolve(value);
  if (!existsSync(path)) {
    // Not quoted: a key pasted without its PEM header would read as a path here.
    throw new ConfigError([
      'QWEATHER_JWT_PRIVATE_KEY: is neither PEM text nor the path of a readable file',
    ]);
  }
  return readFileSync(path, 'utf8');
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? 'environment');
        const shown = shownValue(name, env[name]);
        return `${name}: ${issue.message}${shown === null ? '' : ` (got "${shown}")`}`;
      }),
    );
  }
  const e = parsed.data;
  const jwtParts = [e.QWEATHER_JWT_KEY_ID, e.QWEATHER_JWT_PROJECT_ID, e.QWEATHER_JWT_PRIVATE_KEY];
  const jwtGiven = jwtParts.filter((p) => p !== undefined).length;
  if (jwtGiven !== 0 && jwtGiven !== 3) {
    throw new ConfigError([
      'QWEATHER_JWT_KEY_ID, QWEATHER_JWT_PROJECT_ID, QWEATHER_JWT_PRIVATE_KEY: set all three or none',
    ]);
  }
  const jwt =
    jwtGiven === 3
      ? {
          keyId: e.QWEATHER_JWT_KEY_ID!,
          projectId: e.QWEATHER_JWT_PROJECT_ID!,
          privateKeyPem: readPrivateKey(e.QWEATHER_JWT_PRIVATE_KEY!),
        }
      : undefined;

  return deepFreeze<Config>({
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL ?? 'redis://127.0.0.1:6379',
    queuePrefix: e.QUEUE_PREFIX ?? 'qwn',
    qweather: {
      apiUrl: e.QWEATHER_API_URL,
      geoUrl: e.QWEATHER_GEO_URL ?? e.QWEATHER_API_URL,
      apiKey: e.QWEATHER_API_KEY,
      keyTransport: e.QWEATHER_KEY_TRANSPORT ?? 'query',
      jwt,
      // v7's warning endpoints are being retired (notes/qweather-facts.md): follow QWeather.
      alertSource: e.QWEATHER_ALERT_SOURCE ?? 'auto',
      v1Points: e.V1_POINTS ?? 'exact',
      monthlyCalls: e.QWEATHER_MONTHLY_CALLS,
      // 3000 queries per minute is QWeather's pay-as-you-go project limit.
      qpm: e.QWEATHER_QPM ?? 3000,
      timeoutMs: e.QWEATHER_TIMEOUT_MS ?? 10_000,
    },
    warningRange: e.WARNING_RANGE ?? 'cn',
    pollIntervalSeconds: e.POLL_INTERVAL_SECONDS ?? 300,
    checkAllListed: e.CHECK_ALL_LISTED ?? false,
    expireAfterMisses: e.EXPIRE_AFTER_MISSES ?? 2,
    // Three default poll periods: an upstream that blinks a warning out for a cycle or two must
    // not make qwn announce its end.
    expireAfterSeconds: e.EXPIRE_AFTER_SECONDS ?? 900,
    // A check mostly waits, on the upstream and on its transaction: 16 at once finished a
    // storm's 1,592 checks in 11.6 s instead of 20 s on two cores (docs/benchmarks-history.md),
    // and with a slow upstream they keep QWEATHER_QPM, not the workers, the limit.
    checkConcurrency: e.CHECK_CONCURRENCY ?? 16,
    deliveryConcurrency: e.DELIVERY_CONCURRENCY ?? 32,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE ?? false,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS ?? 10_000,
    // Loopback unless asked: /metrics and /healthz are for this host's scraper and probes; a
    // container sets 0.0.0.0 (Dockerfile, compose).
    httpHost: e.HTTP_HOST ?? '127.0.0.1',
    httpPort: e.HTTP_PORT ?? 9464,
    publicUrl: e.PUBLIC_URL,
    unsubscribeSecret: e.UNSUBSCRIBE_SECRET,
    retentionDays: e.RETENTION_DAYS ?? 90,
    logLevel: e.LOG_LEVEL ?? 'info',
  });
}

/** The environment (the process's) merged over a `.env` file in the working directory (env wins). */
export function readEnvironment(
  cwd: string = process.cwd(),
  env: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string | undefined> {
  const file = resolve(cwd, '.env');
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
  return { ...fromFile, ...env };
}
