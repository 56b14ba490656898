/** The QWeather simulator: a stand-in for the upstream API (see docs/simulator.md). */
export {
  startSimulator,
  type RequestCounts,
  type Simulator,
  type SimulatorOptions,
  type SimulatorState,
} from './server.js';
export { loadPlacesFromCsv, PlaceListError, parseCsv } from './csv.js';
export { builtinPlaces, type PlaceData, type PlaceRow, type PoiRow } from './places.js';
export {
  ALL_QUIRKS,
  SimulatorInputError,
  TYPE_NAMES,
  applyRecordQuirks,
  chinaTime,
  v1Alert,
  v7Warning,
  type AlertArea,
  type Quirk,
  type V1AlertOptions,
  type V1AlertRecord,
  type V1AreaAlert,
  type V7WarningOptions,
  type V7WarningRecord,
} from './records.js';
export { parseScenario, type Scenario, type ScenarioStep } from './scenario.js';
export { OPERATIONS, type Fault, type FaultAction, type Operation } from './faults.js';
export { haversineKm } from './geo.js';
