/**
 * The seed file's shape and per-field rules (docs/subscribers.md), without any I/O: what can be
 * decided from the text alone. Location entries are only classified here; resolving them
 * needs the city lookup (seed-locations.ts).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { parseFilterInput, type SubscriptionFilter } from '../domain/filters.js';
import { parseCoordinates, type Coordinates } from '../qweather/params.js';
import {
  decodeWebhookKey,
  SECRET_MAX_BYTES,
  SECRET_MIN_BYTES,
  WEBHOOK_SECRET_PREFIX as SECRET_PREFIX,
} from '../channels/webhook-secret.js';
import { describeRobot, robotUrlProblem } from '../channels/robot-identity.js';
import type { RobotVendor } from '../domain/robot-render.js';
import { parseScheduleInput, type SubscriberSchedule } from './seed-schedule.js';

/** One thing wrong with the file: `index` is the subscriber's position, null for the document. */
export interface SeedProblem {
  index: number | null;
  /** Path inside the subscriber (`locations[0]`, `secret`), or inside the document. */
  field: string;
  message: string;
}

export type LocationEntry =
  | { kind: 'id'; id: string }
  | { kind: 'coordinates'; text: string; coordinates: Coordinates }
  | { kind: 'name'; query: string; adm: string | null; range: string | null };

export type Lang = 'zh' | 'en';

export type SubscriberAddress =
  | { channel: 'email'; email: string }
  | { channel: 'webhook'; url: string; secret: string | null }
  | { channel: 'robot'; vendor: RobotVendor; url: string; secret: string | null };

/** The seed fields that name a chat robot (docs/messages.md), one per vendor. */
export const ROBOT_VENDORS: readonly RobotVendor[] = ['wecom', 'dingtalk', 'feishu'];

export interface ValidSubscriber {
  index: number;
  name: string | null;
  lang: Lang;
  address: SubscriberAddress;
  filter: SubscriptionFilter;
  /** Grouping, time zone, quiet hours, rate (docs/messages.md). */
  schedule: SubscriberSchedule;
  /** Same order as the file; each entry keeps its own index for error messages. */
  locations: { index: number; entry: LocationEntry }[];
}

/**
 * The result of checking every subscriber: the well-formed location entries are returned even
 * when the subscriber has other problems, so that resolution can report their problems too.
 */
export interface ValidatedDocument {
  problems: SeedProblem[];
  subscribers: ValidSubscriber[];
  /** Location entries to resolve, for subscribers that have other problems as well. */
  pendingLocations: { index: number; locations: { index: number; entry: LocationEntry }[] }[];
}

const documentSchema = z.strictObject({
  subscribers: z.array(z.unknown()),
});

const subscriberSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    // A name goes into email headers and chat titles: a line break there would start another.
    // eslint-disable-next-line no-control-regex
    .refine((v) => !/[\x00\r\n]/.test(v), 'must be one line, without CR, LF or NUL')
    .nullish(),
  email: z.string().nullish(),
  webhook: z.string().nullish(),
  wecom: z.string().nullish(),
  dingtalk: z.string().nullish(),
  feishu: z.string().nullish(),
  secret: z.string().nullish(),
  lang: z.enum(['zh', 'en'], 'must be "zh" or "en"').nullish(),
  locations: z.array(z.unknown()).min(1, 'must list at least one location'),
  minLevel: z.unknown().nullish(),
  types: z.unknown().nullish(),
  events: z.unknown().nullish(),
  group: z.unknown().nullish(),
  timezone: z.unknown().nullish(),
  quietHours: z.unknown().nullish(),
  maxPerHour: z.unknown().nullish(),
});

const nameEntrySchema = z.strictObject({
  query: z.string().trim().min(1, 'must not be empty'),
  adm: z.string().trim().min(1, 'must not be empty').nullish(),
  range: z
    .string()
    .regex(/^(world|[A-Za-z]{2})$/, 'must be "world" or a 2-letter ISO 3166 country code')
    .nullish(),
});

// QWeather Location IDs are 9 digits for Chinese places and alphanumeric elsewhere
// ("10117030601A"); a digit tells an ID from an ASCII place name such as "Beijing".
const LOCATION_ID = /^(?=.*\d)[A-Za-z0-9]{1,32}$/;

// The database's check constraints (src/db/schema.ts) are the floor; these rules are at least
// as strict, so nothing the seed accepts can be refused by Postgres (docs/design.md, invariant 6).
// One mailbox: none of the characters that would let the value name a second one (`,` `;`
// `<` `>` `"`), no whitespace or control characters (README, promises).
const MAILBOX_PART = String.raw`[^@\s,;<>"\u0000-\u001f\u007f`;
const EMAIL = new RegExp(
  String.raw`^${MAILBOX_PART}]+@(?:${MAILBOX_PART}.]+\.)+${MAILBOX_PART}.]+$`,
);
const DB_WEBHOOK = /^https?:\/\/[^/@\s]+(\/\S*)?$/;
/** Standard Webhooks' own generators use 24 bytes; 32 leaves margin at no cost. */
const GENERATED_SECRET_BYTES = 32;

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(GENERATED_SECRET_BYTES).toString('base64');
}

/** `subscribers[2].locations[0]` style paths from zod's path segments. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

function zodProblems(
  error: z.ZodError,
  index: number | null,
  prefix: readonly PropertyKey[],
): SeedProblem[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        index,
        field: formatPath([...prefix, ...issue.path, key]),
        message: 'is not a known field',
      }));
    }
    return [{ index, field: formatPath([...prefix, ...issue.path]), message: issue.message }];
  });
}

export function checkEmail(value: string): string | null {
  if (!EMAIL.test(value)) {
    return 'must be one email address (one @, a dotted domain, none of , ; < > " or spaces)';
  }
  if (value.length > 254) return 'must be at most 254 characters';
  return null;
}

export function checkWebhookUrl(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'must be an http or https URL';
  }
  if (url.username !== '' || url.password !== '') {
    return 'must not embed credentials (user:pass@); authenticate with the signature instead';
  }
  if (url.hostname === '') return 'must name a host';
  if (value.includes('#')) return 'must not have a fragment (#…): it is never sent';
  if (!DB_WEBHOOK.test(value)) {
    return 'must be written as http(s)://host/path, lower-case scheme, no spaces';
  }
  return null;
}

export function checkWebhookSecret(value: string): string | null {
  if (!value.startsWith(SECRET_PREFIX)) return `must start with "${SECRET_PREFIX}"`;
  const decoded = decodeWebhookKey(value.slice(SECRET_PREFIX.length));
  if ('problem' in decoded) {
    return decoded.problem === 'not-base64'
      ? `must be "${SECRET_PREFIX}" followed by base64`
      : `must be "${SECRET_PREFIX}" followed by valid base64`;
  }
  const bytes = decoded.key;
  if (bytes.length < SECRET_MIN_BYTES || bytes.length > SECRET_MAX_BYTES) {
    return `must decode to ${SECRET_MIN_BYTES}–${SECRET_MAX_BYTES} bytes (got ${bytes.length})`;
  }
  return null;
}

/** Classifies one `locations` entry; a string is an ID, coordinates, or a name, in that order. */
export function parseLocationEntry(
  value: unknown,
):
  | { ok: true; entry: LocationEntry }
  | { ok: false; problems: { path: string; message: string }[] } {
  if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') return fail('', 'must not be empty');
    if (LOCATION_ID.test(text)) return { ok: true, entry: { kind: 'id', id: text } };
    const coordinates = parseCoordinates(text);
    if (coordinates) {
      if (coordinates.lon < -180 || coordinates.lon > 180) {
        return fail('', `longitude must be between -180 and 180 ("lon,lat"; got "${text}")`);
      }
      if (coordinates.lat < -90 || coordinates.lat > 90) {
        return fail('', `latitude must be between -90 and 90 ("lon,lat"; got "${text}")`);
      }
      return { ok: true, entry: { kind: 'coordinates', text, coordinates } };
    }
    if (/^[\d\s.,;:/|+-]+$/.test(text)) {
      return fail('', `looks like coordinates but is not "lon,lat" in decimal degrees: "${text}"`);
    }
    return { ok: true, entry: { kind: 'name', query: text, adm: null, range: null } };
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const parsed = nameEntrySchema.safeParse(value);
    if (!parsed.success) {
      return {
        ok: false,
        problems: zodProblems(parsed.error, null, []).map((p) => ({
          path: p.field,
          message: p.message,
        })),
      };
    }
    return {
      ok: true,
      entry: {
        kind: 'name',
        query: parsed.data.query,
        adm: parsed.data.adm ?? null,
        range: parsed.data.range?.toLowerCase() ?? null,
      },
    };
  }
  if (typeof value === 'number') {
    return fail(
      '',
      `write it as a string ("${String(value)}"): numbers lose leading zeros and digits`,
    );
  }
  return fail(
    '',
    'must be a Location ID, "lon,lat", a place name, or { "query", "adm"?, "range"? }',
  );

  function fail(path: string, message: string) {
    return { ok: false as const, problems: [{ path, message }] };
  }
}

/**
 * What is wrong with a robot URL, or null. The URL is the robot's credential: the problem names
 * the robot by host and fingerprint (`describeRobot`), never by the URL itself.
 */
export function checkRobotUrl(vendor: RobotVendor, value: string): string | null {
  const problem = robotUrlProblem(vendor, value);
  if (problem) return problem;
  const url = new URL(value.trim());
  const robot = describeRobot(value);
  if (url.username !== '' || url.password !== '') {
    return `${vendor} robot URL ${robot} must not embed credentials (user:pass@)`;
  }
  if (value.includes('#')) return `${vendor} robot URL ${robot} must not have a fragment (#…)`;
  if (!DB_WEBHOOK.test(value)) {
    return `${vendor} robot URL ${robot} must be written as http(s)://host/path, lower-case scheme, no spaces`;
  }
  return null;
}

/** What is wrong with a robot's signing secret, or null; never quotes the secret. */
export function checkRobotSecret(vendor: RobotVendor, value: string): string | null {
  if (vendor === 'wecom') return 'wecom robots are not signed: remove "secret"';
  if (value.trim() === '') return 'must not be empty';
  if (/\s/.test(value)) return 'must not contain spaces or line breaks';
  if (vendor === 'dingtalk' && !value.startsWith('SEC')) {
    return 'a DingTalk signing secret starts with "SEC" (the robot\'s 加签 setting)';
  }
  return null;
}

/**
 * The identity of a subscriber: its address, compared as the database compares it (an email
 * address without letter case: `A@X.ORG` is the mailbox of `a@x.org`).
 */
export function identityOf(address: SubscriberAddress): string {
  if (address.channel === 'email') return `email:${address.email.toLowerCase()}`;
  return `${address.channel}:${address.url}`;
}

/** The seed field that holds a subscriber's address. */
export function addressField(address: SubscriberAddress): string {
  return address.channel === 'robot' ? address.vendor : address.channel;
}

/** Every rule that needs no lookup; collects all problems instead of stopping at the first. */
export function validateDocument(doc: unknown): ValidatedDocument {
  const result: ValidatedDocument = { problems: [], subscribers: [], pendingLocations: [] };
  const parsed = documentSchema.safeParse(doc);
  if (!parsed.success) {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      result.problems.push({
        index: null,
        field: '',
        message: 'the file must hold an object with a "subscribers" array',
      });
    } else {
      result.problems.push(...zodProblems(parsed.error, null, []));
    }
    return result;
  }

  const seen = new Map<string, number>();
  parsed.data.subscribers.forEach((raw, index) => {
    const problems: SeedProblem[] = [];
    const add = (field: string, message: string) => problems.push({ index, field, message });

    const shape = subscriberSchema.safeParse(raw);
    if (!shape.success) {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
        add('', 'must be an object');
        result.problems.push(...problems);
        return;
      }
      problems.push(...zodProblems(shape.error, index, []));
    }
    // Read the fields leniently from the raw object too, so one bad field does not hide the
    // problems of the others.
    const input = (shape.success ? shape.data : raw) as Record<string, unknown>;

    const address = readAddress(input, add);
    const filter = parseFilterInput({
      minLevel: input.minLevel,
      types: input.types,
      events: input.events,
    });
    if (!filter.ok) for (const p of filter.problems) add(p.field, p.message);
    const schedule = parseScheduleInput(input);
    if (!schedule.ok) for (const p of schedule.problems) add(p.field, p.message);

    const locations: { index: number; entry: LocationEntry }[] = [];
    if (Array.isArray(input.locations)) {
      input.locations.forEach((value: unknown, locationIndex) => {
        const entry = parseLocationEntry(value);
        const field = `locations[${locationIndex}]`;
        if (entry.ok) locations.push({ index: locationIndex, entry: entry.entry });
        else for (const p of entry.problems) add(p.path ? `${field}.${p.path}` : field, p.message);
      });
    }

    if (address) {
      const identity = identityOf(address);
      // Postgres compares addresses exactly, but two spellings of one mailbox in one file are
      // surely a mistake.
      const key = identity.toLowerCase();
      const first = seen.get(key);
      if (first !== undefined) {
        add(
          addressField(address),
          `duplicates subscribers[${first}]: an address may appear only once`,
        );
      } else {
        seen.set(key, index);
      }
    }

    if (problems.length > 0 || !address || !filter.ok || !schedule.ok || !shape.success) {
      result.problems.push(...problems);
      if (locations.length > 0) result.pendingLocations.push({ index, locations });
      return;
    }
    result.subscribers.push({
      index,
      name: shape.data.name ?? null,
      lang: shape.data.lang ?? 'zh',
      address,
      filter: filter.filter,
      schedule: schedule.schedule,
      locations,
    });
  });
  return result;
}

function readAddress(
  input: Record<string, unknown>,
  add: (field: string, message: string) => void,
): SubscriberAddress | null {
  const { email, webhook, secret } = input;
  const present = (['email', 'webhook', ...ROBOT_VENDORS] as const).filter(
    (field) => input[field] !== undefined && input[field] !== null,
  );
  if (present.length > 1) {
    add(
      present[1]!,
      `a subscriber has exactly one of "email", "webhook", "wecom", "dingtalk" or "feishu", not ${present.map((f) => `"${f}"`).join(' and ')}`,
    );
    return null;
  }
  const field = present[0];
  if (field === undefined) {
    add(
      'email',
      'a subscriber needs an "email" or a "webhook" (or a robot: "wecom", "dingtalk", "feishu")',
    );
    return null;
  }
  const hasSecret = secret !== undefined && secret !== null;
  if (field === 'email') {
    if (hasSecret) add('secret', 'only webhook, dingtalk and feishu subscribers have a secret');
    if (typeof email !== 'string') return null;
    const problem = checkEmail(email);
    if (problem) {
      add('email', problem);
      return null;
    }
    return { channel: 'email', email };
  }
  if (field !== 'webhook') {
    const url = input[field];
    if (typeof url !== 'string') return null;
    let ok = true;
    const urlProblem = checkRobotUrl(field, url);
    if (urlProblem) {
      add(field, urlProblem);
      ok = false;
    }
    if (typeof secret === 'string') {
      const secretProblem = checkRobotSecret(field, secret);
      if (secretProblem) {
        add('secret', secretProblem);
        ok = false;
      }
    }
    return ok
      ? {
          channel: 'robot',
          vendor: field,
          url,
          secret: typeof secret === 'string' ? secret : null,
        }
      : null;
  }
  if (typeof webhook !== 'string') return null;
  let ok = true;
  const urlProblem = checkWebhookUrl(webhook);
  if (urlProblem) {
    add('webhook', urlProblem);
    ok = false;
  }
  if (typeof secret === 'string') {
    const secretProblem = checkWebhookSecret(secret);
    if (secretProblem) {
      add('secret', secretProblem);
      ok = false;
    }
  }
  return ok
    ? { channel: 'webhook', url: webhook, secret: typeof secret === 'string' ? secret : null }
    : null;
}
