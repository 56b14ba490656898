import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { checkWebhookSecret } from '../../src/admin/seed-validate.js';
import { signWebhook, WebhookError } from '../../src/channels/webhook.js';

const secrets = fc
  .uint8Array({ minLength: 24, maxLength: 64 })
  .map((key) => `whsec_${Buffer.from(key).toString('base64')}`);
// Whole seconds: the signature carries the timestamp in seconds.
const times = fc.integer({ min: 0, max: 4_102_444_800 }).map((seconds) => new Date(seconds * 1000));

describe('signWebhook', () => {
  it('signs exactly as standardwebhooks does', () => {
    fc.assert(
      fc.property(
        secrets,
        fc.uuid(),
        times,
        fc.string({ unit: 'grapheme' }),
        (secret, id, at, body) => {
          const signature = signWebhook(secret, id, at, body);
          expect(signature).toBe(new Webhook(secret).sign(id, at, body));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('verifies with the library at the current time', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const body = JSON.stringify({ text: '暴雨橙色预警' });
    const signature = signWebhook(secret, 'msg_1', at, body);
    const verified = new Webhook(secret).verify(body, {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(at.getTime() / 1000),
      'webhook-signature': signature,
    });
    expect(verified).toEqual({ text: '暴雨橙色预警' });
  });

  it('signs with every secret the seed file accepts, unpadded base64 too', () => {
    fc.assert(
      fc.property(secrets, fc.uuid(), times, (secret, id, at) => {
        const unpadded = secret.replace(/=+$/, '');
        expect(checkWebhookSecret(unpadded)).toBeNull();
        expect(signWebhook(unpadded, id, at, '{}')).toBe(new Webhook(secret).sign(id, at, '{}'));
      }),
      { numRuns: 100 },
    );
  });

  it('accepts a key without the whsec_ prefix, as the library does', () => {
    const key = Buffer.alloc(24, 1).toString('base64');
    const at = new Date(1_700_000_000_000);
    expect(signWebhook(key, 'id', at, 'x')).toBe(signWebhook(`whsec_${key}`, 'id', at, 'x'));
  });

  it.each(['whsec_', 'whsec_not base64!', 'whsec_abc', 'whsec_QUJD=A=='])(
    'refuses %j permanently without quoting it',
    (secret) => {
      let caught: unknown;
      try {
        signWebhook(secret, 'id', new Date(), '{}');
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(WebhookError);
      expect(caught).toMatchObject({ kind: 'invalid-target', retryable: false });
      expect((caught as Error).message).toBe('webhook secret is not a valid whsec_ base64 key');
    },
  );
});
