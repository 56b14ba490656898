import { createHmac } from 'node:crypto';

/**
 * Robot signatures (docs/messages.md). The two vendors use the same string to sign and opposite
 * roles for it: DingTalk keys the HMAC with the secret and signs the string; Feishu keys the
 * HMAC with the string and signs nothing.
 */

/** DingTalk: base64(HMAC-SHA256(key = secret, message = `${timestampMs}\n${secret}`)). */
export function dingtalkSign(secret: string, timestampMs: number): string {
  return createHmac('sha256', secret).update(`${timestampMs}\n${secret}`).digest('base64');
}

/** The DingTalk URL with `timestamp` (ms) and the URL-encoded `sign` appended. */
export function dingtalkSignedUrl(url: URL, secret: string, timestampMs: number): URL {
  const signed = new URL(url.href);
  // URLSearchParams percent-encodes + / = as the documented urlencode does.
  signed.searchParams.set('timestamp', String(timestampMs));
  signed.searchParams.set('sign', dingtalkSign(secret, timestampMs));
  return signed;
}

/** Feishu / Lark: base64(HMAC-SHA256(key = `${timestampSeconds}\n${secret}`, message = "")). */
export function feishuSign(secret: string, timestampSeconds: number): string {
  return createHmac('sha256', `${timestampSeconds}\n${secret}`).update('').digest('base64');
}
