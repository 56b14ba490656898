import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Recent } from '../../src/channels/recent.js';

/** A `Recent` whose `make` records each key it is asked to make. */
function recording(limit: number): {
  recent: Recent<string>;
  made: string[];
  get: (k: string) => string;
} {
  const recent = new Recent<string>(limit);
  const made: string[] = [];
  const make = (k: string) => {
    made.push(k);
    return `value of ${k}`;
  };
  return { recent, made, get: (k) => recent.get(k, make) };
}

describe('Recent', () => {
  it('makes a key once while it is used within the limit', () => {
    const { made, get } = recording(2);
    expect(get('a')).toBe('value of a');
    expect(get('b')).toBe('value of b');
    expect(get('a')).toBe('value of a');
    expect(get('b')).toBe('value of b');
    expect(made).toEqual(['a', 'b']);
  });

  it('keeps a key used again while the newer generation filled, and forgets one that was not', () => {
    const { made, get } = recording(2);
    get('a');
    get('b');
    // The newer generation is full: 'c' starts a new one, 'a' and 'b' are the older.
    get('c');
    // Found in the older generation: moved to the newer, not made again.
    get('a');
    expect(made).toEqual(['a', 'b', 'c']);
    // The newer generation ('c', 'a') is full again: 'd' drops the older ('a', 'b') whole.
    get('d');
    get('a');
    get('b');
    expect(made).toEqual(['a', 'b', 'c', 'd', 'b']);
  });

  it('refuses a limit below one', () => {
    expect(() => new Recent(0)).toThrow(RangeError);
  });

  it('returns what make returns for the key, keeps at most twice the limit and remembers the last `limit` keys used', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 20 }).map(String), { maxLength: 200 }),
        (limit, keys) => {
          const { recent, made, get } = recording(limit);
          const used: string[] = [];
          for (const key of keys) {
            // Any of the last `limit` distinct keys used is kept: not made again.
            const lately = [...new Set([...used].reverse())].slice(0, limit);
            const before = made.length;
            expect(get(key)).toBe(`value of ${key}`);
            if (lately.includes(key)) expect(made.length).toBe(before);
            used.push(key);
            expect(recent.size).toBeLessThanOrEqual(2 * limit);
          }
        },
      ),
    );
  });
});
