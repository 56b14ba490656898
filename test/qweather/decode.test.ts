import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  BodyDecodeError,
  MAX_DECODED_BYTES,
  SYNC_DECODE_MAX_BYTES,
  decodeBody,
} from '../../src/qweather/decode.js';

const json = Buffer.from(JSON.stringify({ code: '200', warning: [{ title: '暴雨橙色预警' }] }));
// Random bytes do not compress: a body over the synchronous bound once encoded.
const large = Buffer.from(randomBytes(SYNC_DECODE_MAX_BYTES * 2).toString('base64'));

const encoders: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};

describe('decodeBody', () => {
  for (const [encoding, encode] of Object.entries(encoders)) {
    it(`undoes ${encoding}, for small bodies and for large ones`, async () => {
      expect(encode(json).length).toBeLessThanOrEqual(SYNC_DECODE_MAX_BYTES);
      expect(await decodeBody(encode(json), encoding)).toEqual(json);
      expect(encode(large).length).toBeGreaterThan(SYNC_DECODE_MAX_BYTES);
      expect(await decodeBody(encode(large), encoding)).toEqual(large);
    });
  }

  it('reads raw deflate sent as "deflate", and gzip sent without a header', async () => {
    expect(await decodeBody(zlib.deflateRawSync(json), 'deflate')).toEqual(json);
    expect(await decodeBody(zlib.gzipSync(json), undefined)).toEqual(json);
    expect(await decodeBody(json, 'identity')).toEqual(json);
  });

  it('refuses a body that expands past the bound, small or large, without holding it', async () => {
    const zeros = Buffer.alloc(MAX_DECODED_BYTES + 1024 * 1024);
    const bomb = zlib.gzipSync(zeros, { level: 9 });
    expect(bomb.length).toBeLessThanOrEqual(SYNC_DECODE_MAX_BYTES);
    await expect(decodeBody(bomb, 'gzip')).rejects.toThrow(BodyDecodeError);
    await expect(decodeBody(bomb, undefined)).rejects.toThrow(/cannot decode the gzip body/);

    // Past the synchronous bound: padding that does not compress, then the zeros.
    const padded = zlib.gzipSync(Buffer.concat([large, zeros]), { level: 9 });
    expect(padded.length).toBeGreaterThan(SYNC_DECODE_MAX_BYTES);
    await expect(decodeBody(padded, 'gzip')).rejects.toThrow(BodyDecodeError);
    await expect(decodeBody(zlib.brotliCompressSync(zeros), 'br')).rejects.toThrow(BodyDecodeError);
  });

  it('names an encoding it cannot undo', async () => {
    await expect(decodeBody(json, 'compress')).rejects.toThrow(
      'unsupported content-encoding "compress"',
    );
  });
});
