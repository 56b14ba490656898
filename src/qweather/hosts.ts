/**
 * QWeather's shared API hosts are being switched off during 2026 (notes/qweather-facts.md): each
 * account has its own host, `https://<id>.re.qweatherapi.com`, with location search under
 * `/geo`. A deployment still pointed at a shared host works until the day it does not.
 */
const LEGACY_HOSTS = new Set(['api.qweather.com', 'devapi.qweather.com', 'geoapi.qweather.com']);

/** One line for the operator when a URL names a shared host; null otherwise. */
export function legacyHostWarning(
  variable: 'QWEATHER_API_URL' | 'QWEATHER_GEO_URL',
  url: string | undefined,
): string | null {
  if (!url) return null;
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
  if (!LEGACY_HOSTS.has(host)) return null;
  const replacement =
    variable === 'QWEATHER_GEO_URL'
      ? 'https://<your-id>.re.qweatherapi.com/geo'
      : 'https://<your-id>.re.qweatherapi.com';
  return (
    `${variable} uses ${host}, a shared host QWeather is discontinuing: set it to your ` +
    `account's own API host, ${replacement} (QWeather console, Settings > API Host)`
  );
}
