import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  signUnsubscribeToken,
  subscriberIdOfToken,
  unsubscribeUrl,
  verifyUnsubscribeToken,
} from '../../src/channels/unsubscribe-token.js';

const SECRET = 'test-unsubscribe-secret-0123456789abcdef';
const OTHER_SECRET = 'another-unsubscribe-secret-0123456789abcd';
const DUTY = { id: '6f1c2a9e-3b4d-4c5e-8f70-9a1b2c3d4e5f', email: 'duty@example.com' };
const NIGHT = { id: '0b7e8c1d-2a3f-4e5d-9c6b-7a8f9e0d1c2b', email: 'night@example.com' };

/** The token with one character of its `part` (0: id, 1: mac) replaced by another. */
function altered(token: string, part: 0 | 1, at: number): string {
  const parts = token.split('.') as [string, string];
  const chars = [...parts[part]];
  const i = at % chars.length;
  chars[i] = chars[i] === 'A' ? 'B' : 'A';
  parts[part] = chars.join('');
  return parts.join('.');
}

describe('unsubscribe tokens', () => {
  it('are URL-safe, name their subscriber and verify for exactly it', () => {
    const token = signUnsubscribeToken(SECRET, DUTY);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(token)).toBe(token);
    expect(subscriberIdOfToken(token)).toBe(DUTY.id);
    expect(verifyUnsubscribeToken(SECRET, token, DUTY)).toBe(true);
    // Deterministic: every email to one subscriber carries the same link.
    expect(signUnsubscribeToken(SECRET, DUTY)).toBe(token);
  });

  it('refuse another secret, another subscriber and another address', () => {
    const token = signUnsubscribeToken(SECRET, DUTY);
    expect(verifyUnsubscribeToken(OTHER_SECRET, token, DUTY)).toBe(false);
    expect(verifyUnsubscribeToken(SECRET, token, NIGHT)).toBe(false);
    // Same row id, address changed (or re-created with the id): the old link is void.
    expect(verifyUnsubscribeToken(SECRET, token, { ...DUTY, email: 'new@example.com' })).toBe(
      false,
    );
    // Another subscriber's MAC under this subscriber's id is a forgery, not a token.
    const [, nightMac] = signUnsubscribeToken(SECRET, NIGHT).split('.');
    const [dutyId] = token.split('.');
    expect(verifyUnsubscribeToken(SECRET, `${dutyId}.${nightMac}`, DUTY)).toBe(false);
  });

  it('refuse any altered character, in the id or in the MAC (property)', () => {
    const token = signUnsubscribeToken(SECRET, DUTY);
    fc.assert(
      fc.property(fc.constantFrom<0 | 1>(0, 1), fc.nat(), (part, at) => {
        const forged = altered(token, part, at);
        expect(forged).not.toBe(token);
        expect(verifyUnsubscribeToken(SECRET, forged, DUTY)).toBe(false);
      }),
    );
  });

  it('refuse anything that is not a token at all (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        expect(verifyUnsubscribeToken(SECRET, text, DUTY)).toBe(false);
      }),
    );
    const token = signUnsubscribeToken(SECRET, DUTY);
    for (const bad of ['', '.', token.replace('.', ''), `${token}=`, `${token}.x`, ` ${token}`]) {
      expect(verifyUnsubscribeToken(SECRET, bad, DUTY)).toBe(false);
    }
    // A truncated MAC is refused, not compared on its prefix.
    expect(verifyUnsubscribeToken(SECRET, token.slice(0, -1), DUTY)).toBe(false);
  });

  it('build the URL only with PUBLIC_URL, the secret and an email address', () => {
    const config = { publicUrl: 'https://alerts.example.com', unsubscribeSecret: SECRET };
    const url = unsubscribeUrl(config, DUTY);
    expect(url).toBe(
      `https://alerts.example.com/unsubscribe/${signUnsubscribeToken(SECRET, DUTY)}`,
    );
    expect(unsubscribeUrl({ ...config, publicUrl: undefined }, DUTY)).toBeUndefined();
    expect(unsubscribeUrl({ ...config, unsubscribeSecret: undefined }, DUTY)).toBeUndefined();
    expect(unsubscribeUrl(config, { id: DUTY.id, email: null })).toBeUndefined();
    // A base behind a path prefix keeps it.
    expect(unsubscribeUrl({ ...config, publicUrl: 'https://example.com/qwn' }, DUTY)).toMatch(
      /^https:\/\/example\.com\/qwn\/unsubscribe\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/,
    );
  });
});
