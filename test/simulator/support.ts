import { gunzipSync } from 'node:zlib';
import { request } from 'undici';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The bytes on the wire (still gzip when the server compressed them). */
  raw: Buffer;
  /** The body as text, decoded by Content-Encoding (the raw bytes when gzip does not decode). */
  text: string;
  gzipError: boolean;
}

/** A raw HTTP GET: no client-side decompression, so tests see exactly what was sent. */
export async function get(
  url: string,
  options: { headers?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<RawResponse> {
  const res = await request(url, {
    method: 'GET',
    headers: options.headers,
    signal:
      options.signal ?? (options.timeoutMs ? AbortSignal.timeout(options.timeoutMs) : undefined),
  });
  const raw = Buffer.from(await res.body.arrayBuffer());
  let text = raw.toString('utf8');
  let gzipError = false;
  if (res.headers['content-encoding'] === 'gzip') {
    try {
      text = gunzipSync(raw).toString('utf8');
    } catch {
      gzipError = true;
    }
  }
  return { status: res.statusCode, headers: res.headers, raw, text, gzipError };
}

/** GET and parse JSON (decoded by Content-Encoding). */
export async function getJson<T = Record<string, unknown>>(
  url: string,
  options: { headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T; headers: RawResponse['headers'] }> {
  const res = await get(url, options);
  return { status: res.status, body: JSON.parse(res.text) as T, headers: res.headers };
}

/** A call to the simulator's control API. */
export async function control<T = Record<string, unknown>>(
  base: string,
  method: 'GET' | 'PUT' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await request(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as T };
}

export type Place = Record<string, string>;
