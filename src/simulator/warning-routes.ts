/** The simulator's v7 warning routes (`/v7/warning/now`, `/v7/warning/list`). */
import type { Body } from './geo-routes.js';
import { englishV7, served } from './english.js';
import { GeoIndex, nameLang, parseLonLat, slug } from './geo.js';
import { ApiError, rangeParam, required, type Params } from './http.js';
import { chinaTime, type V7WarningRecord } from './records.js';

const WARNING_REFER = { sources: ['12379'], license: ['QWeather Developers License'] };

/** What the v7 routes read of the simulator's state. */
export interface V7State {
  warnings(): ReadonlyMap<string, readonly V7WarningRecord[]>;
  /** The warning list: the override, else the locations with warnings. */
  listed(): string[];
  updatedAt(): Date;
}

export interface WarningRoutes {
  resolveWarningLocation(q: Params): string;
  /** `lang` as asked: `en` serves the records in English (src/simulator/english.ts). */
  warningNowBody(locationId: string, lang?: string | null): Body;
  warningList(q: Params): Body;
}

export function warningRoutes(geo: GeoIndex, state: V7State): WarningRoutes {
  function resolveWarningLocation(q: Params): string {
    const text = required(q, 'location');
    const point = parseLonLat(text);
    if (point) {
      const nearest = geo.nearestPlace(point.lat, point.lon);
      if (!nearest) throw new ApiError(404, 'no place near these coordinates');
      return nearest.id;
    }
    // Any 9-digit id is a plausible Chinese county even when the loaded table lacks it.
    if (geo.place(text) || state.warnings().has(text) || /^\d{9}$/.test(text)) return text;
    throw new ApiError(404, 'unknown location');
  }

  function warningNowBody(locationId: string, lang?: string | null): Body {
    const place = geo.place(locationId);
    const records = state.warnings().get(locationId) ?? [];
    return {
      code: '200',
      updateTime: chinaTime(state.updatedAt()),
      fxLink: `https://www.qweather.com/severe-weather/${slug(place?.nameEn ?? 'china')}-${locationId}.html`,
      warning:
        nameLang(lang) === 'en' ? records.map((r) => englishV7(r, place)) : records.map(served),
      refer: WARNING_REFER,
    };
  }

  function warningList(q: Params): Body {
    const range = rangeParam(q, undefined);
    if (range === 'world') throw new ApiError(400, 'range must be a country code', ['range']);
    const ids = state.listed().filter((id) => {
      const iso = geo.place(id)?.iso.toLowerCase();
      // Places the table does not know are taken to be in China, the API's only documented range.
      return iso ? iso === range : range === 'cn';
    });
    return {
      code: '200',
      updateTime: `${state.updatedAt().toISOString().slice(0, 16)}+00:00`,
      warningLocList: ids.map((locationId) => ({ locationId })),
      refer: WARNING_REFER,
    };
  }

  return { resolveWarningLocation, warningNowBody, warningList };
}
