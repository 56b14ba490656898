/** How the simulator answers a request that an injected fault matched (docs/simulator.md). */
import type { ServerResponse } from 'node:http';
import type { FaultAction } from './faults.js';
import { problem, write, type BadGzip } from './http.js';
import { ALL_QUIRKS, type Quirk } from './records.js';

/** What a fault leaves for the normal answer to do. */
export interface FaultEffect {
  /** The fault answered (or will never answer): nothing more to write. */
  readonly answered: boolean;
  /** Overrides the request's gzip choice when set. */
  readonly gzip?: boolean;
  readonly malformed: boolean;
  readonly badGzip?: BadGzip;
  readonly quirks: readonly Quirk[];
  /** Raw record texts to add to the answer's array. */
  readonly extraRecords?: readonly string[];
  /** Send the answer this many bytes at a time, one step every `intervalMs`. */
  readonly drip?: { readonly intervalMs: number; readonly bytes: number };
}

export const NO_FAULT: FaultEffect = Object.freeze({
  answered: false,
  malformed: false,
  quirks: [],
});
const ANSWERED: FaultEffect = Object.freeze({ ...NO_FAULT, answered: true });

/** 403 problem+json titled "Deprecated": QWeather's answer on a retired endpoint. */
export function answerDeprecated(res: ServerResponse, gzip: boolean): void {
  write(
    res,
    403,
    JSON.stringify(
      problem(
        403,
        'Deprecated',
        'This API has been deprecated, please use the Weather Alert API (v1).',
      ),
    ),
    { gzip, contentType: 'application/problem+json' },
  );
}

export async function answerFault(
  res: ServerResponse,
  fault: FaultAction,
  gzip: boolean,
  io: { hang(): void; sleep(ms: number): Promise<boolean> },
): Promise<FaultEffect> {
  switch (fault.kind) {
    case 'hang':
      io.hang();
      return ANSWERED;
    case 'delay':
      // The server closed meanwhile: nothing more to write.
      if (!(await io.sleep(fault.ms))) return ANSWERED;
      return NO_FAULT;
    case 'code':
      write(res, 200, JSON.stringify({ code: fault.code }), { gzip });
      return ANSWERED;
    case 'problem':
      write(
        res,
        fault.status,
        JSON.stringify(
          problem(
            fault.status,
            fault.title,
            fault.detail,
            fault.type ? { type: fault.type } : undefined,
          ),
        ),
        {
          gzip,
          contentType: 'application/problem+json',
        },
      );
      return ANSWERED;
    case 'deprecated':
      answerDeprecated(res, gzip);
      return ANSWERED;
    case 'rateLimit':
      write(res, 429, JSON.stringify(problem(429)), {
        gzip,
        contentType: 'application/problem+json',
        headers:
          fault.retryAfterSeconds !== undefined
            ? { 'retry-after': String(fault.retryAfterSeconds) }
            : {},
      });
      return ANSWERED;
    case 'http':
      write(res, fault.status, fault.body ?? '', {
        gzip: false,
        contentType: fault.contentType ?? 'text/html; charset=utf-8',
      });
      return ANSWERED;
    case 'body':
      write(res, fault.status ?? 200, fault.body, {
        gzip,
        contentType: fault.contentType ?? 'application/json; charset=utf-8',
      });
      return ANSWERED;
    case 'extraRecords':
      return { ...NO_FAULT, extraRecords: fault.records };
    case 'drip':
      return {
        ...NO_FAULT,
        gzip: false,
        drip: { intervalMs: fault.intervalMs, bytes: fault.bytes ?? 1 },
      };
    case 'malformedJson':
      return { ...NO_FAULT, malformed: true };
    case 'corruptGzip':
      return { ...NO_FAULT, badGzip: 'corrupt' };
    case 'gzipBomb':
      return { ...NO_FAULT, badGzip: 'bomb' };
    case 'forceGzip':
      return { ...NO_FAULT, gzip: true };
    case 'noGzip':
      return { ...NO_FAULT, gzip: false };
    case 'quirks':
      return { ...NO_FAULT, quirks: (fault.quirks as Quirk[] | undefined) ?? ALL_QUIRKS };
  }
}
