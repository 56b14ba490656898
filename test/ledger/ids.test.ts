import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ledgerId, ledgerIds } from '../../src/ledger/ids.js';

/** The milliseconds an id carries in its first 48 bits. */
const timeOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

const instants = fc.date({
  min: new Date(0),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
});

describe('ledger ids', () => {
  it('are UUIDv7 carrying the writer’s millisecond', () => {
    fc.assert(
      fc.property(instants, fc.integer({ min: 1, max: 20 }), (now, count) => {
        for (const id of [ledgerId(now), ...ledgerIds(now, count)]) {
          expect(z.string().uuid().safeParse(id).success).toBe(true);
          expect(id[14]).toBe('7');
          expect('89ab').toContain(id[19]);
          expect(timeOf(id)).toBe(now.getTime());
        }
      }),
    );
  });

  it('sort as their times do, whatever their random digits', () => {
    fc.assert(
      fc.property(instants, instants, (a, b) => {
        fc.pre(a.getTime() !== b.getTime());
        const [early, late] = a < b ? [a, b] : [b, a];
        // Postgres orders uuids bytewise, as lowercase hex strings compare.
        expect(ledgerId(early) < ledgerId(late)).toBe(true);
      }),
    );
  });

  it('differ within one millisecond', () => {
    const now = new Date('2026-07-01T08:00:00Z');
    const ids = ledgerIds(now, 100_000);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuse a time they cannot hold', () => {
    expect(() => ledgerId(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => ledgerId(new Date(-1))).toThrow(RangeError);
  });
});
