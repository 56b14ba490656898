import { BUILTIN_PLACE_ROWS } from '../../../src/simulator/places.js';
import {
  v1Alert,
  v7Warning,
  type V1AreaAlert,
  type V7WarningRecord,
} from '../../../src/simulator/index.js';

/**
 * A storm: many places, a few warnings each, many subscribers with filters, and the set of
 * notifications that must come out of it — computed here from the scenario and the filters,
 * independently of the pipeline's own filter code, so a bug there cannot hide itself.
 */

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
    sample: (items, count) => {
      const pool = [...items];
      for (let i = pool.length - 1; i > 0; i -= 1) {
        const j = Math.floor(next() * (i + 1));
        [pool[i], pool[j]] = [pool[j]!, pool[i]!];
      }
      return pool.slice(0, count);
    },
  };
}

export interface Rng {
  next(): number;
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  sample<T>(items: readonly T[], count: number): T[];
}

const LEVEL_ORDER = ['白色', '蓝色', '黄色', '橙色', '红色'] as const;
type Level = (typeof LEVEL_ORDER)[number];
const TYPE_CODES = ['1001', '1003', '1004', '1006', '1009', '1014', '1017'] as const;
type EventKind = 'new' | 'update' | 'cancel' | 'expired';

export interface StormWarning {
  /** Where it is in force: one place for a v7 warning, one or more for a v1 area alert. */
  placeIds: readonly string[];
  id: string;
  typeCode: string;
  level: Level;
  /** 'new' for a first issue, 'update' for a record that replaces `replaces`. */
  event: 'new' | 'update';
  replaces: string | null;
}

export interface StormFilter {
  minLevel: Level | null;
  types: string[] | null;
  events: EventKind[] | null;
}

export interface StormSubscriber {
  /** The email address, or the webhook path on the test receiver. */
  address: string;
  channel: 'email' | 'webhook';
  places: string[];
  filter: StormFilter;
}

export interface StormPlan {
  seed: number;
  /** With their coordinates: a v1 run watches each place at its point. */
  places: { id: string; name: string; lat: number; lon: number }[];
  subscribers: StormSubscriber[];
  /** The warnings each place shows, phase by phase (full states: the simulator's view). */
  phases: Map<string, V7WarningRecord[]>[];
  /** The v1 area alerts in force, phase by phase (full states; none in a storm of places). */
  areaPhases: V1AreaAlert[][];
  /** Every warning any phase introduces. */
  warnings: StormWarning[];
}

export interface StormOptions {
  places?: number;
  emailSubscribers?: number;
  webhookSubscribers?: number;
  /** Places per subscriber (min, max). */
  placesPerSubscriber?: [number, number];
  /** Phases after the first; each updates or adds warnings at some places. */
  extraPhases?: number;
  /**
   * Weather Alert v1 area alerts instead of v7 warnings of one place each: every alert covers
   * one to four places, and one alert id is seen at every point of its area.
   */
  areaAlerts?: boolean;
}

function randomFilter(rng: Rng): StormFilter {
  return {
    minLevel: rng.chance(0.5) ? rng.pick(['蓝色', '黄色', '橙色'] as const) : null,
    types: rng.chance(0.3) ? rng.sample(TYPE_CODES, rng.int(2, 4)) : null,
    events: rng.chance(0.2) ? ['new', 'cancel', 'expired'] : null,
  };
}

/** Builds the scenario for a seed; the same seed gives the same storm. */
export function planStorm(seed: number, options: StormOptions = {}): StormPlan {
  const rng = createRng(seed);
  const placeCount = options.places ?? 36;
  // Mainland places only: Hong Kong and Macau are not on the `range=cn` warning list.
  const places = BUILTIN_PLACE_ROWS.filter(
    (p, i, all) => p.iso === 'CN' && all.findIndex((q) => q.id === p.id) === i,
  )
    .slice(0, placeCount)
    .map((p) => ({ id: p.id, name: p.name, lat: p.lat, lon: p.lon }));
  if (places.length < placeCount) throw new Error(`only ${places.length} built-in places`);
  // Whole minutes: the id carries the minute, so the same plan gives the same ids.
  const pubTime = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);

  if (options.areaAlerts) return planAreaStorm(seed, rng, places, pubTime, options);
  const warnings: StormWarning[] = [];
  const records = new Map<string, V7WarningRecord>();
  const current = new Map<string, StormWarning[]>();
  const make = (
    placeId: string,
    seq: number,
    event: 'new' | 'update',
    replaces: StormWarning | null,
  ): StormWarning => {
    const typeCode = replaces?.typeCode ?? rng.pick(TYPE_CODES);
    const level = rng.pick(LEVEL_ORDER.slice(1));
    const record = v7Warning({
      locationId: placeId,
      seq,
      typeCode,
      level,
      pubTime,
      status: event === 'update' ? 'update' : 'active',
      ...(replaces ? { related: replaces.id } : {}),
    });
    const w = {
      placeIds: [placeId],
      id: record.id,
      typeCode,
      level,
      event,
      replaces: replaces?.id ?? null,
    };
    warnings.push(w);
    records.set(w.id, record);
    return w;
  };
  const snapshot = () =>
    new Map([...current].map(([place, list]) => [place, list.map((w) => records.get(w.id)!)]));

  const phases: Map<string, V7WarningRecord[]>[] = [];
  for (const place of places) {
    const count = rng.int(1, 3);
    current.set(
      place.id,
      Array.from({ length: count }, (_, k) => make(place.id, k + 1, 'new', null)),
    );
  }
  phases.push(snapshot());
  for (let phase = 1; phase <= (options.extraPhases ?? 0); phase += 1) {
    for (const place of rng.sample(places, Math.ceil(places.length / 4))) {
      const list = current.get(place.id)!;
      const seq = phase * 10 + 1;
      if (rng.chance(0.6) && list.length > 0) {
        const index = rng.int(0, list.length - 1);
        list[index] = make(place.id, seq, 'update', list[index]!);
      } else {
        list.push(make(place.id, seq, 'new', null));
      }
    }
    phases.push(snapshot());
  }

  const subscribers = stormSubscribers(rng, places, options);
  return { seed, places, subscribers, phases, areaPhases: phases.map(() => []), warnings };
}

function stormSubscribers(
  rng: Rng,
  places: readonly { id: string }[],
  options: StormOptions,
): StormSubscriber[] {
  const subscribers: StormSubscriber[] = [];
  const [minPlaces, maxPlaces] = options.placesPerSubscriber ?? [8, 24];
  const addSubscribers = (count: number, channel: 'email' | 'webhook') => {
    for (let i = 0; i < count; i += 1) {
      subscribers.push({
        address: channel === 'email' ? `sub${i}@storm.test` : `/hook/${i}`,
        channel,
        places: rng
          .sample(places, rng.int(minPlaces, Math.min(maxPlaces, places.length)))
          .map((p) => p.id),
        filter: randomFilter(rng),
      });
    }
  };
  addSubscribers(options.emailSubscribers ?? 50, 'email');
  addSubscribers(options.webhookSubscribers ?? 20, 'webhook');
  return subscribers;
}

/**
 * The v1 flavour of `planStorm`: area alerts of one to four places each (ids as v1 gives them,
 * sender and type fixed per alert), later phases updating some (the update covers the area of
 * the alert it replaces and perhaps one place more; v1 stops returning the replaced alert) and
 * adding others. Areas never shrink, so nothing is owed an end.
 */
function planAreaStorm(
  seed: number,
  rng: Rng,
  places: StormPlan['places'],
  pubTime: Date,
  options: StormOptions,
): StormPlan {
  const warnings: StormWarning[] = [];
  const current: { warning: StormWarning; alert: V1AreaAlert }[] = [];
  const make = (
    placeIds: string[],
    seq: number,
    event: 'new' | 'update',
    replaces: StormWarning | null,
  ) => {
    const typeCode = replaces?.typeCode ?? rng.pick(TYPE_CODES);
    const level = rng.pick(LEVEL_ORDER.slice(1));
    const alert = v1Alert({
      area: { locationIds: placeIds },
      // Shaped as the simulator's v1 ids are (V1 and 18 hex digits), as the emails show them.
      id: `V1${String(seed * 10_000 + seq).padStart(18, '0')}`,
      typeCode,
      level,
      issuedTime: pubTime,
      messageType: event === 'update' ? 'update' : 'alert',
      supersedes: replaces ? [replaces.id] : [],
      senderName: '中央气象台',
    });
    const warning = {
      placeIds,
      id: alert.alert.id,
      typeCode,
      level,
      event,
      replaces: replaces?.id ?? null,
    };
    warnings.push(warning);
    return { warning, alert };
  };
  const area = () => rng.sample(places, rng.int(1, 4)).map((p) => p.id);
  let seq = 0;
  const alertCount = Math.ceil(places.length / 2);
  for (let i = 0; i < alertCount; i += 1) current.push(make(area(), (seq += 1), 'new', null));
  const areaPhases = [current.map((c) => c.alert)];
  for (let phase = 1; phase <= (options.extraPhases ?? 0); phase += 1) {
    // Each alert is made or changed at most once a phase, so that each is served for a while.
    const changed = new Set<number>();
    for (let i = 0; i < Math.ceil(alertCount / 4); i += 1) {
      const index = rng.int(0, current.length - 1);
      if (rng.chance(0.6) && !changed.has(index)) {
        changed.add(index);
        const old = current[index]!.warning;
        const grown = [
          ...new Set([...old.placeIds, ...(rng.chance(0.5) ? area().slice(0, 1) : [])]),
        ];
        current[index] = make(grown, (seq += 1), 'update', old);
      } else {
        changed.add(current.push(make(area(), (seq += 1), 'new', null)) - 1);
      }
    }
    areaPhases.push(current.map((c) => c.alert));
  }
  const subscribers = stormSubscribers(rng, places, options);
  return {
    seed,
    places,
    subscribers,
    phases: areaPhases.map(() => new Map<string, V7WarningRecord[]>()),
    areaPhases,
    warnings,
  };
}

export interface Owed {
  subscriber: string;
  channel: 'email' | 'webhook';
  warningId: string;
  eventType: 'new' | 'update';
}

export const owedKey = (subscriber: string, warningId: string, eventType: string) =>
  `${subscriber} ${warningId} ${eventType}`;

/** Our own reading of the filter rules of docs/subscribers.md: level at least, type code, event kind. */
function wants(filter: StormFilter, w: StormWarning): boolean {
  if (filter.events && !filter.events.includes(w.event)) return false;
  if (filter.minLevel && LEVEL_ORDER.indexOf(w.level) < LEVEL_ORDER.indexOf(filter.minLevel)) {
    return false;
  }
  if (filter.types && !filter.types.includes(w.typeCode)) return false;
  return true;
}

/** What the storm owes: one notification per (subscriber, warning id, event type) let through. */
export function owedBy(plan: StormPlan): Map<string, Owed> {
  const owed = new Map<string, Owed>();
  const byId = new Map(plan.warnings.map((w) => [w.id, w]));
  /** The warnings an update replaces, however many steps back. */
  const earlier = (w: StormWarning): string[] => {
    const ids: string[] = [];
    for (let id = w.replaces; id !== null; id = byId.get(id)?.replaces ?? null) ids.push(id);
    return ids;
  };
  for (const s of plan.subscribers) {
    const watched = new Set(s.places);
    const told = new Set<string>();
    // In the order the phases issue them: an update is told as such only to who was told a
    // warning it replaces; to anyone else it is their first news of it, a new (README, promises).
    for (const w of plan.warnings) {
      if (!w.placeIds.some((p) => watched.has(p)) || !wants(s.filter, w)) continue;
      const eventType =
        w.event === 'update' && !earlier(w).some((id) => told.has(id)) ? 'new' : w.event;
      told.add(w.id);
      owed.set(owedKey(s.address, w.id, eventType), {
        subscriber: s.address,
        channel: s.channel,
        warningId: w.id,
        eventType,
      });
    }
  }
  return owed;
}
