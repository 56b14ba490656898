/**
 * The simulator's HTTP plumbing shared by every route family: the real API's two error styles,
 * query parameter checks, and writing bodies (gzip or not, or deliberately unreadable gzip).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { slug } from './geo.js';
import { SimulatorInputError } from './records.js';

/** A request the real API would refuse, answered in the operation's error style. */
export class ApiError extends Error {
  constructor(
    readonly code: 400 | 401 | 404,
    readonly detail: string,
    readonly invalidParams: string[] = [],
  ) {
    super(detail);
  }
}

const PROBLEM_TITLES: Record<number, string> = {
  400: 'Invalid Parameters',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  429: 'Too Many Requests',
  500: 'Unknown Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export function problem(status: number, title?: string, detail?: string, extra?: object): object {
  const name = title ?? PROBLEM_TITLES[status] ?? 'Error';
  return {
    error: {
      status,
      type: `https://dev.qweather.com/docs/resource/error-code/#${slug(name)}`,
      title: name,
      detail: detail ?? name,
      ...extra,
    },
  };
}

export const LANG = /^[a-z]{2,3}(-[a-z0-9]{2,8})*$/i;
const RANGE = /^(world|[a-z]{2})$/i;

export type Params = URLSearchParams;

export function required(q: Params, name: string): string {
  const value = q.get(name);
  if (value === null || value.trim() === '') throw new ApiError(400, `${name} is required`, [name]);
  return value.trim();
}

export function intParam(
  q: Params,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const text = q.get(name);
  if (text === null) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ApiError(400, `${name} must be a whole number ${min}-${max}`, [name]);
  }
  return Number(text);
}

export function rangeParam(q: Params, fallback: string | undefined): string {
  const text = q.get('range') ?? fallback;
  if (text === undefined) throw new ApiError(400, 'range is required', ['range']);
  if (!RANGE.test(text))
    throw new ApiError(400, 'range must be world or a country code', ['range']);
  return text.toLowerCase();
}

export function langParam(q: Params): string | undefined {
  const text = q.get('lang');
  if (text === null) return undefined;
  if (!LANG.test(text)) throw new ApiError(400, 'lang is not a language code', ['lang']);
  return text;
}

export function scenicParam(q: Params): void {
  if (q.get('type') !== 'scenic') throw new ApiError(400, 'type must be scenic', ['type']);
}

/** A gzip body that cannot be read: bytes that are not gzip, or gzip that expands without end. */
export type BadGzip = 'corrupt' | 'bomb';

let gzipBombBody: Buffer | undefined;
/** A valid gzip stream of 64 MB of zeros, about 64 KB on the wire; built on first use. */
function gzipBomb(): Buffer {
  gzipBombBody ??= gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
  return gzipBombBody;
}

interface WriteOptions {
  gzip: boolean;
  badGzip?: BadGzip | undefined;
  contentType?: string;
  headers?: Record<string, string>;
}

export function write(
  res: ServerResponse,
  status: number,
  payload: string | Buffer,
  o: WriteOptions,
): void {
  let body: Buffer;
  const headers: Record<string, string | number> = {
    'content-type': o.contentType ?? 'application/json; charset=utf-8',
    ...o.headers,
  };
  if (o.badGzip) {
    body =
      o.badGzip === 'bomb' ? gzipBomb() : Buffer.from('\x1f\x8bthis is not gzip data', 'latin1');
    headers['content-encoding'] = 'gzip';
  } else if (o.gzip) {
    body = gzipSync(payload);
    headers['content-encoding'] = 'gzip';
  } else {
    body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  }
  headers['content-length'] = body.length;
  res.writeHead(status, headers);
  res.end(body);
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    // Scenarios at national scale are a few MB; anything far beyond is a mistake.
    if (size > 64 * 1024 * 1024) throw new SimulatorInputError('request body too large');
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SimulatorInputError('request body is not JSON');
  }
}
