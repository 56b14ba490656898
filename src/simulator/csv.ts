import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PlaceData, PlaceRow, PoiRow } from './places.js';

export const CITY_LIST_FILE = 'China-City-List-latest.csv';
export const POI_LIST_FILE = 'POI-Scenic-List-latest.csv';

export class PlaceListError extends Error {
  override name = 'PlaceListError';
}

/** RFC 4180 rows: some country names are quoted because they hold a comma. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
        }
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      quoted = true;
    } else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += ch;
    }
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => r.length > 1 || (r[0] ?? '') !== '');
}

/**
 * The lists have no rank, so one is derived from the Location ID's structure
 * (101 + province + city + district): the main place of a municipality or a provincial capital
 * ranks highest, then prefecture seats, then districts and counties.
 */
function derivedRank(id: string, name: string, adm1: string, adm2: string): number {
  if (!/^\d{9}$/.test(id)) return 20;
  const city = id.slice(5, 7);
  const district = id.slice(7, 9);
  const municipality = adm1 === adm2;
  if (municipality) return city === '01' && district === '00' ? 95 : 40;
  const seat = name === adm2 || `${name}市` === adm2;
  if (seat && city === '01') return 85;
  if (seat) return 65;
  return 30;
}

function column(header: string[], name: string, file: string): number {
  const index = header.indexOf(name);
  if (index < 0) throw new PlaceListError(`${file}: no column "${name}" in the header`);
  return index;
}

/** Rows after the banner line and the header, as records keyed by header name. */
function records(text: string, file: string): { header: string[]; rows: string[][] } {
  const rows = parseCsv(text.replace(/^\uFEFF/, ''));
  const header = rows[1];
  if (!header) throw new PlaceListError(`${file}: expected a banner line and a header`);
  return { header: header.map((h) => h.trim()), rows: rows.slice(2) };
}

/** Reads QWeather's full city and scenic-POI lists (e.g. ../shared/data/qweather) for scale runs. */
export async function loadPlacesFromCsv(dir: string): Promise<PlaceData> {
  const [cityText, poiText] = await Promise.all([
    readFile(join(dir, CITY_LIST_FILE), 'utf8'),
    readFile(join(dir, POI_LIST_FILE), 'utf8'),
  ]);

  const cities = records(cityText, CITY_LIST_FILE);
  const c = (name: string) => column(cities.header, name, CITY_LIST_FILE);
  const ci = {
    id: c('Location_ID'),
    nameEn: c('Location_Name_EN'),
    name: c('Location_Name_ZH'),
    iso: c('ISO_3166_1'),
    countryEn: c('Country_Region_EN'),
    country: c('Country_Region_ZH'),
    adm1En: c('Adm1_Name_EN'),
    adm1: c('Adm1_Name_ZH'),
    adm2En: c('Adm2_Name_EN'),
    adm2: c('Adm2_Name_ZH'),
    tz: c('Timezone'),
    lat: c('Latitude'),
    lon: c('Longitude'),
    adcode: c('AD_code'),
  };
  const places: PlaceRow[] = [];
  for (const row of cities.rows) {
    const get = (i: number) => (row[i] ?? '').trim();
    const id = get(ci.id);
    const lat = Number(get(ci.lat));
    const lon = Number(get(ci.lon));
    if (!id || !Number.isFinite(lat) || !Number.isFinite(lon)) continue;
    const name = get(ci.name);
    const adm1 = get(ci.adm1);
    const adm2 = get(ci.adm2);
    places.push({
      id,
      name,
      nameEn: get(ci.nameEn),
      iso: get(ci.iso),
      country: get(ci.country),
      countryEn: get(ci.countryEn),
      adm1,
      adm1En: get(ci.adm1En),
      adm2,
      adm2En: get(ci.adm2En),
      tz: get(ci.tz) || 'Asia/Shanghai',
      lat,
      lon,
      adcode: get(ci.adcode),
      rank: derivedRank(id, name, adm1, adm2),
    });
  }

  const poiList = records(poiText, POI_LIST_FILE);
  if (poiList.header.length < 13) {
    throw new PlaceListError(
      `${POI_LIST_FILE}: expected 13 columns, found ${poiList.header.length}`,
    );
  }
  // The POI header mixes English and Chinese names; address columns by position.
  const pois: PoiRow[] = [];
  for (const row of poiList.rows) {
    const get = (i: number) => (row[i] ?? '').trim();
    const lat = Number(get(3));
    const lon = Number(get(4));
    if (!get(0) || !Number.isFinite(lat) || !Number.isFinite(lon)) continue;
    pois.push({
      id: get(0),
      nameEn: get(1),
      name: get(2),
      lat,
      lon,
      iso: get(5),
      countryEn: get(6),
      country: get(7),
      locationId: get(8),
      adm1En: get(9),
      adm1: get(10),
      adm2En: get(11),
      adm2: get(12),
      rank: 50,
    });
  }
  return { places, pois };
}
