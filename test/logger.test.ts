import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, registerSecret, scrub } from '../src/logger.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, stream };
}

describe('logger redaction', () => {
  it('removes the key from URLs and credentials from URLs', () => {
    expect(scrub('GET http://h/v7/warning/now?location=1&key=abcdef123456&gzip=n')).toBe(
      'GET http://h/v7/warning/now?location=1&key=[redacted]&gzip=n',
    );
    expect(scrub('smtp://user:pa55@mail.example.com:587')).toBe(
      'smtp://[redacted]@mail.example.com:587',
    );
    expect(scrub('no Redis answers at redis://:s3cret-pw@10.0.0.5:6379/0')).toBe(
      'no Redis answers at redis://[redacted]@10.0.0.5:6379/0',
    );
  });

  it('scrubs registered secrets from messages, fields and errors', () => {
    registerSecret('s3cr3t-api-key-value');
    const { lines, stream } = capture();
    const log = createLogger('info', stream);
    log.info({ url: 'x', note: 'with s3cr3t-api-key-value inside' }, 'used s3cr3t-api-key-value');
    log.error({ err: new Error('failed for s3cr3t-api-key-value') }, 'upstream failed');
    log.info({ apiKey: 'zzz', headers: { authorization: 'Bearer t' } }, 'fields');
    const out = lines.join('');
    expect(out).not.toContain('s3cr3t-api-key-value');
    expect(out).not.toContain('Bearer t');
    expect(out).toContain('[redacted]');
  });
});

describe('logger secret fields', () => {
  it("redacts a secret field at any depth of a line, and in a child's bindings", () => {
    const { lines, stream } = capture();
    const log = createLogger('info', stream).child({ token: 'child-token-1', job: 'deliver' });
    log.info(
      {
        request: { headers: { 'x-qw-api-key': 'upstream-key-1', accept: 'application/json' } },
        subscriber: { webhook: { secret: 'whsec_nested-secret-1' } },
        smtp: [{ password: 'mail-password-1' }],
        placeId: '101010100',
      },
      'call',
    );
    const out = lines.join('');
    for (const secret of [
      'child-token-1',
      'upstream-key-1',
      'nested-secret-1',
      'mail-password-1',
    ]) {
      expect(out).not.toContain(secret);
    }
    const line = JSON.parse(out) as Record<string, unknown>;
    expect(line).toMatchObject({
      token: '[redacted]',
      job: 'deliver',
      request: { headers: { 'x-qw-api-key': '[redacted]', accept: 'application/json' } },
      subscriber: { webhook: { secret: '[redacted]' } },
      smtp: [{ password: '[redacted]' }],
      placeId: '101010100',
    });
  });
});

describe('logger output', () => {
  it('keeps error messages, causes and dates readable', () => {
    const { lines, stream } = capture();
    const log = createLogger('info', stream);
    const at = new Date('2026-07-01T08:00:00Z');
    log.error(
      { err: new Error('list call failed', { cause: new Error('socket hang up') }), at },
      'x',
    );
    log.warn({ failure: new TypeError('bad payload') }, 'y');
    interface Line {
      at?: string;
      err?: { message: string; stack: string; type: string };
      failure?: { message: string; type: string };
    }
    const [first, second] = lines.map((l) => JSON.parse(l) as Line);
    // pino's error serializer appends the causes' messages.
    expect(first!.err!.message).toBe('list call failed: socket hang up');
    expect(first!.err!.stack).toContain('list call failed');
    // Serialized once: a second pass over the plain object would name its type "Object".
    expect(first!.err!.type).toBe('Error');
    expect(first!.at).toBe('2026-07-01T08:00:00.000Z');
    expect(second!.failure!.message).toBe('bad payload');
    expect(second!.failure!.type).toBe('TypeError');
  });
});
