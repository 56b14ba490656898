import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collapseChains } from '../../src/domain/chains.js';
import type { EventType, Notification } from '../../src/domain/render.js';
import { LEVELS, levelRank, type Level } from '../../src/domain/warning.js';
import { sampleNotification, sampleWarning } from '../channels/fixtures.js';

let counter = 0;
function note(
  id: string,
  eventType: EventType,
  minute: number,
  options: { level?: Level; supersedes?: string[] } = {},
): Notification {
  counter++;
  return sampleNotification({
    deliveryId: `d${counter}`,
    eventType,
    occurredAt: new Date(Date.UTC(2026, 6, 1, 8, minute)),
    warning: sampleWarning({
      id,
      title: `warning ${id}`,
      level: options.level ?? '橙色',
      color: null,
      related: options.supersedes ?? [],
      status: eventType === 'cancel' ? 'cancel' : eventType === 'update' ? 'update' : 'active',
    }),
    supersedes: options.supersedes ?? [],
  });
}

const summary = (notifications: Notification[]) =>
  collapseChains(notifications).map((c) => ({
    latest: c.latest.warning.id,
    change: c.change,
    began: c.began,
    ids: c.notifications.map((n) => `${n.eventType}:${n.warning.id}`),
  }));

describe('collapseChains', () => {
  it('shows a warning and its update once, in the updated state', () => {
    expect(summary([note('A', 'new', 0), note('B', 'update', 5, { supersedes: ['A'] })])).toEqual([
      { latest: 'B', change: 'updated', began: true, ids: ['new:A', 'update:B'] },
    ]);
  });

  it('lists a warning that began and was cancelled or expired in one message as ended', () => {
    expect(summary([note('A', 'new', 0), note('C', 'cancel', 5, { supersedes: ['A'] })])).toEqual([
      { latest: 'C', change: 'ended', began: true, ids: ['new:A', 'cancel:C'] },
    ]);
    expect(summary([note('A', 'new', 0), note('A', 'expired', 5)])).toEqual([
      { latest: 'A', change: 'ended', began: true, ids: ['new:A', 'expired:A'] },
    ]);
  });

  it('says cancelled or ended for a chain that began in an earlier message', () => {
    expect(summary([note('C', 'cancel', 5, { supersedes: ['A'] })])[0]?.change).toBe('cancelled');
    expect(summary([note('A', 'expired', 5)])[0]?.change).toBe('ended');
    expect(summary([note('A', 'new', 5)])[0]?.change).toBe('new');
  });

  it('links a chain through several steps whatever order the notifications come in', () => {
    const chain = [
      note('C', 'cancel', 9, { supersedes: ['B'] }),
      note('A', 'new', 0),
      note('B', 'update', 4, { supersedes: ['A'] }),
    ];
    expect(summary(chain)).toEqual([
      { latest: 'C', change: 'ended', began: true, ids: ['new:A', 'update:B', 'cancel:C'] },
    ]);
  });

  it('orders the cancellation after the update detected in the same instant', () => {
    const sameCycle = [
      note('C', 'cancel', 0, { supersedes: ['B'] }),
      note('B', 'update', 0, { supersedes: ['A'] }),
    ];
    expect(summary(sameCycle)[0]).toMatchObject({ latest: 'C', change: 'cancelled' });
  });

  it('orders chains by level, then in force before over, then oldest first', () => {
    const chains = collapseChains([
      note('Y', 'new', 0, { level: '黄色' }),
      note('R-over', 'expired', 1, { level: '红色' }),
      note('R', 'new', 2, { level: '红色' }),
      note('O', 'new', 3, { level: '橙色' }),
      note('O2', 'new', 4, { level: '橙色' }),
      note('U', 'new', 5, { level: 'unknown' }),
    ]);
    expect(chains.map((c) => c.latest.warning.id)).toEqual(['R', 'R-over', 'O', 'O2', 'Y', 'U']);
  });

  it('ranks a chain by its latest level (a downgrade sorts lower)', () => {
    const chains = collapseChains([
      note('A', 'new', 0, { level: '红色' }),
      note('B', 'update', 5, { level: '蓝色', supersedes: ['A'] }),
      note('X', 'new', 1, { level: '黄色' }),
    ]);
    expect(chains.map((c) => [c.latest.warning.id, c.level])).toEqual([
      ['X', '黄色'],
      ['B', '蓝色'],
    ]);
  });
});

describe('collapseChains properties', () => {
  const IDS = ['A', 'B', 'C', 'D', 'E'];
  const notesArb = fc
    .uniqueArray(
      fc.record({
        id: fc.constantFrom(...IDS),
        eventType: fc.constantFrom<EventType>('new', 'update', 'cancel', 'expired'),
        minute: fc.integer({ min: 0, max: 59 }),
        level: fc.constantFrom<Level>(...LEVELS, 'unknown'),
        supersedes: fc.uniqueArray(fc.constantFrom(...IDS), { maxLength: 2 }),
      }),
      { minLength: 1, maxLength: 10, selector: (r) => `${r.id}:${r.eventType}` },
    )
    .map((records) =>
      records.map((r) =>
        note(r.id, r.eventType, r.minute, {
          level: r.level,
          supersedes: r.supersedes.filter((s) => s !== r.id),
        }),
      ),
    );

  it('puts every notification in exactly one chain, latest last, highest level first', () => {
    fc.assert(
      fc.property(notesArb, (notes) => {
        const chains = collapseChains(notes);
        const placed = chains.flatMap((c) => c.notifications);
        expect(placed).toHaveLength(notes.length);
        expect(new Set(placed)).toEqual(new Set(notes));
        for (const c of chains) {
          expect(c.latest).toBe(c.notifications[c.notifications.length - 1]);
          const times = c.notifications.map((n) => n.occurredAt.getTime());
          expect([...times].sort((a, b) => a - b)).toEqual(times);
          // A warning id and what it supersedes never end up in two chains.
          for (const other of chains) {
            if (other === c) continue;
            const ids = new Set(other.notifications.map((n) => n.warning.id));
            for (const n of c.notifications) {
              expect(ids.has(n.warning.id)).toBe(false);
              for (const s of n.supersedes) expect(ids.has(s)).toBe(false);
            }
          }
        }
        const ranks = chains.map((c) => levelRank(c.level));
        expect([...ranks].sort((a, b) => b - a)).toEqual(ranks);
      }),
      { numRuns: 300 },
    );
  });
});
