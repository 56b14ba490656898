/**
 * Unsubscribe links (docs/subscribers.md, RFC 8058). The link alone must identify the subscription and
 * be impossible to forge: a mailbox provider POSTs to it with no cookie and no other context.
 *
 * A token is `<subscriber id>.<mac>`, both base64url (URL-safe, no padding): the id's 16 bytes,
 * and HMAC-SHA256 under UNSUBSCRIBE_SECRET over a purpose label, the id and the email address.
 * A re-created address gets a new id, so its old links do not carry over; binding the address
 * as well means a link also stops working when a row's address is changed by hand.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Changing the label (or the secret) invalidates every link already sent. */
const PURPOSE = 'qwn unsubscribe v1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** 16 id bytes and 32 MAC bytes in unpadded base64url. */
const TOKEN = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export interface UnsubscribeIdentity {
  readonly id: string;
  readonly email: string;
}

function mac(secret: string, subscriber: UnsubscribeIdentity): Buffer {
  // NUL separators: no id/address pair can be written as another.
  return createHmac('sha256', secret)
    .update(`${PURPOSE}\0${subscriber.id.toLowerCase()}\0${subscriber.email}`)
    .digest();
}

export function signUnsubscribeToken(secret: string, subscriber: UnsubscribeIdentity): string {
  if (!UUID.test(subscriber.id)) throw new Error('a subscriber id is a UUID');
  const id = Buffer.from(subscriber.id.replace(/-/g, ''), 'hex').toString('base64url');
  return `${id}.${mac(secret, subscriber).toString('base64url')}`;
}

/**
 * The subscriber id a token claims, or undefined when it is not a token at all. The claim is
 * worth nothing until `verifyUnsubscribeToken` has checked it against the subscriber's row.
 */
export function subscriberIdOfToken(token: string): string | undefined {
  const match = TOKEN.exec(token);
  if (!match) return undefined;
  const bytes = Buffer.from(match[1]!, 'base64url');
  // A non-canonical spelling (other trailing bits) would be a second name for one token.
  if (bytes.length !== 16 || bytes.toString('base64url') !== match[1]) return undefined;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether the token was signed with this secret for exactly this subscriber and address. */
export function verifyUnsubscribeToken(
  secret: string,
  token: string,
  subscriber: UnsubscribeIdentity,
): boolean {
  const match = TOKEN.exec(token);
  if (!match || subscriberIdOfToken(token) !== subscriber.id.toLowerCase()) return false;
  const given = Buffer.from(match[2]!, 'base64url');
  if (given.toString('base64url') !== match[2]) return false;
  const expected = mac(secret, subscriber);
  // Constant time: how much of a guess is right must not show in the answer's timing.
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The subscriber's one-click unsubscribe URL, or undefined when the deployment has none
 * (PUBLIC_URL or UNSUBSCRIBE_SECRET unset) or the subscriber has no email address.
 */
export function unsubscribeUrl(
  config: {
    readonly publicUrl: string | undefined;
    readonly unsubscribeSecret: string | undefined;
  },
  subscriber: { readonly id: string; readonly email: string | null },
): string | undefined {
  if (!config.publicUrl || !config.unsubscribeSecret || subscriber.email === null) return undefined;
  const token = signUnsubscribeToken(config.unsubscribeSecret, {
    id: subscriber.id,
    email: subscriber.email,
  });
  return `${config.publicUrl}/unsubscribe/${token}`;
}
