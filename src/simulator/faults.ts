import { z } from 'zod';
import { ALL_QUIRKS, SimulatorInputError } from './records.js';

export const OPERATIONS = [
  'cityLookup',
  'cityTop',
  'poiLookup',
  'poiRange',
  'warningNow',
  'warningList',
  'weatherAlert',
] as const;
export type Operation = (typeof OPERATIONS)[number];

const operationSchema = z.enum(OPERATIONS);

const actionSchema = z.discriminatedUnion('kind', [
  /** Old style: HTTP 200 with `{"code": code}` (e.g. "401", "429", "500"; "204" = empty). */
  z.strictObject({ kind: z.literal('code'), code: z.string().regex(/^\d{3}$/) }),
  /** New style: the real HTTP status with a problem+json body. */
  z.strictObject({
    kind: z.literal('problem'),
    status: z.number().int().min(400).max(599),
    title: z.string().optional(),
    type: z.string().optional(),
    detail: z.string().optional(),
  }),
  /** A retired endpoint: 403 problem+json titled "Deprecated". */
  z.strictObject({ kind: z.literal('deprecated') }),
  /** HTTP 429 (problem+json), with a Retry-After header when seconds are given. */
  z.strictObject({
    kind: z.literal('rateLimit'),
    retryAfterSeconds: z.number().int().min(0).optional(),
  }),
  /** Any status with a raw body, e.g. a proxy's 502 page. */
  z.strictObject({
    kind: z.literal('http'),
    status: z.number().int().min(100).max(599),
    body: z.string().optional(),
    contentType: z.string().optional(),
  }),
  /**
   * A raw body, e.g. `{}` or `{"code":"200"}` without its array: HTTP 200 and JSON unless told
   * otherwise. The text goes out as given, so it may hold what JSON.stringify cannot write.
   */
  z.strictObject({
    kind: z.literal('body'),
    body: z.string(),
    status: z.number().int().min(100).max(599).optional(),
    contentType: z.string().optional(),
  }),
  /**
   * The normal answer with these records added to its array (v7 `warning`, v1 `alerts`), each
   * a raw JSON text: a poisoned record (`\u0000`, a lone `\ud800`, nesting thousands deep, an
   * object where a string belongs) beside the real ones.
   */
  z.strictObject({ kind: z.literal('extraRecords'), records: z.array(z.string()).min(1) }),
  /** The normal answer, `bytes` bytes (default 1) every `intervalMs`: a body that drips in. */
  z.strictObject({
    kind: z.literal('drip'),
    intervalMs: z.number().int().min(1).max(60_000),
    bytes: z.number().int().min(1).max(65_536).optional(),
  }),
  /** Never answers (the socket stays open until the client gives up or the server closes). */
  z.strictObject({ kind: z.literal('hang') }),
  /** Answers normally after a delay. */
  z.strictObject({ kind: z.literal('delay'), ms: z.number().int().min(0).max(600_000) }),
  z.strictObject({ kind: z.literal('malformedJson') }),
  /** `Content-Encoding: gzip` on bytes that are not gzip. */
  z.strictObject({ kind: z.literal('corruptGzip') }),
  /** Valid gzip that expands to 64 MB of zeros (a decompression bomb). */
  z.strictObject({ kind: z.literal('gzipBomb') }),
  /** Gzip even though the request said gzip=n. */
  z.strictObject({ kind: z.literal('forceGzip') }),
  /** A plain body even though the request said gzip=y. */
  z.strictObject({ kind: z.literal('noGzip') }),
  /** The sample quirks (all of them by default). */
  z.strictObject({
    kind: z.literal('quirks'),
    quirks: z.array(z.enum(ALL_QUIRKS as [string, ...string[]])).optional(),
  }),
]);

const scopeSchema = z.object({
  /** Operation(s) the fault applies to; all operations when absent. */
  operation: z.union([operationSchema, z.array(operationSchema).min(1)]).optional(),
  /** Only requests for this location (v2/v7 `location`, v1 "lat,lon" as in the path). */
  location: z.string().min(1).optional(),
  /** How many requests it answers before it is used up; until cleared when absent. */
  times: z.number().int().min(1).optional(),
});

export const faultSchema = z.intersection(actionSchema, scopeSchema);

export type FaultAction = z.output<typeof actionSchema>;
export type Fault = z.input<typeof faultSchema>;

export interface ActiveFault {
  readonly id: string;
  readonly fault: z.output<typeof faultSchema>;
  remaining: number | null;
}

export function parseFault(input: unknown): z.output<typeof faultSchema> {
  const parsed = faultSchema.safeParse(input);
  if (!parsed.success) {
    throw new SimulatorInputError(`fault: ${z.prettifyError(parsed.error).replace(/\n+/g, '; ')}`);
  }
  return parsed.data;
}

/** Faults in the order they were added; the first that matches a request answers it. */
export class FaultTable {
  private faults: ActiveFault[] = [];
  private nextId = 1;

  add(input: unknown): string {
    const fault = parseFault(input);
    const id = `f${this.nextId++}`;
    this.faults.push({ id, fault, remaining: fault.times ?? null });
    return id;
  }

  remove(id: string): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    return this.faults.length !== before;
  }

  clear(): void {
    this.faults = [];
  }

  list(): ActiveFault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  /** The fault that answers this request, if any; uses up one of its `times`. */
  take(operation: Operation, location: string | undefined): FaultAction | undefined {
    if (this.faults.length === 0) return undefined;
    for (const active of this.faults) {
      const { operation: ops, location: where } = active.fault;
      if (
        ops !== undefined &&
        (Array.isArray(ops) ? !ops.includes(operation) : ops !== operation)
      ) {
        continue;
      }
      if (where !== undefined && where !== location) continue;
      if (active.remaining !== null) {
        active.remaining -= 1;
        if (active.remaining <= 0) this.faults = this.faults.filter((f) => f !== active);
      }
      return active.fault;
    }
    return undefined;
  }
}
