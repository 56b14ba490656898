import { ParameterError, type QWeatherOperation } from './errors.js';

/**
 * The spec's parameter rules (service-api §4 and §8), checked before any request so that a
 * mistake costs no quota and never looks like an upstream failure.
 */

const HAN = /\p{Script=Han}/u;
const COORDINATES = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/;
const LANG = /^[a-z]{2}(-[a-z]{2,4})?$/i;
const COUNTRY = /^[a-z]{2}$/i;
// Location IDs are alphanumeric ("101010100", "10117030601A"); ADCodes are digits.
const LOCATION_ID = /^[A-Za-z0-9]{1,32}$/;

export interface Coordinates {
  lon: number;
  lat: number;
}

export function parseCoordinates(text: string): Coordinates | undefined {
  const match = COORDINATES.exec(text);
  if (!match) return undefined;
  return { lon: Number(match[1]), lat: Number(match[2]) };
}

export function looksLikeCoordinates(text: string): boolean {
  return COORDINATES.test(text);
}

export function checkLon(lon: number, parameter: string, op: QWeatherOperation): void {
  if (!Number.isFinite(lon) || lon < -180 || lon > 180) {
    throw new ParameterError(parameter, 'longitude must be between -180 and 180', op);
  }
}

export function checkLat(lat: number, parameter: string, op: QWeatherOperation): void {
  if (!Number.isFinite(lat) || lat < -90 || lat > 90) {
    throw new ParameterError(parameter, 'latitude must be between -90 and 90', op);
  }
}

/** `lon,lat` in range; returns the text as sent (trimmed, no spaces). */
export function checkCoordinates(text: string, parameter: string, op: QWeatherOperation): string {
  const coords = parseCoordinates(text);
  if (!coords) {
    throw new ParameterError(parameter, 'must be coordinates "lon,lat" in decimal degrees', op);
  }
  checkLon(coords.lon, parameter, op);
  checkLat(coords.lat, parameter, op);
  return `${coords.lon},${coords.lat}`;
}

/** Minimum search text: one Chinese character, or two other characters. */
export function checkSearchText(
  text: string,
  parameter: string,
  op: QWeatherOperation,
  otherCharactersName = 'other characters',
): string {
  const trimmed = typeof text === 'string' ? text.trim() : '';
  const long = HAN.test(trimmed) ? trimmed.length >= 1 : [...trimmed].length >= 2;
  if (!long) {
    throw new ParameterError(
      parameter,
      `must be at least one Chinese character or 2 ${otherCharactersName}`,
      op,
    );
  }
  return trimmed;
}

/** City lookup `location`: a name, a Location ID, an ADCode or `lon,lat`. */
export function checkLookupLocation(text: string, op: QWeatherOperation): string {
  if (typeof text === 'string' && looksLikeCoordinates(text)) {
    return checkCoordinates(text, 'location', op);
  }
  return checkSearchText(text, 'location', op);
}

/** Warning `location`: a Location ID or `lon,lat`. */
export function checkWarningLocation(text: string, op: QWeatherOperation): string {
  const trimmed = typeof text === 'string' ? text.trim() : '';
  if (looksLikeCoordinates(trimmed)) return checkCoordinates(trimmed, 'location', op);
  if (!LOCATION_ID.test(trimmed)) {
    throw new ParameterError('location', 'must be a Location ID or coordinates "lon,lat"', op);
  }
  return trimmed;
}

export function checkIntegerRange(
  value: number,
  parameter: string,
  min: number,
  max: number,
  op: QWeatherOperation,
  unit = '',
): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ParameterError(parameter, `must be an integer from ${min} to ${max}${unit}`, op);
  }
  return value;
}

export const checkNumber = (value: number, op: QWeatherOperation): number =>
  checkIntegerRange(value, 'number', 1, 20, op);

export const checkRadius = (value: number, op: QWeatherOperation): number =>
  checkIntegerRange(value, 'radius', 1, 50, op, ' (km)');

/** `world` or an ISO 3166-1 alpha-2 code; sent lower-case. */
export function checkRange(value: string, op: QWeatherOperation): string {
  if (typeof value === 'string' && value.toLowerCase() === 'world') return 'world';
  if (typeof value !== 'string' || !COUNTRY.test(value)) {
    throw new ParameterError('range', 'must be "world" or a 2-letter ISO 3166 country code', op);
  }
  return value.toLowerCase();
}

/**
 * Warning list `range`: the spec documents only `cn`, but we accept any 2-letter code so that
 * a country QWeather adds later works without a release; the upstream refuses unknown ones.
 */
export function checkCountry(value: string, op: QWeatherOperation): string {
  if (typeof value !== 'string' || !COUNTRY.test(value)) {
    throw new ParameterError('range', 'must be a 2-letter ISO 3166 country code (e.g. cn)', op);
  }
  return value.toLowerCase();
}

export function checkLang(value: string, op: QWeatherOperation | null = null): string {
  if (typeof value !== 'string' || !LANG.test(value)) {
    throw new ParameterError('lang', 'must be a language code such as zh, en or zh-hant', op);
  }
  return value.toLowerCase();
}

export function checkPoiType(value: string, op: QWeatherOperation): 'scenic' {
  if (value !== 'scenic') {
    throw new ParameterError('type', 'must be "scenic" (the only POI type available)', op);
  }
  return value;
}

export function checkText(value: string, parameter: string, op: QWeatherOperation): string {
  const trimmed = typeof value === 'string' ? value.trim() : '';
  if (trimmed === '') throw new ParameterError(parameter, 'must not be empty', op);
  return trimmed;
}

export function checkGzip(value: unknown): 'y' | 'n' {
  if (typeof value !== 'boolean') {
    throw new ParameterError('gzip', 'must be y or n (true or false)');
  }
  return value ? 'y' : 'n';
}

/** v1 takes at most 2 decimals; rounding moves a point by at most ~600 m. */
export function roundCoordinate(value: number): string {
  return String(Math.round(value * 100) / 100);
}
