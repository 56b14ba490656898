import { promisify } from 'node:util';
import zlib from 'node:zlib';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotli = promisify(zlib.brotliDecompress);

export class BodyDecodeError extends Error {
  override name = 'BodyDecodeError';
}

/**
 * Most a decoded body may hold. The largest answers (a country's warning list, a page of POIs)
 * are well under a megabyte; without a bound, a few megabytes of gzip could expand to gigabytes
 * and take the worker down.
 */
export const MAX_DECODED_BYTES = 32 * 1024 * 1024;

/**
 * Bodies up to this size are decoded in one synchronous call. An asynchronous one sets up a
 * stream and a thread-pool round trip for each body: about 47 µs of CPU against 6 µs for a
 * typical warning answer of a few hundred bytes, and a storm decodes thousands of them.
 */
export const SYNC_DECODE_MAX_BYTES = 64 * 1024;

const LIMIT = { maxOutputLength: MAX_DECODED_BYTES };

type Decoder = 'gunzip' | 'inflate' | 'inflateRaw' | 'brotli';

const SYNC: Record<Decoder, (bytes: Buffer) => Buffer> = {
  gunzip: (b) => zlib.gunzipSync(b, LIMIT),
  inflate: (b) => zlib.inflateSync(b, LIMIT),
  inflateRaw: (b) => zlib.inflateRawSync(b, LIMIT),
  brotli: (b) => zlib.brotliDecompressSync(b, LIMIT),
};

const ASYNC: Record<Decoder, (bytes: Buffer) => Promise<Buffer>> = {
  gunzip: (b) => gunzip(b, LIMIT),
  inflate: (b) => inflate(b, LIMIT),
  inflateRaw: (b) => inflateRaw(b, LIMIT),
  brotli: (b) => brotli(b, LIMIT),
};

async function decode(decoder: Decoder, bytes: Buffer): Promise<Buffer> {
  return bytes.length <= SYNC_DECODE_MAX_BYTES ? SYNC[decoder](bytes) : ASYNC[decoder](bytes);
}

const isGzip = (bytes: Buffer): boolean =>
  bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

/**
 * Decodes a body by its `Content-Encoding`, whatever `gzip=` asked for: QWeather compresses by
 * default, sometimes when told not to, sometimes not at all (facts note). A gzip body with no
 * header is recognised by its magic bytes (JSON never starts with 0x1f).
 */
export async function decodeBody(
  bytes: Buffer,
  contentEncoding: string | string[] | undefined,
): Promise<Buffer> {
  const encodings = (
    Array.isArray(contentEncoding) ? contentEncoding.join(',') : (contentEncoding ?? '')
  )
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  let out = bytes;
  try {
    // Encodings are listed in the order they were applied; undo them last first.
    for (const encoding of encodings.reverse()) {
      if (encoding === 'gzip' || encoding === 'x-gzip') out = await decode('gunzip', out);
      else if (encoding === 'deflate') out = await inflateEither(out);
      else if (encoding === 'br') out = await decode('brotli', out);
      else throw new BodyDecodeError(`unsupported content-encoding "${encoding}"`);
    }
    if (encodings.length === 0 && isGzip(out)) out = await decode('gunzip', out);
  } catch (err) {
    if (err instanceof BodyDecodeError) throw err;
    throw new BodyDecodeError(
      `cannot decode the ${encodings.join(', ') || 'gzip'} body: ${(err as Error).message}`,
    );
  }
  return out;
}

/** "deflate" is zlib-wrapped per the RFC, but some servers send raw deflate. */
async function inflateEither(bytes: Buffer): Promise<Buffer> {
  try {
    return await decode('inflate', bytes);
  } catch {
    return await decode('inflateRaw', bytes);
  }
}
