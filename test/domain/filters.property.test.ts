import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType } from '../../src/domain/detect.js';
import {
  ACCEPT_ALL,
  acceptsEventType,
  acceptsLevel,
  acceptsType,
  filterAccepts,
  type SubscriptionFilter,
} from '../../src/domain/filters.js';
import { LEVELS, levelRank, type KnownLevel, type Level } from '../../src/domain/warning.js';
import { warning } from './detect-fixtures.js';

// fast-check prints the seed and path of a failing run; replay with fc.assert(p, { seed, path }).
const RUNS = 500;
const TYPE_NAMES = ['暴雨', '台风', '大风', 'Rainstorm', '高温'];
const TYPE_CODES = ['1003', '1001', '1006', '11B03', '11B09', '9999'];

const levelArb: fc.Arbitrary<KnownLevel> = fc.constantFrom(...LEVELS);
const eventTypeArb: fc.Arbitrary<EventType> = fc.constantFrom(...EVENT_TYPES);

const eventArb = fc.record({
  type: eventTypeArb,
  warning: fc
    .record({
      level: fc.constantFrom<Level>(...LEVELS, 'unknown'),
      color: fc.constantFrom(null, 'white', 'blue', 'yellow', 'orange', 'red', 'green', 'black'),
      typeName: fc.option(fc.constantFrom(...TYPE_NAMES), { nil: null }),
      typeCode: fc.option(fc.constantFrom(...TYPE_CODES), { nil: null }),
    })
    .map((fields) => warning('A', fields)),
});

const filterArb: fc.Arbitrary<SubscriptionFilter> = fc.record({
  minLevel: fc.option(levelArb, { nil: null }),
  types: fc.option(
    fc.uniqueArray(fc.constantFrom(...TYPE_NAMES, ...TYPE_CODES), { minLength: 1 }),
    {
      nil: null,
    },
  ),
  events: fc.option(fc.uniqueArray(eventTypeArb, { minLength: 1 }), { nil: null }),
});

describe('filterAccepts over random filters and events', () => {
  it('never lets more events through when the minimum level rises', () => {
    fc.assert(
      fc.property(filterArb, levelArb, levelArb, eventArb, (base, a, b, event) => {
        const [lower, higher] = levelRank(a) <= levelRank(b) ? [a, b] : [b, a];
        const passesHigher = filterAccepts({ ...base, minLevel: higher }, event);
        const passesLower = filterAccepts({ ...base, minLevel: lower }, event);
        const passesAnyLevel = filterAccepts({ ...base, minLevel: null }, event);
        expect(!passesHigher || passesLower).toBe(true);
        expect(!passesLower || passesAnyLevel).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('accepts every event when no filter is set', () => {
    fc.assert(
      fc.property(eventArb, (event) => {
        expect(filterAccepts(ACCEPT_ALL, event)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('is exactly the conjunction of its three independent conditions', () => {
    fc.assert(
      fc.property(filterArb, eventArb, (filter, event) => {
        const onlyLevel = filterAccepts({ ...ACCEPT_ALL, minLevel: filter.minLevel }, event);
        const onlyTypes = filterAccepts({ ...ACCEPT_ALL, types: filter.types }, event);
        const onlyEvents = filterAccepts({ ...ACCEPT_ALL, events: filter.events }, event);
        expect(onlyLevel).toBe(acceptsLevel(filter, event.warning));
        expect(onlyTypes).toBe(acceptsType(filter, event.warning));
        expect(onlyEvents).toBe(acceptsEventType(filter, event.type));
        expect(filterAccepts(filter, event)).toBe(onlyLevel && onlyTypes && onlyEvents);
      }),
      { numRuns: RUNS },
    );
  });
});
