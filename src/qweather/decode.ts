import { promisify } from 'node:util';
import zlib from 'node:zlib';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotli = promisify(zlib.brotliDecompress);

export class BodyDecodeError extends Error {
  override name = 'BodyDecodeError';
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
      if (encoding === 'gzip' || encoding === 'x-gzip') out = await gunzip(out);
      else if (encoding === 'deflate') out = await inflateEither(out);
      else if (encoding === 'br') out = await brotli(out);
      else throw new BodyDecodeError(`unsupported content-encoding "${encoding}"`);
    }
    if (encodings.length === 0 && isGzip(out)) out = await gunzip(out);
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
    return await inflate(bytes);
  } catch {
    return await inflateRaw(bytes);
  }
}
