/**
 * Standard Webhooks secrets: `whsec_` and a base64 key. One reading of the key for the seed
 * file's validation and for signing, so a secret the seed accepts is one the sender can use.
 */

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
export const SECRET_MIN_BYTES = 24;
export const SECRET_MAX_BYTES = 64;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The key that base64 text (what follows `whsec_`) encodes. Padding is optional, as the
 * Standard Webhooks libraries read it. Node's decoder skips what it cannot read, so a round
 * trip proves the text was real base64.
 */
export function decodeWebhookKey(
  encoded: string,
): { key: Buffer } | { problem: 'not-base64' | 'invalid-base64' } {
  if (!BASE64.test(encoded)) return { problem: 'not-base64' };
  const key = Buffer.from(encoded, 'base64');
  if (key.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, '')) {
    return { problem: 'invalid-base64' };
  }
  return { key };
}
