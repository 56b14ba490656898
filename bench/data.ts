import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../src/db/client.js';
import type { EventType } from '../src/domain/detect.js';
import type { SubscriptionFilter } from '../src/domain/filters.js';
import type { KnownLevel } from '../src/domain/warning.js';
import { subscriptionPointKeys } from '../src/domain/points.js';
import type { PlaceRow } from '../src/simulator/index.js';
import { v7Warning, type V7WarningRecord } from '../src/simulator/index.js';

/**
 * Generated but realistic bench data: the mainland places of QWeather's list, subscribers of
 * three kinds (national desks watching many places, regional desks watching one province, and
 * a long tail of people watching one place), and the warnings of each scenario. Everything
 * comes from one seeded generator, so two runs of one size hold the same data.
 */

export interface BenchSize {
  readonly places: number;
  readonly subscriptions: number;
  /** National desks: subscribers that watch `placesEach` places spread over the country. */
  readonly desks: { readonly count: number; readonly placesEach: number };
  /** Regional desks: subscribers that watch `placesEach` places of one province. */
  readonly regional: { readonly count: number; readonly placesEach: number };
}

export const FULL_SIZE: BenchSize = {
  places: 3184,
  subscriptions: 100_000,
  desks: { count: 12, placesEach: 1000 },
  regional: { count: 60, placesEach: 100 },
};

export const QUICK_SIZE: BenchSize = {
  places: 160,
  subscriptions: 2500,
  desks: { count: 2, placesEach: 60 },
  regional: { count: 4, placesEach: 15 },
};

/** Share of subscriptions delivered by webhook; the rest by email (issue 6). */
export const WEBHOOK_SHARE = 0.8;

/** mulberry32: small, fast and good enough to shuffle bench data reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export interface BenchSubscriber {
  readonly index: number;
  readonly channel: 'email' | 'webhook';
  readonly lang: 'zh' | 'en';
  readonly places: readonly string[];
  readonly filter: SubscriptionFilter;
}

export interface BenchData {
  readonly places: readonly PlaceRow[];
  readonly subscribers: readonly BenchSubscriber[];
  /** place id → indexes of the subscribers watching it. */
  readonly watchers: ReadonlyMap<string, readonly number[]>;
  readonly subscriptionCount: number;
  readonly subscriptionsByChannel: { email: number; webhook: number };
}

/**
 * The source of warnings a bench pipeline polls: v7's list and one call per listed place, or
 * v1's alerts at every watched point (QWEATHER_ALERT_SOURCE=v1).
 */
export type BenchSource = 'v7' | 'v1';

/**
 * Who is owed a warning checked at each key: by place for v7; by point for v1, where a
 * subscriber watching several places at one point is told once (src/detection/apply-check.ts).
 * The points are the poll's own (`subscriptionPointKeys`: the bench's subscriptions store
 * none, so each watches its place's coordinates).
 */
export function watchersByCheck(
  data: BenchData,
  source: BenchSource,
): ReadonlyMap<string, readonly number[]> {
  if (source === 'v7') return data.watchers;
  const byPoint = new Map<string, Set<number>>();
  for (const place of data.places) {
    const watching = data.watchers.get(place.id) ?? [];
    if (watching.length === 0) continue;
    for (const key of subscriptionPointKeys(place, null)) {
      const set = byPoint.get(key) ?? new Set<number>();
      for (const s of watching) set.add(s);
      byPoint.set(key, set);
    }
  }
  return new Map([...byPoint].map(([key, set]) => [key, [...set]]));
}

/** Most people take every warning; some only the serious ones or only some event kinds. */
function filterFor(random: () => number): SubscriptionFilter {
  const roll = random();
  if (roll < 0.1) return { minLevel: '黄色', types: null, events: null };
  if (roll < 0.14) return { minLevel: null, types: null, events: ['new', 'update'] };
  if (roll < 0.16) return { minLevel: null, types: ['暴雨', '台风', '1006'], events: null };
  return { minLevel: null, types: null, events: null };
}

/**
 * The subscribers: every place watched at least once, the long tail weighted towards the
 * prominent places (more people live there), 80 % of the subscriptions by webhook.
 */
/** The share of subscribers who read English: their places are also asked with `lang=en`. */
export const ENGLISH_SHARE = 0.1;

export function generateData(
  allPlaces: readonly PlaceRow[],
  size: BenchSize,
  englishShare: number = ENGLISH_SHARE,
): BenchData {
  const random = seededRandom(0x5eed);
  const mainland = allPlaces.filter((p) => p.iso === 'CN');
  // A quick run takes places spread over the whole list rather than its first province.
  const step = mainland.length / size.places;
  const places = Array.from({ length: size.places }, (_, i) => mainland[Math.floor(i * step)]!);
  const ids = places.map((p) => p.id);

  const subscribers: BenchSubscriber[] = [];
  const webhookTarget = Math.round(size.subscriptions * WEBHOOK_SHARE);
  let webhookCount = 0;
  const add = (placeIds: string[], channel: 'email' | 'webhook') => {
    subscribers.push({
      index: subscribers.length,
      channel,
      lang: random() < englishShare ? 'en' : 'zh',
      places: placeIds,
      filter: filterFor(random),
    });
    if (channel === 'webhook') webhookCount += placeIds.length;
  };

  for (let i = 0; i < size.desks.count; i += 1) {
    const channel = i % 5 === 4 ? 'email' : 'webhook';
    add(shuffled(ids, random).slice(0, size.desks.placesEach), channel);
  }
  const byProvince = new Map<string, string[]>();
  for (const p of places) byProvince.set(p.adm1, [...(byProvince.get(p.adm1) ?? []), p.id]);
  const provinces = [...byProvince.values()].sort((a, b) => b.length - a.length);
  for (let i = 0; i < size.regional.count; i += 1) {
    const province = provinces[i % provinces.length]!;
    const channel = i % 5 === 4 ? 'email' : 'webhook';
    add(shuffled(province, random).slice(0, size.regional.placesEach), channel);
  }

  const used = subscribers.reduce((n, s) => n + s.places.length, 0);
  const singles = size.subscriptions - used;
  // Weighted by rank: prominent places have more watchers, as real populations do.
  const weights = places.map((p) => Math.max(1, p.rank));
  const cumulative: number[] = [];
  let total = 0;
  for (const w of weights) cumulative.push((total += w));
  const pick = () => {
    const target = random() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return ids[lo]!;
  };
  const singlesWebhook = Math.min(singles, Math.max(0, webhookTarget - webhookCount));
  const webhookSingles = new Set(
    shuffled([...Array(singles).keys()], random).slice(0, singlesWebhook),
  );
  for (let i = 0; i < singles; i += 1) {
    // The first pass covers every place, so all of them are watched.
    const place = i < ids.length ? ids[i]! : pick();
    add([place], webhookSingles.has(i) ? 'webhook' : 'email');
  }

  const watchers = new Map<string, number[]>();
  for (const s of subscribers) {
    for (const p of s.places) watchers.set(p, [...(watchers.get(p) ?? []), s.index]);
  }
  const byChannel = { email: 0, webhook: 0 };
  for (const s of subscribers) byChannel[s.channel] += s.places.length;
  return {
    places,
    subscribers,
    watchers,
    subscriptionCount: byChannel.email + byChannel.webhook,
    subscriptionsByChannel: byChannel,
  };
}

/**
 * The same data with the email subscribers' subscriptions left out: for measuring qwn's CPU per
 * webhook notification beside the peer's (issue 21). Every subscriber keeps its index, so the
 * webhook subscribers, their places and filters, and the storm's warnings are the same as in
 * the full data; an email subscriber is still inserted, watching nothing.
 */
export function webhookSubscribersOnly(data: BenchData): BenchData {
  const subscribers = data.subscribers.map((s) =>
    s.channel === 'webhook' ? s : { ...s, places: [] },
  );
  const watchers = new Map<string, number[]>();
  for (const [place, indexes] of data.watchers) {
    const kept = indexes.filter((i) => data.subscribers[i]!.channel === 'webhook');
    if (kept.length > 0) watchers.set(place, kept);
  }
  const webhook = data.subscriptionsByChannel.webhook;
  return {
    ...data,
    subscribers,
    watchers,
    subscriptionCount: webhook,
    subscriptionsByChannel: { email: 0, webhook },
  };
}

/** Each webhook subscriber has its own secret, derived from its index so the receiver needs no table. */
export function webhookSecretFor(index: number): string {
  const key = createHash('sha256').update(`qwn-bench-${index}`).digest('base64');
  return `whsec_${key}`;
}

export const webhookPath = (index: number) => `/hooks/${index}`;
export const emailFor = (index: number) => `subscriber-${index}@bench.qwn.test`;

const INSERT_BATCH = 5000;

/**
 * Inserts the places, subscribers and subscriptions with batched `unnest` statements. The seed
 * command resolves every place name upstream, which for 100,000 subscriptions would be 100,000
 * lookups: not what a bench should measure, so it is bypassed here. Returns the subscribers'
 * ids by index.
 */
export async function insertData(
  db: Db,
  data: BenchData,
  webhookOrigin: string,
): Promise<string[]> {
  for (let i = 0; i < data.places.length; i += INSERT_BATCH) {
    const batch = data.places.slice(i, i + INSERT_BATCH);
    await db.execute(sql`
      INSERT INTO places (id, name, lat, lon, tz, adm1, adm2, country)
      SELECT * FROM unnest(
        ${sql.param(batch.map((p) => p.id))}::text[],
        ${sql.param(batch.map((p) => p.name))}::text[],
        ${sql.param(batch.map((p) => p.lat))}::float8[],
        ${sql.param(batch.map((p) => p.lon))}::float8[],
        ${sql.param(batch.map((p) => p.tz))}::text[],
        ${sql.param(batch.map((p) => p.adm1))}::text[],
        ${sql.param(batch.map((p) => p.adm2))}::text[],
        ${sql.param(batch.map((p) => p.country))}::text[])`);
  }

  const ids: string[] = new Array<string>(data.subscribers.length);
  for (let i = 0; i < data.subscribers.length; i += INSERT_BATCH) {
    const batch = data.subscribers.slice(i, i + INSERT_BATCH);
    const webhook = (s: BenchSubscriber) => s.channel === 'webhook';
    const result = await queryRows<{ id: string }>(
      db,
      sql`
      INSERT INTO subscribers (name, email, webhook_url, webhook_secret, lang)
      SELECT * FROM unnest(
        ${sql.param(batch.map((s) => `bench subscriber ${s.index}`))}::text[],
        ${sql.param(batch.map((s) => (webhook(s) ? null : emailFor(s.index))))}::text[],
        ${sql.param(batch.map((s) => (webhook(s) ? `${webhookOrigin}${webhookPath(s.index)}` : null)))}::text[],
        ${sql.param(batch.map((s) => (webhook(s) ? webhookSecretFor(s.index) : null)))}::text[],
        ${sql.param(batch.map((s) => s.lang))}::text[])
      RETURNING id`,
    );
    // INSERT … SELECT FROM unnest returns rows in input order (one scan, no sort).
    result.forEach((r, j) => (ids[i + j] = r.id));
  }

  const rows = data.subscribers.flatMap((s) => s.places.map((p) => ({ s, p })));
  for (let i = 0; i < rows.length; i += INSERT_BATCH) {
    const batch = rows.slice(i, i + INSERT_BATCH);
    // Arrays of arrays do not fit unnest; filters travel as text and are split back.
    await db.execute(sql`
      INSERT INTO subscriptions (subscriber_id, place_id, min_level, types, events, catch_up)
      SELECT sid, pid, lvl, string_to_array(typ, ','), string_to_array(evt, ','),
        -- Subscribers of long standing: nothing to catch up (src/pipeline/catch-up.ts), as a
        -- deployment's storm finds them, not its first cycle after a seed.
        false
      FROM unnest(
        ${sql.param(batch.map((r) => ids[r.s.index]!))}::uuid[],
        ${sql.param(batch.map((r) => r.p))}::text[],
        ${sql.param(batch.map((r) => r.s.filter.minLevel))}::text[],
        ${sql.param(batch.map((r) => r.s.filter.types?.join(',') ?? null))}::text[],
        ${sql.param(batch.map((r) => r.s.filter.events?.join(',') ?? null))}::text[])
        AS t(sid, pid, lvl, typ, evt)`);
  }
  await db.execute(sql`ANALYZE`);
  return ids;
}

// --- Scenario warnings ---------------------------------------------------------------------

const STORM_TYPES = ['1003', '1006', '1014', '1001', '1009', '1015', '1017'] as const;
const LEVEL_WEIGHTS: readonly [KnownLevel, number][] = [
  ['蓝色', 0.35],
  ['黄色', 0.35],
  ['橙色', 0.2],
  ['红色', 0.1],
];
const NEXT_LEVEL: Record<KnownLevel, KnownLevel> = {
  白色: '蓝色',
  蓝色: '黄色',
  黄色: '橙色',
  橙色: '红色',
  红色: '红色',
};

export interface ScenarioState {
  /** place id → the warnings the upstream answers with. */
  readonly warnings: ReadonlyMap<string, readonly V7WarningRecord[]>;
  /** The warning list; null = the places that have warnings. */
  readonly listed: readonly string[] | null;
  readonly expectedEvents: Record<EventType, number>;
}

const NO_EVENTS = (): Record<EventType, number> => ({
  new: 0,
  update: 0,
  cancel: 0,
  expired: 0,
  resumed: 0,
});

function pickLevel(random: () => number): KnownLevel {
  let roll = random();
  for (const [level, weight] of LEVEL_WEIGHTS) {
    if ((roll -= weight) < 0) return level;
  }
  return '蓝色';
}

/**
 * The three scenarios of issue 6: a storm over half the places (one to three new warnings
 * each), an escalation cycle (a third updated one level up, a tenth cancelled), and a quiet
 * cycle that lists every place and changes nothing.
 */
interface StormWarning {
  place: PlaceRow;
  record: V7WarningRecord;
  seq: number;
  level: KnownLevel;
  type: string;
}

/** One to three warnings of different types at a place, as a storm brings them. */
function stormWarnings(
  place: PlaceRow,
  pubTime: Date,
  now: Date,
  random: () => number,
): StormWarning[] {
  const roll = random();
  // Weighted towards more warnings: storms bring several hazards at once.
  const count = roll < 0.25 ? 1 : roll < 0.6 ? 2 : 3;
  const types = shuffled(STORM_TYPES, random).slice(0, count);
  return types.map((type, i) => {
    const level = pickLevel(random);
    const record = v7Warning({
      locationId: place.id,
      seq: i + 1,
      typeCode: type,
      level,
      pubTime,
      endTime: new Date(now.getTime() + 24 * 3_600_000),
      place,
    });
    return { place, record, seq: i + 1, level, type };
  });
}

export function scenarioStates(
  data: BenchData,
  now: Date,
): {
  storm: ScenarioState;
  escalation: ScenarioState;
  quiet: ScenarioState;
  /** Every warning in force after the storm cancelled at once. */
  allClearAfterStorm: ScenarioState;
  /** Every warning in force after the escalation (and the quiet cycle) cancelled at once. */
  allClearAfterEscalation: ScenarioState;
  /**
   * After an all clear: a storm over the other half of the places, nothing else in force, so
   * the same work as the storm's in workers that have run one already (warm against cold).
   */
  warmStorm: ScenarioState;
} {
  const random = seededRandom(0x570a);
  const order = shuffled(data.places, random);
  const hit = order.slice(0, Math.floor(data.places.length / 2));
  const stormPub = new Date(now.getTime() - 30 * 60_000);
  const escalationPub = new Date(now.getTime() - 5 * 60_000);
  const clearPub = new Date(now.getTime() - 3 * 60_000);
  const warmPub = new Date(now.getTime() - 60_000);

  const storm = new Map<string, V7WarningRecord[]>();
  const all: StormWarning[] = [];
  for (const place of hit) {
    const warnings = stormWarnings(place, stormPub, now, random);
    all.push(...warnings);
    storm.set(
      place.id,
      warnings.map((w) => w.record),
    );
  }

  const picked = shuffled(all, random);
  const updated = new Set(picked.slice(0, Math.floor(all.length / 3)).map((w) => w.record.id));
  const cancelled = new Set(
    picked
      .slice(Math.floor(all.length / 3), Math.floor(all.length / 3) + Math.floor(all.length / 10))
      .map((w) => w.record.id),
  );
  const escalation = new Map<string, V7WarningRecord[]>();
  const inForceAfterEscalation: StormWarning[] = [];
  for (const w of all) {
    let record = w.record;
    if (updated.has(record.id)) {
      record = v7Warning({
        locationId: w.place.id,
        seq: w.seq + 10,
        typeCode: w.type,
        level: NEXT_LEVEL[w.level],
        status: 'update',
        related: w.record.id,
        pubTime: escalationPub,
        endTime: new Date(now.getTime() + 36 * 3_600_000),
        place: w.place,
      });
      inForceAfterEscalation.push({ ...w, record, seq: w.seq + 10, level: NEXT_LEVEL[w.level] });
    } else if (cancelled.has(record.id)) {
      record = v7Warning({
        locationId: w.place.id,
        seq: w.seq + 20,
        typeCode: w.type,
        level: w.level,
        status: 'cancel',
        related: w.record.id,
        pubTime: escalationPub,
        place: w.place,
      });
    } else {
      inForceAfterEscalation.push(w);
    }
    escalation.set(w.place.id, [...(escalation.get(w.place.id) ?? []), record]);
  }

  // Drawn last, so the storm and escalation above stay the same draws as before it existed.
  const second = new Map<string, V7WarningRecord[]>();
  let secondCount = 0;
  for (const place of order.slice(hit.length)) {
    const records = stormWarnings(place, warmPub, now, random).map((w) => w.record);
    second.set(place.id, records);
    secondCount += records.length;
  }

  /** Each of `inForce` cancelled: the answers hold only the cancels. */
  const allClear = (inForce: readonly StormWarning[]): ScenarioState => {
    const warnings = new Map<string, V7WarningRecord[]>();
    for (const w of inForce) {
      const cancel = v7Warning({
        locationId: w.place.id,
        seq: w.seq + 30,
        typeCode: w.type,
        level: w.level,
        status: 'cancel',
        related: w.record.id,
        pubTime: clearPub,
        place: w.place,
      });
      warnings.set(w.place.id, [...(warnings.get(w.place.id) ?? []), cancel]);
    }
    return { warnings, listed: null, expectedEvents: { ...NO_EVENTS(), cancel: inForce.length } };
  };

  return {
    storm: { warnings: storm, listed: null, expectedEvents: { ...NO_EVENTS(), new: all.length } },
    escalation: {
      warnings: escalation,
      listed: null,
      expectedEvents: { ...NO_EVENTS(), update: updated.size, cancel: cancelled.size },
    },
    quiet: {
      warnings: escalation,
      listed: data.places.map((p) => p.id),
      expectedEvents: NO_EVENTS(),
    },
    allClearAfterStorm: allClear(all),
    allClearAfterEscalation: allClear(inForceAfterEscalation),
    warmStorm: {
      warnings: second,
      listed: null,
      expectedEvents: { ...NO_EVENTS(), new: secondCount },
    },
  };
}
