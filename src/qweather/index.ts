export {
  createClientFromConfig,
  createQWeatherClient,
  type QWeatherClient,
  type QWeatherClientOptions,
  type Refer,
  type WarningList,
  type WarningNow,
  type WeatherAlerts,
} from './client.js';
export type { QWeatherAuth } from './auth.js';
export * from './errors.js';
export type { Place, Poi } from './normalize.js';
export { parseCoordinates } from './params.js';
