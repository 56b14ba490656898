import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  expiryOwedToSubscriber,
  isPlaceInChina,
  parsePointKey,
  pointAt,
  roundCoordinate,
  subscriptionPointKeys,
} from '../../src/domain/points.js';
import { roundCoordinate as clientRounding } from '../../src/qweather/params.js';

describe('pointAt', () => {
  it('rounds to two decimals, latitude first in the key', () => {
    expect(pointAt(30.2729, 120.1474)).toEqual({ lat: 30.27, lon: 120.15, key: '30.27,120.15' });
    expect(pointAt(-33.8688, 151.2093)?.key).toBe('-33.87,151.21');
    expect(pointAt(48.8566, 2.3522)?.key).toBe('48.86,2.35');
  });

  it('writes no negative zero', () => {
    expect(pointAt(-0.001, -0.004)?.key).toBe('0,0');
  });

  it('refuses what is not a coordinate', () => {
    expect(pointAt(91, 0)).toBeNull();
    expect(pointAt(0, 180.5)).toBeNull();
    expect(pointAt(Number.NaN, 0)).toBeNull();
  });

  it('points a few hundred metres apart share one point', () => {
    expect(pointAt(30.2712, 120.1468)?.key).toBe(pointAt(30.2731, 120.1496)?.key);
  });

  it('asks the upstream about exactly the point it stores', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -90, max: 90, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        (lat, lon) => {
          const point = pointAt(lat, lon)!;
          expect(String(point.lat)).toBe(clientRounding(lat).replace(/^-0$/, '0'));
          expect(String(point.lon)).toBe(clientRounding(lon).replace(/^-0$/, '0'));
          expect(parsePointKey(point.key)).toEqual(point);
          expect(roundCoordinate(point.lat)).toBe(point.lat);
        },
      ),
    );
  });
});

describe('parsePointKey', () => {
  it('reads only keys written by pointAt', () => {
    expect(parsePointKey('30.27,120.15')).toEqual({ lat: 30.27, lon: 120.15, key: '30.27,120.15' });
    for (const bad of ['30.270,120.15', '120.15,30.27,1', '30.27, 120.15', '91,0', 'x', '']) {
      expect(parsePointKey(bad)).toBeNull();
    }
  });
});

describe('subscriptionPointKeys', () => {
  it('uses the stored points, else the place centre, else nothing', () => {
    expect(subscriptionPointKeys({ lat: 30.246, lon: 120.2108 }, null)).toEqual(['30.25,120.21']);
    expect(
      subscriptionPointKeys({ lat: 30.246, lon: 120.2108 }, ['30.27,120.15', '30.2,120.1']),
    ).toEqual(['30.2,120.1', '30.27,120.15']);
    expect(subscriptionPointKeys({ lat: null, lon: null }, null)).toEqual([]);
    expect(subscriptionPointKeys(null, ['garbage'])).toEqual([]);
  });
});

describe('expiryOwedToSubscriber', () => {
  it('is owed when the alert is over or unknown at every other point', () => {
    expect(expiryOwedToSubscriber([])).toBe(true);
    expect(expiryOwedToSubscriber(['expired', 'expired'])).toBe(true);
  });

  it('waits while the alert is still open at another point', () => {
    expect(expiryOwedToSubscriber(['expired', 'open'])).toBe(false);
  });

  it('is never owed when an update or cancel closed the alert at another point', () => {
    expect(expiryOwedToSubscriber(['superseded'])).toBe(false);
    expect(expiryOwedToSubscriber(['cancelled', 'expired'])).toBe(false);
  });

  it('tells one end, when the last place ends, whatever the order places end in (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 6 })
          .chain((places) =>
            fc.tuple(
              fc.constant(places),
              fc.shuffledSubarray([...Array(places).keys()], { minLength: places }),
            ),
          ),
        ([places, endingOrder]) => {
          const states = Array.from({ length: places }, (): 'open' | 'expired' => 'open');
          const told: number[] = [];
          endingOrder.forEach((place, step) => {
            states[place] = 'expired';
            const others = states.filter((_, i) => i !== place);
            if (expiryOwedToSubscriber(others)) told.push(step);
          });
          // Exactly one all-clear, and at the step where no place still had it open.
          expect(told).toEqual([places - 1]);
        },
      ),
    );
  });
});

describe('V1_POINTS=place', () => {
  const hangzhou = { place_id: '101210101', country: '中国', lat: 30.246, lon: 120.2108 };
  const tokyo = { place_id: '1850144', country: 'Japan', lat: 35.6895, lon: 139.6917 };

  it("polls a subscription in China at its place's centre, whatever exact points it stored", () => {
    const exact = ['30.27,120.16', '30.2,120.1'];
    expect(subscriptionPointKeys(hangzhou, exact, 'exact')).toEqual([...exact].sort());
    expect(subscriptionPointKeys(hangzhou, exact, 'place')).toEqual(['30.25,120.21']);
    expect(subscriptionPointKeys(hangzhou, null, 'place')).toEqual(['30.25,120.21']);
    // Told by the Location ID when the country is not stored.
    expect(subscriptionPointKeys({ ...hangzhou, country: null }, exact, 'place')).toEqual([
      '30.25,120.21',
    ]);
  });

  it('keeps exact points abroad, and stored points when the place has no coordinates', () => {
    expect(subscriptionPointKeys(tokyo, ['35.7,139.7'], 'place')).toEqual(['35.7,139.7']);
    expect(
      subscriptionPointKeys({ ...hangzhou, lat: null, lon: null }, ['30.27,120.16'], 'place'),
    ).toEqual(['30.27,120.16']);
    expect(isPlaceInChina(tokyo)).toBe(false);
    expect(isPlaceInChina({ lat: 0, lon: 0, place_id: '101010100' })).toBe(true);
  });
});
