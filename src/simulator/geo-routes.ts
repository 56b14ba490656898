/** The simulator's location search routes (`/v2/city/*`, `/v2/poi/*`, also under `/geo/v2`). */
import {
  GeoIndex,
  meetsMinimumText,
  nameLang,
  parseLonLat,
  placeRecord,
  poiRecord,
} from './geo.js';
import {
  ApiError,
  intParam,
  langParam,
  rangeParam,
  required,
  scenicParam,
  type Params,
} from './http.js';

export type Body = Record<string, unknown>;

const GEO_REFER = { sources: ['QWeather'], license: ['QWeather Developers License'] };

export interface GeoRoutes {
  cityLookup(q: Params, at: Date): Body;
  cityTop(q: Params, at: Date): Body;
  poiLookup(q: Params, at: Date): Body;
  poiRange(q: Params, at: Date): Body;
}

export function geoRoutes(geo: GeoIndex): GeoRoutes {
  function cityLookup(q: Params, at: Date): Body {
    const text = required(q, 'location');
    const lang = nameLang(langParam(q));
    const range = rangeParam(q, 'world');
    const number = intParam(q, 'number', 10, 1, 20);
    const adm = q.get('adm') ?? undefined;
    if (adm !== undefined && adm.trim() === '') throw new ApiError(400, 'adm is empty', ['adm']);
    const filter = { adm, range };
    let found;
    const byId = geo.place(text);
    const point = parseLonLat(text);
    if (byId) {
      found = [byId].filter((p) => geo.passes(p, filter));
    } else if (/^\d{6}$/.test(text)) {
      found = geo.placesByAdcode(text).filter((p) => geo.passes(p, filter));
    } else if (point) {
      const nearest = geo.nearestPlace(point.lat, point.lon);
      found = nearest && geo.passes(nearest, filter) ? [nearest] : [];
    } else if (/^-?[\d.]+\s*,\s*-?[\d.]+$/.test(text)) {
      throw new ApiError(400, 'location coordinates out of range', ['location']);
    } else {
      if (!meetsMinimumText(text)) {
        throw new ApiError(
          400,
          'location: at least one Chinese character or two other characters',
          ['location'],
        );
      }
      found = geo.searchPlaces(text, filter);
    }
    if (found.length === 0) throw new ApiError(404, 'no place matches');
    return {
      code: '200',
      location: found.slice(0, number).map((p) => placeRecord(p, lang, at)),
      refer: GEO_REFER,
    };
  }

  function cityTop(q: Params, at: Date): Body {
    const lang = nameLang(langParam(q));
    const range = rangeParam(q, 'world');
    const number = intParam(q, 'number', 10, 1, 20);
    const top = geo.topPlaces(range).slice(0, number);
    if (top.length === 0) throw new ApiError(404, 'no place in range');
    // The spec's popular-city sample names the country field `cnty`.
    const topCityList = top.map((p) => {
      const { country, ...rest } = placeRecord(p, lang, at);
      return { ...rest, cnty: country };
    });
    return { code: '200', topCityList, refer: GEO_REFER };
  }

  function poiLookup(q: Params, at: Date): Body {
    const text = required(q, 'location');
    scenicParam(q);
    const lang = nameLang(langParam(q));
    const number = intParam(q, 'number', 10, 1, 20);
    if (!meetsMinimumText(text)) {
      throw new ApiError(400, 'location: at least one Chinese character or two letters', [
        'location',
      ]);
    }
    const city = q.get('city') ?? undefined;
    const found = geo.searchPois(text, city);
    if (found === 'no-city') return { code: '200', poi: [], refer: GEO_REFER };
    if (found.length === 0) throw new ApiError(404, 'no POI matches');
    return {
      code: '200',
      poi: found.slice(0, number).map((p) => poiRecord(p, geo.poiTimeZone(p), lang, at)),
      refer: GEO_REFER,
    };
  }

  function poiRange(q: Params, at: Date): Body {
    const point = parseLonLat(required(q, 'location'));
    if (!point) throw new ApiError(400, 'location must be lon,lat', ['location']);
    scenicParam(q);
    const lang = nameLang(langParam(q));
    const radius = intParam(q, 'radius', 5, 1, 50);
    const number = intParam(q, 'number', 10, 1, 20);
    const found = geo.poisNear(point.lat, point.lon, radius);
    if (found.length === 0) throw new ApiError(404, 'no POI in range');
    return {
      code: '200',
      poi: found.slice(0, number).map((p) => poiRecord(p, geo.poiTimeZone(p), lang, at)),
      refer: GEO_REFER,
    };
  }

  return { cityLookup, cityTop, poiLookup, poiRange };
}
