import { z } from 'zod';
import type { PlaceRow } from './places.js';
import {
  RECORD_QUIRKS,
  SimulatorInputError,
  V1_QUIRKS,
  v1Alert,
  v7Warning,
  type V1AreaAlert,
  type V7WarningRecord,
} from './records.js';

/**
 * Scenarios: a timeline of full states (warnings per location, the listed locations, v1 area
 * alerts). Records may be raw upstream records or a compact form expanded by the builders.
 * The format is documented in docs/simulator.md.
 */

const time = z.string().min(1);

/**
 * How a record reads with `lang=en` (src/simulator/english.ts): its English fields, or `false`
 * when the issuer published no English.
 */
const englishSchema = z.union([
  z.literal(false),
  z.strictObject({
    title: z.string().optional(),
    text: z.string().optional(),
    sender: z.string().optional(),
    typeName: z.string().optional(),
    instruction: z.string().optional(),
  }),
]);

const compactWarningSchema = z.strictObject({
  id: z.string().min(1).optional(),
  seq: z.number().int().min(0).max(99_999).optional(),
  typeCode: z.string().min(1).optional(),
  typeName: z.string().min(1).optional(),
  level: z.string().min(1),
  status: z.enum(['active', 'update', 'cancel']).optional(),
  related: z.string().optional(),
  /** The `seq` of an earlier compact warning of the same location that this one updates or cancels. */
  relatedSeq: z.number().int().min(0).optional(),
  pubTime: time.optional(),
  startTime: time.nullable().optional(),
  endTime: time.nullable().optional(),
  title: z.string().optional(),
  text: z.string().optional(),
  sender: z.string().optional(),
  quirks: z.array(z.enum(RECORD_QUIRKS)).optional(),
  en: englishSchema.optional(),
});

/** A record with both `id` and `title` is taken as a raw upstream record and served as is. */
const rawWarningSchema = z.looseObject({ id: z.string().min(1), title: z.string() });

export const warningInputSchema = z.union([rawWarningSchema, compactWarningSchema]);

export const areaSchema = z.union([
  z.strictObject({
    lat: z.number().min(-90).max(90),
    lon: z.number().min(-180).max(180),
    radiusKm: z.number().positive(),
  }),
  z.strictObject({ locationIds: z.array(z.string().min(1)).min(1) }),
]);

const compactAlertSchema = z.strictObject({
  area: areaSchema,
  id: z.string().min(1).optional(),
  seq: z.number().int().min(0).optional(),
  typeCode: z.string().min(1).optional(),
  typeName: z.string().min(1).optional(),
  level: z.string().min(1),
  messageType: z.enum(['alert', 'update', 'cancel']).optional(),
  supersedes: z.array(z.string()).nullable().optional(),
  issuedTime: time.optional(),
  onsetTime: time.optional(),
  expireTime: time.optional(),
  senderName: z.string().optional(),
  headline: z.string().optional(),
  description: z.string().optional(),
  instruction: z.string().optional(),
  criteria: z.string().optional(),
  quirks: z.array(z.enum(V1_QUIRKS)).optional(),
  en: englishSchema.optional(),
});

const rawAlertSchema = z.strictObject({
  area: areaSchema,
  alert: z.looseObject({ id: z.string().min(1) }),
});

export const alertInputSchema = z.union([rawAlertSchema, compactAlertSchema]);

export const warningsInputSchema = z.record(z.string().min(1), z.array(warningInputSchema));

const stepSchema = z.strictObject({
  name: z.string().optional(),
  warnings: warningsInputSchema.optional(),
  listed: z.array(z.string().min(1)).nullable().optional(),
  alerts: z.array(alertInputSchema).optional(),
});

export const scenarioSchema = z.strictObject({
  /** Default pubTime/issuedTime of compact records (ISO); default: when the scenario is loaded. */
  start: time.optional(),
  steps: z.array(stepSchema),
});

export type Scenario = z.input<typeof scenarioSchema>;
export type WarningInput = z.input<typeof warningInputSchema>;
export type AlertInput = z.input<typeof alertInputSchema>;

/** One step after expansion: exactly the state the simulator serves. */
export interface ScenarioStep {
  readonly name: string | undefined;
  readonly warnings: ReadonlyMap<string, readonly V7WarningRecord[]>;
  readonly listed: readonly string[] | null;
  readonly alerts: readonly V1AreaAlert[];
}

export interface ExpandContext {
  readonly baseTime: Date;
  readonly place: (id: string) => PlaceRow | undefined;
}

function invalid(what: string, error: z.ZodError): SimulatorInputError {
  return new SimulatorInputError(`${what}: ${z.prettifyError(error).replace(/\n+/g, '; ')}`);
}

function isRawWarning(record: object): boolean {
  return 'id' in record && 'title' in record;
}

/** Expands compact warnings; `seqIds` remembers ids by location and seq for `relatedSeq`. */
function expandWarnings(
  input: z.output<typeof warningsInputSchema>,
  ctx: ExpandContext,
  seqIds: Map<string, string>,
  where: string,
): Map<string, V7WarningRecord[]> {
  const out = new Map<string, V7WarningRecord[]>();
  for (const [locationId, records] of Object.entries(input)) {
    const expanded = records.map((record, index) => {
      if (isRawWarning(record)) return record as V7WarningRecord;
      const compact = record as z.output<typeof compactWarningSchema>;
      const seq = compact.seq ?? index + 1;
      let related = compact.related;
      if (compact.relatedSeq !== undefined) {
        related = seqIds.get(`${locationId}#${compact.relatedSeq}`);
        if (!related) {
          throw new SimulatorInputError(
            `${where}, location ${locationId}: relatedSeq ${compact.relatedSeq} names no earlier warning`,
          );
        }
      }
      try {
        const built = v7Warning({
          locationId,
          seq,
          id: compact.id,
          typeCode: compact.typeCode,
          typeName: compact.typeName,
          level: compact.level,
          status: compact.status,
          related,
          pubTime: compact.pubTime ?? ctx.baseTime,
          startTime: compact.startTime,
          endTime: compact.endTime,
          title: compact.title,
          text: compact.text,
          sender: compact.sender,
          place: ctx.place(locationId),
          quirks: compact.quirks,
        });
        seqIds.set(`${locationId}#${seq}`, built.id);
        return compact.en === undefined ? built : { ...built, en: compact.en };
      } catch (err) {
        if (err instanceof SimulatorInputError) {
          throw new SimulatorInputError(`${where}, location ${locationId}: ${err.message}`);
        }
        throw err;
      }
    });
    out.set(locationId, expanded);
  }
  return out;
}

function expandAlerts(
  input: ReadonlyArray<z.output<typeof alertInputSchema>>,
  ctx: ExpandContext,
  where: string,
): V1AreaAlert[] {
  return input.map((entry, index) => {
    if ('alert' in entry) return { area: entry.area, alert: entry.alert };
    try {
      const { en, ...options } = entry;
      const built = v1Alert({
        ...options,
        seq: entry.seq ?? index + 1,
        issuedTime: entry.issuedTime ?? ctx.baseTime,
      });
      return en === undefined ? built : { ...built, alert: { ...built.alert, en } };
    } catch (err) {
      if (err instanceof SimulatorInputError) {
        throw new SimulatorInputError(`${where}, alert ${index}: ${err.message}`);
      }
      throw err;
    }
  });
}

/** Validates a warnings map ({locationId: records}) and expands compact records. */
export function parseWarnings(input: unknown, ctx: ExpandContext): Map<string, V7WarningRecord[]> {
  const parsed = warningsInputSchema.safeParse(input);
  if (!parsed.success) throw invalid('warnings', parsed.error);
  return expandWarnings(parsed.data, ctx, new Map(), 'warnings');
}

/** Validates a list of area alerts and expands compact ones. */
export function parseAlerts(input: unknown, ctx: ExpandContext): V1AreaAlert[] {
  const parsed = z.array(alertInputSchema).safeParse(input);
  if (!parsed.success) throw invalid('alerts', parsed.error);
  return expandAlerts(parsed.data, ctx, 'alerts');
}

/** Validates a scenario and expands every step into a full state. */
export function parseScenario(
  input: unknown,
  ctx: Omit<ExpandContext, 'baseTime'> & { now: Date },
): ScenarioStep[] {
  const parsed = scenarioSchema.safeParse(input);
  if (!parsed.success) throw invalid('scenario', parsed.error);
  const baseTime = parsed.data.start ? new Date(parsed.data.start) : ctx.now;
  if (Number.isNaN(baseTime.getTime())) {
    throw new SimulatorInputError(`scenario: start is not a time: ${parsed.data.start}`);
  }
  const expandCtx: ExpandContext = { baseTime, place: ctx.place };
  const seqIds = new Map<string, string>();
  return parsed.data.steps.map((step, index) => {
    const where = `scenario step ${index}`;
    return {
      name: step.name,
      warnings: expandWarnings(step.warnings ?? {}, expandCtx, seqIds, where),
      listed: step.listed ?? null,
      alerts: expandAlerts(step.alerts ?? [], expandCtx, where),
    };
  });
}
