/**
 * Turns a seed file's location entries into places through the city lookup. A place is stored
 * with only what a subscription needs (id, names, coordinates, time zone): QWeather's licence
 * does not allow keeping copies of its location lists.
 */
import { QWeatherError } from '../qweather/errors.js';
import type { Place } from '../qweather/normalize.js';
import type { LocationEntry } from './seed-validate.js';

export interface CityLookupParams {
  location: string;
  adm?: string;
  range?: string;
  number?: number;
  lang?: string;
}

/** The one client operation seeding needs (structurally `Pick<QWeatherClient, 'lookupCity'>`). */
export interface CityLookup {
  lookupCity(params: CityLookupParams): Promise<Place[]>;
}

export interface ResolvedPlace {
  id: string;
  name: string;
  lat: number | null;
  lon: number | null;
  tz: string;
  adm1: string | null;
  adm2: string | null;
  country: string | null;
}

export type Resolution = { ok: true; place: ResolvedPlace } | { ok: false; message: string };

// The store's own rule for place ids (src/db/schema.ts places_id_format).
const STORABLE_ID = /^[A-Za-z0-9]{1,32}$/;
/** Warnings cover Chinese counties; a place the upstream sent without a zone is one of them. */
const DEFAULT_TZ = 'Asia/Shanghai';
/** Enough candidates to find an exact-name match ranked below fuzzy ones. */
const CANDIDATES = 20;
const SHOWN_CANDIDATES = 5;
/** Lookups in flight at once: quick for a long file, gentle on the QPM budget. */
const CONCURRENCY = 4;

export function entryKey(entry: LocationEntry): string {
  switch (entry.kind) {
    case 'id':
      return `id:${entry.id}`;
    case 'coordinates':
      return `coordinates:${entry.coordinates.lon},${entry.coordinates.lat}`;
    case 'name':
      return `name:${JSON.stringify([entry.query, entry.adm, entry.range])}`;
  }
}

export function describeEntry(entry: LocationEntry): string {
  switch (entry.kind) {
    case 'id':
      return entry.id;
    case 'coordinates':
      return entry.text;
    case 'name': {
      const qualifiers = [
        entry.adm === null ? null : `adm ${entry.adm}`,
        entry.range === null ? null : `range ${entry.range}`,
      ].filter((q) => q !== null);
      return qualifiers.length > 0 ? `${entry.query} (${qualifiers.join(', ')})` : entry.query;
    }
  }
}

/**
 * Resolves every distinct entry once (a file often lists a city for several subscribers).
 * Upstream failures become failed resolutions, never exceptions: the caller reports them with
 * the entry that caused them and writes nothing.
 */
export async function resolveEntries(
  lookup: CityLookup,
  entries: readonly LocationEntry[],
): Promise<Map<string, Resolution>> {
  const distinct = new Map<string, LocationEntry>();
  for (const entry of entries) distinct.set(entryKey(entry), entry);
  const queue = [...distinct.entries()];
  const results = new Map<string, Resolution>();
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const [key, entry] = next;
      results.set(key, await resolveEntry(lookup, entry));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
  return results;
}

export async function resolveEntry(lookup: CityLookup, entry: LocationEntry): Promise<Resolution> {
  let candidates: Place[];
  try {
    candidates = await lookup.lookupCity(lookupParams(entry));
  } catch (err) {
    if (err instanceof QWeatherError) {
      return { ok: false, message: `${describeEntry(entry)}: city lookup failed: ${err.message}` };
    }
    throw err;
  }
  const chosen = choose(entry, candidates);
  if (!chosen.ok) return chosen;
  return toResolvedPlace(chosen.place);
}

function lookupParams(entry: LocationEntry): CityLookupParams {
  switch (entry.kind) {
    case 'id':
      return { location: entry.id };
    case 'coordinates':
      return { location: `${entry.coordinates.lon},${entry.coordinates.lat}` };
    case 'name':
      return {
        location: entry.query,
        number: CANDIDATES,
        ...(entry.adm === null ? {} : { adm: entry.adm }),
        ...(entry.range === null ? {} : { range: entry.range }),
      };
  }
}

function choose(
  entry: LocationEntry,
  candidates: Place[],
): { ok: true; place: Place } | { ok: false; message: string } {
  const described = describeEntry(entry);
  switch (entry.kind) {
    case 'id': {
      const exact = candidates.find((c) => c.id === entry.id);
      // A lone answer to an id-shaped query is an ADCode lookup: accept it as the place.
      const place = exact ?? (candidates.length === 1 ? candidates[0] : undefined);
      if (!place) return { ok: false, message: `no place has the Location ID ${entry.id}` };
      return { ok: true, place };
    }
    case 'coordinates': {
      const nearest = nearestTo(entry.coordinates, candidates);
      if (!nearest) return { ok: false, message: `no place found near ${described}` };
      return { ok: true, place: nearest };
    }
    case 'name': {
      if (candidates.length === 0) return { ok: false, message: `${described} matches no place` };
      const first = candidates[0];
      if (candidates.length === 1 && first) return { ok: true, place: first };
      // An exact name beats partial matches: "西湖" is the district even when "西湖区…" also match.
      const exact = candidates.filter((c) => sameName(c.name, entry.query));
      const onlyExact = exact[0];
      if (exact.length === 1 && onlyExact) return { ok: true, place: onlyExact };
      const ambiguous = exact.length > 1 ? exact : candidates;
      const hint = entry.adm === null ? 'add adm' : 'use a Location ID or a narrower adm';
      return {
        ok: false,
        message: `${described} matches ${ambiguous.length} places (${candidateList(ambiguous)}): ${hint}`,
      };
    }
  }
}

function sameName(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** "朝阳, 北京 / 朝阳, 辽宁": the region is what tells same-named places apart. */
function candidateList(candidates: readonly Place[]): string {
  const labels = candidates.map((c) => {
    const region = shortRegion(c.adm1) || c.country;
    return region ? `${c.name}, ${region}` : c.name;
  });
  const clash = new Set(labels).size < labels.length;
  const shown = candidates.slice(0, SHOWN_CANDIDATES).map((c, i) => {
    const label = labels[i] ?? c.name;
    if (!clash) return label;
    const adm2 = shortRegion(c.adm2);
    return adm2 && adm2 !== shortRegion(c.adm1)
      ? `${c.name}, ${adm2}, ${shortRegion(c.adm1)}`
      : `${label} [${c.id}]`;
  });
  const more = candidates.length - shown.length;
  return more > 0 ? `${shown.join(' / ')} / … ${more} more` : shown.join(' / ');
}

/** "辽宁省" → "辽宁", "北京市" → "北京": how people name a region in conversation. */
function shortRegion(name: string): string {
  const trimmed = name.trim();
  return trimmed.length > 2 ? trimmed.replace(/[省市]$/u, '') : trimmed;
}

function nearestTo(
  point: { lon: number; lat: number },
  candidates: readonly Place[],
): Place | undefined {
  let best: Place | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = haversineKm(point, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function haversineKm(a: { lon: number; lat: number }, b: { lon: number; lat: number }): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h =
    Math.sin(dLat / 2) ** 2 +
    Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}

function toResolvedPlace(place: Place): Resolution {
  if (!STORABLE_ID.test(place.id)) {
    return { ok: false, message: `the lookup answered an unusable Location ID "${place.id}"` };
  }
  if (place.name.trim() === '') {
    return { ok: false, message: `the lookup answered a place without a name (${place.id})` };
  }
  const coordinate = (value: number, limit: number) =>
    Number.isFinite(value) && Math.abs(value) <= limit ? value : null;
  return {
    ok: true,
    place: {
      id: place.id,
      name: place.name.trim(),
      lat: coordinate(place.lat, 90),
      lon: coordinate(place.lon, 180),
      tz: place.tz.trim() || DEFAULT_TZ,
      adm1: place.adm1.trim() || null,
      adm2: place.adm2.trim() || null,
      country: place.country.trim() || null,
    },
  };
}
