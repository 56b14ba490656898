import type { PlaceData, PlaceRow, PoiRow } from './places.js';

/** Names are served in Chinese by default; any other language falls back to English (spec 4.1). */
export type NameLang = 'zh' | 'en';

export function nameLang(lang: string | null | undefined): NameLang {
  return !lang || lang.toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

const EARTH_RADIUS_KM = 6371.0088;

export function haversineKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180;
  const dLat = (lat2 - lat1) * rad;
  const dLon = (lon2 - lon1) * rad;
  const a =
    Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

const CJK = /[\u3400-\u9fff\uf900-\ufaff]/;

/** The spec's minimum text: one Chinese character, or two other characters. */
export function meetsMinimumText(text: string): boolean {
  return CJK.test(text) ? text.length >= 1 : [...text].length >= 2;
}

/**
 * Administrative names are matched with or without their suffix, so `adm=杭州`, `杭州市` and
 * `Hangzhou` all select 杭州市, and `广东` selects 广东省.
 */
export function normalizeAdm(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/(维吾尔自治区|壮族自治区|回族自治区|自治区|特别行政区|省|市)$/u, '')
    .replace(/\s+(province|city|sar|autonomous region)$/u, '');
}

/** A coordinate pair "lon,lat" as the v2/v7 operations take it; undefined when malformed. */
export function parseLonLat(text: string): { lat: number; lon: number } | undefined {
  const m = /^\s*(-?\d{1,3}(?:\.\d+)?)\s*,\s*(-?\d{1,2}(?:\.\d+)?)\s*$/.exec(text);
  if (!m) return undefined;
  const lon = Number(m[1]);
  const lat = Number(m[2]);
  if (Math.abs(lon) > 180 || Math.abs(lat) > 90) return undefined;
  return { lat, lon };
}

/** Buckets points into 1° cells so nearest and radius queries touch a few cells, not the list. */
class Grid<T extends { readonly lat: number; readonly lon: number }> {
  private readonly cells = new Map<string, T[]>();

  constructor(private readonly items: readonly T[]) {
    for (const item of items) {
      const key = Grid.key(Math.floor(item.lat), Math.floor(item.lon));
      const cell = this.cells.get(key);
      if (cell) cell.push(item);
      else this.cells.set(key, [item]);
    }
  }

  private static key(latCell: number, lonCell: number): string {
    return `${latCell}:${lonCell}`;
  }

  private ring(latCell: number, lonCell: number, r: number, visit: (item: T) => void): void {
    for (let dy = -r; dy <= r; dy++) {
      for (let dx = -r; dx <= r; dx++) {
        if (Math.max(Math.abs(dx), Math.abs(dy)) !== r) continue;
        let lon = lonCell + dx;
        if (lon < -180) lon += 360;
        if (lon >= 180) lon -= 360;
        const cell = this.cells.get(Grid.key(latCell + dy, lon));
        if (cell) for (const item of cell) visit(item);
      }
    }
  }

  nearest(lat: number, lon: number): T | undefined {
    if (this.items.length === 0) return undefined;
    const latCell = Math.floor(lat);
    const lonCell = Math.floor(lon);
    let best: T | undefined;
    let bestKm = Infinity;
    const visit = (item: T) => {
      const km = haversineKm(lat, lon, item.lat, item.lon);
      if (km < bestKm || (km === bestKm && best && item.lat + item.lon < best.lat + best.lon)) {
        best = item;
        bestKm = km;
      }
    };
    for (let r = 0; r <= 60; r++) {
      // A cell r rings away is at least (r - 1) cell widths away; a lon cell is narrowest
      // toward the pole, so that bound uses the width at the ring's far latitude.
      const farLat = Math.min(89.9, Math.abs(lat) + r);
      const minKm = (r - 1) * 111.2 * Math.cos((farLat * Math.PI) / 180);
      if (best && minKm > bestKm) return best;
      this.ring(latCell, lonCell, r, visit);
    }
    if (best) return best;
    for (const item of this.items) visit(item);
    return best;
  }

  within(lat: number, lon: number, km: number): Array<{ item: T; km: number }> {
    const latCells = Math.ceil(km / 111) + 1;
    const lonCells = Math.min(
      180,
      Math.ceil(
        km /
          (111.2 *
            Math.max(0.01, Math.cos((Math.min(89.9, Math.abs(lat) + latCells) * Math.PI) / 180))),
      ) + 1,
    );
    const out: Array<{ item: T; km: number }> = [];
    const latCell = Math.floor(lat);
    const lonCell = Math.floor(lon);
    for (let dy = -latCells; dy <= latCells; dy++) {
      for (let dx = -lonCells; dx <= lonCells; dx++) {
        let lonKey = lonCell + dx;
        if (lonKey < -180) lonKey += 360;
        if (lonKey >= 180) lonKey -= 360;
        const cell = this.cells.get(Grid.key(latCell + dy, lonKey));
        if (!cell) continue;
        for (const item of cell) {
          const d = haversineKm(lat, lon, item.lat, item.lon);
          if (d <= km) out.push({ item, km: d });
        }
      }
    }
    return out;
  }
}

interface Searchable {
  readonly zh: string;
  readonly en: string;
}

/** Relevance of a name to a query: exact 3, prefix 2, substring 1, else 0. */
function relevance(names: Searchable, query: string): number {
  let best = 0;
  for (const name of [names.zh, names.en]) {
    if (!name) continue;
    if (name === query) return 3;
    if (name.startsWith(query)) best = Math.max(best, 2);
    else if (name.includes(query)) best = Math.max(best, 1);
  }
  return best;
}

function byRelevanceThenRank<T extends { readonly rank: number; readonly id: string }>(
  a: { item: T; score: number },
  b: { item: T; score: number },
): number {
  return b.score - a.score || b.item.rank - a.item.rank || a.item.id.localeCompare(b.item.id);
}

function byRank<T extends { readonly rank: number; readonly id: string }>(a: T, b: T): number {
  return b.rank - a.rank || a.id.localeCompare(b.id);
}

/** In-memory search over the simulator's places and POIs; every query is a map hit or one scan. */
export class GeoIndex {
  readonly places: readonly PlaceRow[];
  readonly pois: readonly PoiRow[];
  private readonly byId = new Map<string, PlaceRow>();
  private readonly byAdcode = new Map<string, PlaceRow[]>();
  private readonly placeNames: Searchable[];
  private readonly poiNames: Searchable[];
  private readonly placeGrid: Grid<PlaceRow>;
  private readonly poiGrid: Grid<PoiRow>;
  private readonly ranked: readonly PlaceRow[];

  constructor(data: PlaceData) {
    this.places = data.places;
    this.pois = data.pois;
    for (const p of data.places) {
      if (!this.byId.has(p.id)) this.byId.set(p.id, p);
      if (p.adcode) {
        const list = this.byAdcode.get(p.adcode);
        if (list) list.push(p);
        else this.byAdcode.set(p.adcode, [p]);
      }
    }
    for (const list of this.byAdcode.values()) list.sort(byRank);
    this.placeNames = data.places.map((p) => ({
      zh: p.name.toLowerCase(),
      en: p.nameEn.toLowerCase(),
    }));
    this.poiNames = data.pois.map((p) => ({
      zh: p.name.toLowerCase(),
      en: p.nameEn.toLowerCase(),
    }));
    this.placeGrid = new Grid(data.places);
    this.poiGrid = new Grid(data.pois);
    this.ranked = [...data.places].sort(byRank);
  }

  place(id: string): PlaceRow | undefined {
    return this.byId.get(id);
  }

  placesByAdcode(adcode: string): readonly PlaceRow[] {
    return this.byAdcode.get(adcode) ?? [];
  }

  nearestPlace(lat: number, lon: number): PlaceRow | undefined {
    return this.placeGrid.nearest(lat, lon);
  }

  /** Fuzzy name search: relevance first, then rank; `adm` and `range` narrow the candidates. */
  searchPlaces(text: string, filter: { adm?: string; range?: string }): PlaceRow[] {
    const candidates = (query: string) => {
      const hits: Array<{ item: PlaceRow; score: number }> = [];
      this.places.forEach((place, i) => {
        const score = relevance(this.placeNames[i]!, query);
        if (score > 0 && this.passes(place, filter)) hits.push({ item: place, score });
      });
      return hits;
    };
    const query = text.trim().toLowerCase();
    let hits = candidates(query);
    // "杭州市" should find 杭州: the suffix is part of the administrative name, not the place's.
    const bare = normalizeAdm(query);
    if (hits.length === 0 && bare && bare !== query && meetsMinimumText(bare)) {
      hits = candidates(bare);
    }
    return hits.sort(byRelevanceThenRank).map((h) => h.item);
  }

  passes(place: PlaceRow, filter: { adm?: string; range?: string }): boolean {
    if (filter.range && filter.range !== 'world' && place.iso.toLowerCase() !== filter.range) {
      return false;
    }
    if (filter.adm) {
      const adm = normalizeAdm(filter.adm);
      const names = [place.adm1, place.adm2, place.adm1En, place.adm2En].map(normalizeAdm);
      if (!names.includes(adm)) return false;
    }
    return true;
  }

  topPlaces(range: string): PlaceRow[] {
    return this.ranked.filter((p) => this.passes(p, { range }));
  }

  /**
   * POIs by name. `city` is matched exactly, by Location ID or place name; a city that matches
   * nothing yields an empty list (spec 4.3). A POI belongs to a city when it lies in that place,
   * or, for a prefecture seat, anywhere in its prefecture.
   */
  searchPois(text: string, city: string | undefined): PoiRow[] | 'no-city' {
    let inCity: ((poi: PoiRow) => boolean) | undefined;
    if (city !== undefined) {
      const wanted = city.trim().toLowerCase();
      const byId = this.byId.get(city.trim());
      const cities = byId
        ? [byId]
        : this.places.filter(
            (p) => p.name.toLowerCase() === wanted || p.nameEn.toLowerCase() === wanted,
          );
      if (cities.length === 0) return 'no-city';
      const ids = new Set(cities.map((c) => c.id));
      const prefectures = new Set(
        cities
          .filter((c) => normalizeAdm(c.name) === normalizeAdm(c.adm2))
          .map((c) => `${normalizeAdm(c.adm1)}|${normalizeAdm(c.adm2)}`),
      );
      inCity = (poi) =>
        ids.has(poi.locationId) ||
        prefectures.has(`${normalizeAdm(poi.adm1)}|${normalizeAdm(poi.adm2)}`);
    }
    const query = text.trim().toLowerCase();
    const hits: Array<{ item: PoiRow; score: number }> = [];
    this.pois.forEach((poi, i) => {
      const score = relevance(this.poiNames[i]!, query);
      if (score > 0 && (!inCity || inCity(poi))) hits.push({ item: poi, score });
    });
    return hits.sort(byRelevanceThenRank).map((h) => h.item);
  }

  /** POIs within `radiusKm` of a point, nearest first. */
  poisNear(lat: number, lon: number, radiusKm: number): PoiRow[] {
    return this.poiGrid
      .within(lat, lon, radiusKm)
      .sort((a, b) => a.km - b.km || a.item.id.localeCompare(b.item.id))
      .map((h) => h.item);
  }

  /** The time zone of a POI: its place's, else China's for Chinese POIs. */
  poiTimeZone(poi: PoiRow): string {
    return this.byId.get(poi.locationId)?.tz ?? 'Asia/Shanghai';
  }
}

const offsetCache = new Map<string, { hour: number; utcOffset: string; isDst: boolean }>();

function offsetMinutes(tz: string, at: Date): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-])(\d{2}):?(\d{2})?/.exec(parts ?? '');
  if (!m) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? '0'));
}

/** `utcOffset` (±HH:MM) and `isDst` of a time zone now; cached per zone and hour. */
export function zoneInfo(tz: string, at: Date): { utcOffset: string; isDst: boolean } {
  const hour = Math.floor(at.getTime() / 3_600_000);
  const cached = offsetCache.get(tz);
  if (cached && cached.hour === hour) return cached;
  let minutes = 0;
  let isDst = false;
  try {
    minutes = offsetMinutes(tz, at);
    const year = at.getUTCFullYear();
    const jan = offsetMinutes(tz, new Date(Date.UTC(year, 0, 1)));
    const jul = offsetMinutes(tz, new Date(Date.UTC(year, 6, 1)));
    isDst = jan !== jul && minutes === Math.max(jan, jul);
  } catch {
    // An unknown zone name in a loaded list: serve +00:00 rather than fail the request.
  }
  const abs = Math.abs(minutes);
  const utcOffset = `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  const info = { hour, utcOffset, isDst };
  offsetCache.set(tz, info);
  return info;
}

export function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'place'
  );
}

export function placeRecord(place: PlaceRow, lang: NameLang, at: Date): Record<string, string> {
  const en = lang === 'en';
  const zone = zoneInfo(place.tz, at);
  return {
    name: en ? place.nameEn || place.name : place.name,
    id: place.id,
    lat: String(place.lat),
    lon: String(place.lon),
    adm2: en ? place.adm2En || place.adm2 : place.adm2,
    adm1: en ? place.adm1En || place.adm1 : place.adm1,
    country: en ? place.countryEn || place.country : place.country,
    tz: place.tz,
    utcOffset: zone.utcOffset,
    isDst: zone.isDst ? '1' : '0',
    type: 'city',
    rank: String(place.rank),
    fxLink: `https://www.qweather.com/weather/${slug(place.nameEn)}-${place.id}.html`,
  };
}

export function poiRecord(
  poi: PoiRow,
  tz: string,
  lang: NameLang,
  at: Date,
): Record<string, string> {
  const en = lang === 'en';
  const zone = zoneInfo(tz, at);
  return {
    name: en ? poi.nameEn || poi.name : poi.name,
    id: poi.id,
    lat: String(poi.lat),
    lon: String(poi.lon),
    adm2: en ? poi.adm2En || poi.adm2 : poi.adm2,
    adm1: en ? poi.adm1En || poi.adm1 : poi.adm1,
    country: en ? poi.countryEn || poi.country : poi.country,
    tz,
    utcOffset: zone.utcOffset,
    isDst: zone.isDst ? '1' : '0',
    type: 'scenic',
    rank: String(poi.rank),
    fxLink: `https://www.qweather.com/weather/${slug(poi.nameEn)}-${poi.id}.html`,
  };
}
