import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAIL_POOL_CONNECTIONS } from '../../src/channels/email.js';
import { emailSendShare } from '../../src/channels/registry.js';

describe('emailSendShare', () => {
  it('gives email the mail pool, and never every slot of a process that has two or more', () => {
    expect(emailSendShare(32)).toBe(MAIL_POOL_CONNECTIONS);
    expect(emailSendShare(4)).toBe(3);
    expect(emailSendShare(2)).toBe(1);
    expect(emailSendShare(1)).toBe(1);
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 1000 }), (slots) => {
        const share = emailSendShare(slots);
        expect(share).toBeGreaterThanOrEqual(1);
        expect(share).toBeLessThanOrEqual(MAIL_POOL_CONNECTIONS);
        expect(share).toBeLessThan(slots);
      }),
    );
  });
});
