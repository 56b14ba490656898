/**
 * `qwn seed`: make the subscribers of a seed file exist exactly as written (docs/subscribers.md).
 * All or nothing (docs/design.md, invariant 6): every entry is validated and every place resolved
 * before the first write, and the writes happen in one transaction.
 */
import { randomUUID } from 'node:crypto';
import { eq, inArray, or, sql } from 'drizzle-orm';
import { parseDocument, visit } from 'yaml';
import { robotCredential } from '../channels/robot-identity.js';
import { transaction, type Db } from '../db/client.js';
import { places, subscribers, subscriptions } from '../db/schema.js';
import type { SubscriptionFilter } from '../domain/filters.js';
import { pointAt } from '../domain/points.js';
import { registerSecret, type Logger } from '../logger.js';
import {
  entryKey,
  resolveEntries,
  type CityLookup,
  type Resolution,
  type ResolvedPlace,
} from './seed-locations.js';
import { quoteValue, type SubscriberSchedule } from './seed-schedule.js';
import {
  generateWebhookSecret,
  validateDocument,
  type LocationEntry,
  type SeedProblem,
  type ValidSubscriber,
} from './seed-validate.js';

export type { CityLookup, SeedProblem };

export type SeedResult =
  | {
      ok: true;
      created: number;
      updated: number;
      unchanged: number;
      subscriptionsRemoved: number;
      /** Secrets made for new webhook subscribers: shown once, never logged. */
      generatedSecrets: { subscriber: string; secret: string }[];
      /** Subscribers of the file who unsubscribed; left so (docs/design.md, invariant 11). */
      unsubscribed: UnsubscribedSubscriber[];
      /** What `--resubscribe` did with each address it named. */
      resubscribed: { email: string; outcome: 'resubscribed' | 'was-subscribed' }[];
    }
  | { ok: false; problems: SeedProblem[] };

export interface UnsubscribedSubscriber {
  index: number;
  name: string | null;
  email: string;
  since: Date;
}

export interface SeedOptions {
  dryRun?: boolean;
  /**
   * Email addresses whose unsubscribe is undone on purpose (compared without case). Each must
   * be a subscriber in the file or in the database; an unknown one is a problem like any other.
   */
  resubscribe?: readonly string[];
}

export interface SeedDeps {
  db: Db;
  lookup: CityLookup;
  logger: Logger;
}

/** The file could not be read as JSON or YAML at all; `line`/`column` are 1-based. */
export class SeedError extends Error {
  override name = 'SeedError';
  constructor(
    /** What is wrong, without the position. */
    readonly reason: string,
    readonly line: number | null = null,
    readonly column: number | null = null,
  ) {
    super(
      line === null
        ? reason
        : `line ${line}${column === null ? '' : `, column ${column}`}: ${reason}`,
    );
  }
}

export function seedFormatOf(path: string): 'json' | 'yaml' | null {
  if (/\.json$/i.test(path)) return 'json';
  if (/\.ya?ml$/i.test(path)) return 'yaml';
  return null;
}

export function parseSeedText(text: string, format: 'json' | 'yaml'): unknown {
  const body = text.replace(/^\uFEFF/, '');
  return format === 'json' ? parseJson(body) : parseYaml(body);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const position = /at position (\d+)/.exec(message);
    if (position?.[1] !== undefined) {
      const offset = Number(position[1]);
      const before = text.slice(0, offset).split('\n');
      const column = (before[before.length - 1] ?? '').length + 1;
      throw new SeedError(cleanJsonMessage(message), before.length, column);
    }
    // A file cut short ends "unexpectedly" without a position: point at its end.
    const lines = text.split('\n');
    throw new SeedError(cleanJsonMessage(message), lines.length, (lines.at(-1) ?? '').length + 1);
  }
}

function cleanJsonMessage(message: string): string {
  return `invalid JSON: ${message.replace(/\s*(in JSON )?at position \d+.*$/s, '')}`;
}

function parseYaml(text: string): unknown {
  // The failsafe schema reads every scalar as a string: an unquoted Location ID stays
  // "101210101", a type code "1003" keeps its text, and "no" does not turn into false.
  const doc = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const at = first.linePos?.[0];
    const headline = (first.message.split('\n')[0] ?? first.code).replace(
      / at line \d+, column \d+:?$/,
      '',
    );
    throw new SeedError(`invalid YAML: ${headline}`, at?.line ?? null, at?.col ?? null);
  }
  // …but an empty value, ~ or null written plainly still means "not set", as in JSON.
  visit(doc, {
    Scalar(_key, node) {
      if (node.type === 'PLAIN' && /^(~|null|Null|NULL|)$/.test(String(node.value))) {
        node.value = null;
      }
    },
  });
  return doc.toJS() as unknown;
}

interface PlannedSubscriber {
  source: ValidSubscriber;
  places: ResolvedPlace[];
  /** Per place id: the v1 points its `lon,lat` entries gave (null: none, the place's own). */
  points: Map<string, string[] | null>;
}

export async function applySeed(
  deps: SeedDeps,
  doc: unknown,
  options: SeedOptions = {},
): Promise<SeedResult> {
  const validated = validateDocument(doc);
  for (const subscriber of validated.subscribers) {
    if (subscriber.address.channel === 'email') continue;
    registerSecret(subscriber.address.secret ?? undefined);
    if (subscriber.address.channel === 'robot') {
      registerSecret(robotCredential(subscriber.address.url));
    }
  }

  const allEntries: LocationEntry[] = [
    ...validated.subscribers.flatMap((s) => s.locations.map((l) => l.entry)),
    ...validated.pendingLocations.flatMap((s) => s.locations.map((l) => l.entry)),
  ];
  const resolutions = await resolveEntries(deps.lookup, allEntries);

  const problems = [...validated.problems];
  const resolutionProblems = (
    index: number,
    locations: readonly { index: number; entry: LocationEntry }[],
  ) => {
    for (const location of locations) {
      const resolution = resolutions.get(entryKey(location.entry));
      if (resolution && !resolution.ok) {
        problems.push({
          index,
          field: `locations[${location.index}]`,
          message: resolution.message,
        });
      }
    }
  };
  for (const s of validated.subscribers) resolutionProblems(s.index, s.locations);
  for (const s of validated.pendingLocations) resolutionProblems(s.index, s.locations);

  if (problems.length > 0) {
    deps.logger.debug({ problems: problems.length }, 'seed refused');
    return { ok: false, problems: sortProblems(problems) };
  }

  const planned = validated.subscribers.map((source) => ({
    source,
    places: placesOf(source, resolutions),
    points: pointsOf(source, resolutions),
  }));

  const resubscribe = options.resubscribe ?? [];
  if (options.dryRun) {
    const plan = await planChanges(deps.db, planned, resubscribe);
    if (plan.unknownResubscribe.length > 0) return refuseResubscribe(plan.unknownResubscribe);
    return { ok: true, ...plan.counts, generatedSecrets: [], ...plan.report };
  }

  const namesEn = await englishPlaceNames(deps, planned);
  const result = await transaction(deps.db, async (tx) => {
    // Two seeds at once would race between reading a subscriber and writing it.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${SEED_LOCK_KEY})`);
    const plan = await planChanges(tx, planned, resubscribe);
    if (plan.unknownResubscribe.length > 0) return plan;
    await upsertPlaces(tx, planned, namesEn);
    await writePlan(tx, plan);
    return plan;
  });
  if (result.unknownResubscribe.length > 0) return refuseResubscribe(result.unknownResubscribe);
  for (const generated of result.generatedSecrets) registerSecret(generated.secret);
  deps.logger.debug({ ...result.counts }, 'seed applied');
  return {
    ok: true,
    ...result.counts,
    generatedSecrets: result.generatedSecrets,
    ...result.report,
  };
}

function refuseResubscribe(unknown: readonly string[]): SeedResult {
  return {
    ok: false,
    problems: unknown.map((email) => ({
      index: null,
      field: '--resubscribe',
      message: `${quoteValue(email)} is no email subscriber (not in the file, not in the database)`,
    })),
  };
}

/** Advisory lock key of `qwn seed` ("qwns"); distinct from the migration lock. */
const SEED_LOCK_KEY = 0x71776e73;

function sortProblems(problems: SeedProblem[]): SeedProblem[] {
  // Stable: within one subscriber, problems keep the order of the fields in the rules.
  return problems
    .map((problem, order) => ({ problem, order }))
    .sort((a, b) => (a.problem.index ?? -1) - (b.problem.index ?? -1) || a.order - b.order)
    .map(({ problem }) => problem);
}

/** The subscriber's places in file order; two entries naming one place subscribe it once. */
function placesOf(source: ValidSubscriber, resolutions: Map<string, Resolution>): ResolvedPlace[] {
  const byId = new Map<string, ResolvedPlace>();
  for (const location of source.locations) {
    const resolution = resolutions.get(entryKey(location.entry));
    if (resolution?.ok && !byId.has(resolution.place.id)) {
      byId.set(resolution.place.id, resolution.place);
    }
  }
  return [...byId.values()];
}

/**
 * The exact points a subscriber gave as `lon,lat`, per place they resolved to: in v1 mode the
 * point itself is watched, not the centre of the nearest city the lookup found (coordinates
 * kept; two points in one district stay two points). A place also named by id or name keeps its
 * own centre as one of its points. Places with no `lon,lat` entry get null (their centre).
 */
function pointsOf(
  source: ValidSubscriber,
  resolutions: Map<string, Resolution>,
): Map<string, string[] | null> {
  const given = new Map<string, Set<string>>();
  const named = new Set<string>();
  const centres = new Map<string, string>();
  for (const location of source.locations) {
    const resolution = resolutions.get(entryKey(location.entry));
    if (!resolution?.ok) continue;
    const place = resolution.place;
    const centre = place.lat === null || place.lon === null ? null : pointAt(place.lat, place.lon);
    if (centre) centres.set(place.id, centre.key);
    if (location.entry.kind !== 'coordinates') {
      named.add(place.id);
      continue;
    }
    const point = pointAt(location.entry.coordinates.lat, location.entry.coordinates.lon);
    if (!point) continue;
    const keys = given.get(place.id) ?? new Set<string>();
    keys.add(point.key);
    given.set(place.id, keys);
  }
  const result = new Map<string, string[] | null>();
  for (const id of new Set([...named, ...given.keys()])) {
    const keys = given.get(id);
    if (!keys) {
      result.set(id, null);
      continue;
    }
    const centre = centres.get(id);
    if (named.has(id) && centre !== undefined) keys.add(centre);
    result.set(id, [...keys].sort());
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Planning: compare the file with the store, so that an unchanged subscriber is not written
// at all (seeding twice changes nothing, not even updated_at).

type SubscriberRow = typeof subscribers.$inferSelect;
type SubscriptionRow = typeof subscriptions.$inferSelect;

interface SubscriptionValues {
  placeId: string;
  minLevel: string | null;
  types: string[] | null;
  events: string[] | null;
  points: string[] | null;
}

type SubscriberChange =
  | { kind: 'create'; values: typeof subscribers.$inferInsert; subscriptions: SubscriptionValues[] }
  | {
      kind: 'update' | 'unchanged';
      id: string;
      /** Null when the subscriber's own fields stay as they are. */
      fields: Partial<typeof subscribers.$inferInsert> | null;
      insert: SubscriptionValues[];
      update: { id: string; values: SubscriptionValues }[];
      remove: string[];
    };

interface Plan {
  changes: SubscriberChange[];
  counts: { created: number; updated: number; unchanged: number; subscriptionsRemoved: number };
  generatedSecrets: { subscriber: string; secret: string }[];
  /** Subscribers whose `unsubscribed_at` `--resubscribe` clears. */
  resubscribeIds: string[];
  /** `--resubscribe` addresses that name nobody: the seed is refused. */
  unknownResubscribe: string[];
  report: {
    unsubscribed: UnsubscribedSubscriber[];
    resubscribed: { email: string; outcome: 'resubscribed' | 'was-subscribed' }[];
  };
}

function sameSchedule(row: SubscriberRow, schedule: SubscriberSchedule): boolean {
  return (Object.keys(schedule) as (keyof SubscriberSchedule)[]).every(
    (key) => row[key] === schedule[key],
  );
}

async function planChanges(
  db: Db,
  planned: readonly PlannedSubscriber[],
  resubscribe: readonly string[],
): Promise<Plan> {
  const emails = planned.flatMap((p) =>
    p.source.address.channel === 'email' ? [p.source.address.email] : [],
  );
  const urls = planned.flatMap((p) =>
    p.source.address.channel === 'webhook' ? [p.source.address.url] : [],
  );
  const robotUrls = planned.flatMap((p) =>
    p.source.address.channel === 'robot' ? [p.source.address.url] : [],
  );
  const conditions = [
    // A mailbox compares without letter case (README, promises), as its unique index does.
    ...(emails.length > 0
      ? [
          sql`lower(${subscribers.email}) = ANY(${sql.param(emails.map((e) => e.toLowerCase()))}::text[])`,
        ]
      : []),
    ...(urls.length > 0 ? [sql`${subscribers.webhookUrl} = ANY(${sql.param(urls)}::text[])`] : []),
    ...(robotUrls.length > 0
      ? [sql`${subscribers.robotUrl} = ANY(${sql.param(robotUrls)}::text[])`]
      : []),
  ];
  const existing: SubscriberRow[] =
    conditions.length > 0
      ? await db
          .select()
          .from(subscribers)
          .where(or(...conditions))
      : [];
  const existingSubscriptions: SubscriptionRow[] =
    existing.length > 0
      ? await db
          .select()
          .from(subscriptions)
          .where(
            sql`${subscriptions.subscriberId} = ANY(${sql.param(existing.map((s) => s.id))}::uuid[])`,
          )
      : [];

  // By subscriber, once: a re-seed of 100,000 subscribers must not scan every subscription for each.
  const subscriptionsOf = new Map<string, SubscriptionRow[]>();
  for (const row of existingSubscriptions) {
    const list = subscriptionsOf.get(row.subscriberId) ?? [];
    list.push(row);
    subscriptionsOf.set(row.subscriberId, list);
  }

  const byEmail = new Map(
    existing.flatMap((s) => (s.email === null ? [] : [[s.email.toLowerCase(), s]])),
  );
  const byUrl = new Map(
    existing.flatMap((s) => (s.webhookUrl === null ? [] : [[s.webhookUrl, s]])),
  );
  const byRobot = new Map(existing.flatMap((s) => (s.robotUrl === null ? [] : [[s.robotUrl, s]])));

  const plan: Plan = {
    changes: [],
    counts: { created: 0, updated: 0, unchanged: 0, subscriptionsRemoved: 0 },
    generatedSecrets: [],
    resubscribeIds: [],
    unknownResubscribe: [],
    report: { unsubscribed: [], resubscribed: [] },
  };

  // `--resubscribe`: addresses compare without case, as people type them.
  const wantedBack = new Set(resubscribe.map((email) => email.trim().toLowerCase()));
  if (wantedBack.size > 0) {
    const rows = await db
      .select({
        id: subscribers.id,
        email: subscribers.email,
        unsubscribedAt: subscribers.unsubscribedAt,
      })
      .from(subscribers)
      .where(sql`lower(${subscribers.email}) = ANY(${sql.param([...wantedBack])}::text[])`);
    const inFile = new Set(emails.map((email) => email.toLowerCase()));
    for (const email of wantedBack) {
      const matching = rows.filter((row) => row.email?.toLowerCase() === email);
      if (matching.length === 0 && !inFile.has(email)) {
        plan.unknownResubscribe.push(email);
        continue;
      }
      const away = matching.filter((row) => row.unsubscribedAt !== null);
      plan.resubscribeIds.push(...away.map((row) => row.id));
      plan.report.resubscribed.push({
        email,
        outcome: away.length > 0 ? 'resubscribed' : 'was-subscribed',
      });
    }
  }
  for (const { source, places: subscribed, points } of planned) {
    const address = source.address;
    const wanted = subscribed.map((place) =>
      subscriptionValues(place.id, source.filter, points.get(place.id) ?? null),
    );
    const current =
      address.channel === 'email'
        ? byEmail.get(address.email.toLowerCase())
        : address.channel === 'robot'
          ? byRobot.get(address.url)
          : byUrl.get(address.url);

    if (!current) {
      let secret: string | null = null;
      if (address.channel === 'webhook') {
        secret = address.secret;
        if (secret === null) {
          secret = generateWebhookSecret();
          plan.generatedSecrets.push({ subscriber: address.url, secret });
        }
      }
      plan.changes.push({
        kind: 'create',
        values: {
          name: source.name,
          lang: source.lang,
          email: address.channel === 'email' ? address.email : null,
          webhookUrl: address.channel === 'webhook' ? address.url : null,
          webhookSecret: secret,
          robotKind: address.channel === 'robot' ? address.vendor : null,
          robotUrl: address.channel === 'robot' ? address.url : null,
          robotSecret: address.channel === 'robot' ? address.secret : null,
          ...source.schedule,
        },
        subscriptions: wanted,
      });
      plan.counts.created += 1;
      continue;
    }

    const fields: Partial<typeof subscribers.$inferInsert> = {};
    if (current.name !== source.name) fields.name = source.name;
    if (current.lang !== source.lang) fields.lang = source.lang;
    // A field removed from the file clears its column: the file is the whole truth.
    if (!sameSchedule(current, source.schedule)) Object.assign(fields, source.schedule);
    // Never cleared here: only `--resubscribe` undoes an unsubscribe (docs/design.md, invariant 11).
    if (
      current.unsubscribedAt !== null &&
      current.email !== null &&
      !wantedBack.has(current.email.toLowerCase())
    ) {
      plan.report.unsubscribed.push({
        index: source.index,
        name: source.name,
        email: current.email,
        since: current.unsubscribedAt,
      });
    }
    // No secret in the file keeps the stored one: a re-seed must not break a consumer.
    if (address.channel === 'webhook' && address.secret !== null) {
      if (current.webhookSecret !== address.secret) fields.webhookSecret = address.secret;
    }
    // A robot's secret is the robot's setting, not ours: the file says whether it signs.
    if (address.channel === 'robot') {
      if (current.robotKind !== address.vendor) fields.robotKind = address.vendor;
      if (current.robotSecret !== address.secret) fields.robotSecret = address.secret;
    }

    const currentByPlace = new Map(
      (subscriptionsOf.get(current.id) ?? []).map((s) => [s.placeId, s]),
    );
    const wantedPlaces = new Set(wanted.map((w) => w.placeId));
    const insert: SubscriptionValues[] = [];
    const update: { id: string; values: SubscriptionValues }[] = [];
    for (const values of wanted) {
      const row = currentByPlace.get(values.placeId);
      if (!row) insert.push(values);
      else if (!sameSubscription(row, values)) update.push({ id: row.id, values });
    }
    const remove = [...currentByPlace.values()]
      .filter((row) => !wantedPlaces.has(row.placeId))
      .map((row) => row.id);

    const fieldsChanged = Object.keys(fields).length > 0;
    const changed = fieldsChanged || insert.length + update.length + remove.length > 0;
    plan.changes.push({
      kind: changed ? 'update' : 'unchanged',
      id: current.id,
      fields: fieldsChanged ? fields : null,
      insert,
      update,
      remove,
    });
    if (changed) plan.counts.updated += 1;
    else plan.counts.unchanged += 1;
    plan.counts.subscriptionsRemoved += remove.length;
  }
  return plan;
}

function subscriptionValues(
  placeId: string,
  filter: SubscriptionFilter,
  points: string[] | null,
): SubscriptionValues {
  return {
    placeId,
    minLevel: filter.minLevel,
    types: filter.types === null ? null : [...filter.types],
    events: filter.events === null ? null : [...filter.events],
    points,
  };
}

function sameSubscription(row: SubscriptionRow, values: SubscriptionValues): boolean {
  return (
    row.minLevel === values.minLevel &&
    sameList(row.types, values.types) &&
    sameList(row.events, values.events) &&
    sameList(row.points, values.points)
  );
}

function sameList(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

// ---------------------------------------------------------------------------------------------
// Writing

/** Lookups in flight at once for English names, as for resolving places. */
const ENGLISH_LOOKUPS = 4;

/**
 * The upstream's English names (`lang=en`) of the places English subscribers watch, so their
 * messages name the place in English (README, promises). A lookup that fails leaves the Chinese
 * name: a missing translation never refuses a seed.
 */
async function englishPlaceNames(
  deps: SeedDeps,
  planned: readonly PlannedSubscriber[],
): Promise<Map<string, string>> {
  const ids = [
    ...new Set(
      planned.filter((p) => p.source.lang === 'en').flatMap((p) => p.places.map((pl) => pl.id)),
    ),
  ];
  const names = new Map<string, string>();
  for (let i = 0; i < ids.length; i += ENGLISH_LOOKUPS) {
    await Promise.all(
      ids.slice(i, i + ENGLISH_LOOKUPS).map(async (id) => {
        try {
          const [place] = await deps.lookup.lookupCity({ location: id, lang: 'en', number: 1 });
          if (place?.id === id && place.name.trim() !== '') names.set(id, place.name.trim());
        } catch (err) {
          deps.logger.info({ err, placeId: id }, 'english place name not looked up');
        }
      }),
    );
  }
  return names;
}

async function upsertPlaces(
  db: Db,
  planned: readonly PlannedSubscriber[],
  namesEn: ReadonlyMap<string, string>,
): Promise<void> {
  const byId = new Map<string, ResolvedPlace & { nameEn: string | null }>();
  for (const p of planned) {
    for (const place of p.places)
      byId.set(place.id, { ...place, nameEn: namesEn.get(place.id) ?? null });
  }
  const all = [...byId.values()];
  for (let i = 0; i < all.length; i += SEED_BATCH) {
    await upsertPlaceBatch(db, all.slice(i, i + SEED_BATCH));
  }
}

async function upsertPlaceBatch(
  db: Db,
  batch: readonly (ResolvedPlace & { nameEn: string | null })[],
): Promise<void> {
  await db
    .insert(places)
    .values([...batch])
    .onConflictDoUpdate({
      target: places.id,
      set: {
        name: sql`excluded.name`,
        // A seed without English subscribers there keeps the name looked up before.
        nameEn: sql`coalesce(excluded.name_en, ${places.nameEn})`,
        lat: sql`excluded.lat`,
        lon: sql`excluded.lon`,
        tz: sql`excluded.tz`,
        adm1: sql`excluded.adm1`,
        adm2: sql`excluded.adm2`,
        country: sql`excluded.country`,
      },
      // Rewriting an identical row would still create a new row version for nothing.
      setWhere: sql`(${places.name}, coalesce(excluded.name_en, ${places.nameEn}), ${places.lat}, ${places.lon}, ${places.tz}, ${places.adm1}, ${places.adm2}, ${places.country}) IS DISTINCT FROM (excluded.name, ${places.nameEn}, excluded.lat, excluded.lon, excluded.tz, excluded.adm1, excluded.adm2, excluded.country)`,
    });
}

/** Rows per statement. */
const SEED_BATCH = 1000;

type CreateChange = Extract<SubscriberChange, { kind: 'create' }>;

async function insertSubscribers(
  db: Db,
  batch: readonly { id: string; change: CreateChange }[],
): Promise<void> {
  const rows = batch.map(({ id, change: { values: v } }) => ({
    id,
    name: v.name ?? null,
    lang: v.lang ?? 'zh',
    email: v.email ?? null,
    webhook_url: v.webhookUrl ?? null,
    webhook_secret: v.webhookSecret ?? null,
    robot_kind: v.robotKind ?? null,
    robot_url: v.robotUrl ?? null,
    robot_secret: v.robotSecret ?? null,
    group_mode: v.groupMode ?? null,
    group_window_seconds: v.groupWindowSeconds ?? null,
    timezone: v.timezone ?? null,
    quiet_from: v.quietFrom ?? null,
    quiet_to: v.quietTo ?? null,
    quiet_bypass_level: v.quietBypassLevel ?? null,
    max_per_hour: v.maxPerHour ?? null,
  }));
  await db.execute(sql`
    INSERT INTO subscribers (id, name, lang, email, webhook_url, webhook_secret, robot_kind,
      robot_url, robot_secret, group_mode, group_window_seconds, timezone, quiet_from, quiet_to,
      quiet_bypass_level, max_per_hour)
    SELECT r.* FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id uuid, name text,
      lang text, email text, webhook_url text, webhook_secret text, robot_kind text,
      robot_url text, robot_secret text, group_mode text, group_window_seconds integer,
      timezone text, quiet_from text, quiet_to text, quiet_bypass_level text,
      max_per_hour integer)`);
}

async function insertSubscriptions(
  db: Db,
  rows: readonly (SubscriptionValues & { subscriberId: string })[],
): Promise<void> {
  const json = rows.map((r) => ({
    subscriber_id: r.subscriberId,
    place_id: r.placeId,
    min_level: r.minLevel,
    types: r.types,
    events: r.events,
    points: r.points,
  }));
  await db.execute(sql`
    INSERT INTO subscriptions (subscriber_id, place_id, min_level, types, events, points)
    SELECT r.* FROM jsonb_to_recordset(${JSON.stringify(json)}::jsonb) AS r(subscriber_id uuid,
      place_id text, min_level text, types text[], events text[], points text[])`);
}

async function writePlan(db: Db, plan: Plan): Promise<void> {
  if (plan.resubscribeIds.length > 0) {
    await db
      .update(subscribers)
      .set({ unsubscribedAt: null, updatedAt: sql`now()` })
      .where(sql`${subscribers.id} = ANY(${sql.param(plan.resubscribeIds)}::uuid[])`);
    // Back: told what is in force at the next cycle, as a new subscriber is.
    await db
      .update(subscriptions)
      .set({ catchUp: true })
      .where(sql`${subscriptions.subscriberId} = ANY(${sql.param(plan.resubscribeIds)}::uuid[])`);
  }
  // New subscribers go in batches, their ids made here: two statements per SEED_BATCH of them,
  // each batch one JSON parameter (drizzle's builder spent half of a 100,000-subscriber seed
  // building statements of 15,000 parameters).
  const creates = plan.changes.flatMap((c) => (c.kind === 'create' ? [c] : []));
  for (let i = 0; i < creates.length; i += SEED_BATCH) {
    const batch = creates.slice(i, i + SEED_BATCH).map((c) => ({ id: randomUUID(), change: c }));
    await insertSubscribers(db, batch);
    const rows = batch.flatMap(({ id, change }) =>
      change.subscriptions.map((s) => ({ ...s, subscriberId: id })),
    );
    for (let j = 0; j < rows.length; j += SEED_BATCH) {
      await insertSubscriptions(db, rows.slice(j, j + SEED_BATCH));
    }
  }
  for (const change of plan.changes) {
    if (change.kind === 'create' || change.kind === 'unchanged') continue;
    await db
      .update(subscribers)
      .set({ ...(change.fields ?? {}), updatedAt: sql`now()` })
      .where(eq(subscribers.id, change.id));
    if (change.remove.length > 0) {
      await db.delete(subscriptions).where(inArray(subscriptions.id, change.remove));
    }
    for (const { id, values } of change.update) {
      await db
        .update(subscriptions)
        .set({
          minLevel: values.minLevel,
          types: values.types,
          events: values.events,
          points: values.points,
          // A widened filter or a new point may reveal warnings already in force.
          catchUp: true,
        })
        .where(eq(subscriptions.id, id));
    }
    if (change.insert.length > 0) {
      await db
        .insert(subscriptions)
        .values(change.insert.map((s) => ({ ...s, subscriberId: change.id })));
    }
  }
}
