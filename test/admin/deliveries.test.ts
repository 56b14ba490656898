import { describe, expect, it } from 'vitest';
import { cutShort, isDeliveryId, isDeliveryStatus } from '../../src/ledger/list.js';
import { UsageError } from '../../src/cli/command.js';
import { formatDeliveries, parseSince } from '../../src/cli/deliveries.js';
import { localTime, terminalZone } from '../../src/cli/local-time.js';

describe('ledger listing helpers', () => {
  it('knows the five statuses and nothing else', () => {
    expect(['held', 'pending', 'sent', 'retrying', 'dead'].every(isDeliveryStatus)).toBe(true);
    expect(isDeliveryStatus('failed')).toBe(false);
    // 'open' is how a held message is stored, not a status an admin reads or asks for.
    expect(isDeliveryStatus('open')).toBe(false);
    expect(isDeliveryStatus('SENT')).toBe(false);
  });

  it('accepts only uuids as delivery ids', () => {
    expect(isDeliveryId('0b6c3c1e-6f0e-4c55-9a53-5d1f3f0c2a10')).toBe(true);
    expect(isDeliveryId('0B6C3C1E-6F0E-4C55-9A53-5D1F3F0C2A10')).toBe(true);
    expect(isDeliveryId('42')).toBe(false);
    expect(isDeliveryId("0b6c3c1e-6f0e-4c55-9a53-5d1f3f0c2a10' OR 1=1")).toBe(false);
  });

  it('cuts a long error to one line with an ellipsis', () => {
    expect(cutShort(null, 10)).toBe('');
    expect(cutShort('short', 10)).toBe('short');
    expect(cutShort('line one\n  line two', 40)).toBe('line one line two');
    expect(cutShort('abcdefghijklmnop', 10)).toBe('abcdefghi…');
    expect(cutShort('abcdefghijklmnop', 10)).toHaveLength(10);
  });

  it("reads --since as ISO 8601, in the terminal's zone unless an offset is given", () => {
    const shanghai = (text: string) => parseSince(text, 'Asia/Shanghai').toISOString();
    expect(shanghai('2026-07-01')).toBe('2026-06-30T16:00:00.000Z');
    expect(shanghai('2026-07-01T08:00')).toBe('2026-07-01T00:00:00.000Z');
    expect(shanghai('2026-11-28 15:00')).toBe('2026-11-28T07:00:00.000Z');
    expect(shanghai('2026-07-01 08:00:30')).toBe('2026-07-01T00:00:30.000Z');
    expect(shanghai('2026-07-01T08:00:00+08:00')).toBe('2026-07-01T00:00:00.000Z');
    expect(shanghai('2026-07-01T08:00:00-0500')).toBe('2026-07-01T13:00:00.000Z');
    expect(shanghai('2026-07-01T08:00:00.250Z')).toBe('2026-07-01T08:00:00.250Z');
    // A zone with summer time: its offset of that date.
    expect(parseSince('2026-07-01 08:00', 'Europe/Berlin').toISOString()).toBe(
      '2026-07-01T06:00:00.000Z',
    );
    expect(parseSince('2026-01-15 08:00', 'Europe/Berlin').toISOString()).toBe(
      '2026-01-15T07:00:00.000Z',
    );
    expect(parseSince('2026-07-01 08:00', 'UTC').toISOString()).toBe('2026-07-01T08:00:00.000Z');
    for (const bad of ['yesterday', '2026-13-01', '1751356800', '2026-07-01T25:00Z', '']) {
      expect(() => parseSince(bad, 'UTC'), bad).toThrow(UsageError);
    }
  });

  it('prints times to the second in the terminal zone, with the offset', () => {
    const at = new Date('2026-07-01T08:00:00.123Z');
    expect(localTime(at, 'Asia/Shanghai')).toBe('2026-07-01 16:00:00+08:00');
    expect(localTime(at, 'America/New_York')).toBe('2026-07-01 04:00:00-04:00');
    expect(localTime(at, 'UTC')).toBe('2026-07-01 08:00:00+00:00');
    expect(localTime(null, 'UTC')).toBe('');
  });

  it("reads the terminal's zone from TZ, and falls back to the process's for what ICU does not know", () => {
    expect(terminalZone('Asia/Shanghai')).toBe('Asia/Shanghai');
    expect(terminalZone(':Europe/Berlin')).toBe('Europe/Berlin');
    // The tests run with TZ=UTC: that is the process's zone here.
    expect(terminalZone(undefined)).toBe('UTC');
    expect(terminalZone('CST-8')).toBe('UTC');
  });

  it('shows an open row with its next attempt and a closed one without, each with its message', () => {
    const base = {
      createdAt: new Date('2026-07-01T08:00:00Z'),
      channel: 'webhook' as const,
      subscriberId: 's',
      subscriber: 'https://hooks.example.com/q',
      subscriberActive: true,
      placeId: '101210101',
      placeName: '杭州',
      eventType: 'new',
      warningId: 'w1',
      sentAt: null,
    };
    const table = formatDeliveries(
      [
        {
          ...base,
          id: 'a',
          robotKind: null,
          messageId: 'ma',
          hold: null,
          status: 'retrying',
          attempts: 2,
          nextAttemptAt: new Date('2026-07-01T08:06:00Z'),
          lastError: 'webhook endpoint answered 500',
        },
        {
          ...base,
          id: 'b',
          robotKind: null,
          messageId: 'mb',
          hold: 'cycle',
          status: 'dead',
          attempts: 1,
          nextAttemptAt: null,
          lastError: 'x'.repeat(100),
          subscriberActive: false,
        },
        {
          ...base,
          id: 'c',
          robotKind: null,
          messageId: 'mc',
          hold: 'quiet',
          status: 'held',
          attempts: 0,
          nextAttemptAt: new Date('2026-07-01T23:00:00Z'),
          lastError: null,
        },
      ],
      'UTC',
    );
    const [header, open, closed, held] = table.split('\n');
    expect(header).toMatch(/^id +message +created +status +attempts/);
    expect(open).toMatch(
      /^a +ma +2026-07-01 08:00:00\+00:00 +retrying +2 +webhook .* 杭州 +new +w1 +2026-07-01 08:06:00\+00:00 +webhook endpoint answered 500$/,
    );
    expect(closed).toMatch(/^b +mb +2026-07-01 08:00:00\+00:00 +dead +1 /);
    expect(closed).toContain('https://hooks.example.com/q (off)');
    expect(closed).toMatch(/ x{59}…$/);
    // A held message says why it waits, and when it is due.
    expect(held).toMatch(
      /^c +mc +2026-07-01 08:00:00\+00:00 +held \(quiet\) +0 +webhook .* 2026-07-01 23:00:00\+00:00 *$/,
    );
  });
});
