import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventType } from '../../src/domain/detect.js';
import { tellAs, type StoryEvent, type ToldNotification } from '../../src/domain/told.js';

const told = (warningId: string, eventType: EventType, occurrence = 0): ToldNotification => ({
  warningId,
  eventType,
  occurrence,
});

const event = (type: EventType, warningId: string, chain: string[] = [], occurrence = 0) =>
  ({ type, warningId, chain, occurrence }) satisfies StoryEvent;

describe('tellAs: nobody hears the end of a story they were not told', () => {
  it('tells a new warning as new', () => {
    expect(tellAs(event('new', 'A'), [])).toBe('new');
  });

  it('tells an update as such to who knows an earlier warning of its story, as new to anyone else', () => {
    expect(tellAs(event('update', 'C', ['B', 'A']), [told('A', 'new')])).toBe('update');
    expect(tellAs(event('update', 'C', ['B', 'A']), [told('B', 'update')])).toBe('update');
    expect(tellAs(event('update', 'C', ['B', 'A']), [told('X', 'new')])).toBe('new');
  });

  it('tells an update nothing more to who has already heard that warning itself', () => {
    expect(tellAs(event('update', 'B', ['A']), [told('B', 'new')])).toBeNull();
  });

  it('tells a cancel or an end only to who knows the story', () => {
    for (const type of ['cancel', 'expired'] as const) {
      expect(tellAs(event(type, 'C', ['A']), [])).toBeNull();
      expect(tellAs(event(type, 'C', ['A']), [told('A', 'new')])).toBe(type);
    }
    expect(tellAs(event('expired', 'A'), [told('A', 'new')])).toBe('expired');
  });

  it('tells a warning back in force only to who was told that occurrence ended', () => {
    expect(tellAs(event('resumed', 'A', [], 1), [told('A', 'new')])).toBeNull();
    expect(tellAs(event('resumed', 'A', [], 1), [told('A', 'expired', 0)])).toBe('resumed');
    expect(tellAs(event('resumed', 'A', [], 2), [told('A', 'expired', 0)])).toBeNull();
  });

  it('never tells anything but a new to a subscriber told nothing of the story (property)', () => {
    const ids = fc.constantFrom('A', 'B', 'C', 'D');
    const types = fc.constantFrom<EventType>('new', 'update', 'cancel', 'expired', 'resumed');
    fc.assert(
      fc.property(
        types,
        ids,
        fc.uniqueArray(ids, { maxLength: 3 }),
        fc.array(fc.record({ warningId: ids, eventType: types, occurrence: fc.nat(2) })),
        (type, id, chain, history) => {
          const story = new Set([id, ...chain]);
          const as = tellAs(event(type, id, chain, 1), history);
          if (!history.some((t) => story.has(t.warningId))) {
            expect(as === null || as === 'new').toBe(true);
          }
          if (as === 'update') expect(history.some((t) => chain.includes(t.warningId))).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
