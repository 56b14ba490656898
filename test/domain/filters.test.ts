import { describe, expect, it } from 'vitest';
import {
  ACCEPT_ALL,
  canonicalTypeCode,
  filterAccepts,
  parseFilterInput,
  type SubscriptionFilter,
} from '../../src/domain/filters.js';
import { warning } from './detect-fixtures.js';

function filter(overrides: Partial<SubscriptionFilter>): SubscriptionFilter {
  return { ...ACCEPT_ALL, ...overrides };
}

describe('filterAccepts', () => {
  it('accepts everything with no filter set', () => {
    expect(filterAccepts(ACCEPT_ALL, { type: 'expired', warning: warning('A') })).toBe(true);
  });

  it('lets through warnings at or above the minimum level only', () => {
    const atLeastOrange = filter({ minLevel: '橙色' });
    const at = (level: '黄色' | '橙色' | '红色') =>
      filterAccepts(atLeastOrange, { type: 'new', warning: warning('A', { level }) });
    expect(at('黄色')).toBe(false);
    expect(at('橙色')).toBe(true);
    expect(at('红色')).toBe(true);
  });

  it('lets a warning of unknown level through any minimum', () => {
    const unknown = warning('A', { level: 'unknown', color: null });
    expect(filterAccepts(filter({ minLevel: '红色' }), { type: 'new', warning: unknown })).toBe(
      true,
    );
    const greenUnknown = warning('A', { level: 'unknown', color: 'green' });
    expect(
      filterAccepts(filter({ minLevel: '红色' }), { type: 'new', warning: greenUnknown }),
    ).toBe(true);
  });

  it('reads the colour when the level was lost in normalization', () => {
    const blueByColour = warning('A', { level: 'unknown', color: 'blue' });
    expect(
      filterAccepts(filter({ minLevel: '黄色' }), { type: 'new', warning: blueByColour }),
    ).toBe(false);
  });

  it('matches types by name or by code, old-style codes included', () => {
    const rain = warning('A', { typeName: '暴雨', typeCode: '1003' });
    const oldRain = warning('B', { typeName: null, typeCode: '11B03' });
    const typhoonOnly = filter({ types: ['台风'] });
    const rainByName = filter({ types: ['台风', '暴雨'] });
    const rainByCode = filter({ types: ['1003'] });
    const rainByOldCode = filter({ types: ['11b03'] });
    expect(filterAccepts(typhoonOnly, { type: 'new', warning: rain })).toBe(false);
    expect(filterAccepts(rainByName, { type: 'new', warning: rain })).toBe(true);
    expect(filterAccepts(rainByCode, { type: 'new', warning: rain })).toBe(true);
    expect(filterAccepts(rainByCode, { type: 'new', warning: oldRain })).toBe(true);
    expect(filterAccepts(rainByOldCode, { type: 'new', warning: rain })).toBe(true);
    // A known name stands for its code, so it matches a record that carries only the code.
    expect(filterAccepts(rainByName, { type: 'new', warning: oldRain })).toBe(true);
  });

  it('matches codes nobody has listed before, and English names without case', () => {
    const novel = warning('A', { typeName: 'Rainstorm', typeCode: '9999' });
    expect(filterAccepts(filter({ types: ['9999'] }), { type: 'new', warning: novel })).toBe(true);
    expect(filterAccepts(filter({ types: ['rainstorm'] }), { type: 'new', warning: novel })).toBe(
      true,
    );
  });

  it('rejects a typed filter when the warning carries neither name nor code', () => {
    const bare = warning('A', { typeName: null, typeCode: null });
    expect(filterAccepts(filter({ types: ['暴雨'] }), { type: 'new', warning: bare })).toBe(false);
  });

  it('lets through only the listed event kinds', () => {
    const onlyNew = filter({ events: ['new'] });
    expect(filterAccepts(onlyNew, { type: 'new', warning: warning('A') })).toBe(true);
    expect(filterAccepts(onlyNew, { type: 'cancel', warning: warning('A') })).toBe(false);
  });
});

describe('canonicalTypeCode', () => {
  it('maps old 11Bxx codes onto today’s 10xx and leaves anything else as written', () => {
    expect(canonicalTypeCode('11B01')).toBe('1001');
    expect(canonicalTypeCode(' 11b22 ')).toBe('1022');
    expect(canonicalTypeCode('1003')).toBe('1003');
    expect(canonicalTypeCode('2001')).toBe('2001');
  });
});

describe('parseFilterInput', () => {
  it('treats absent fields as no filter', () => {
    expect(parseFilterInput({})).toEqual({ ok: true, filter: ACCEPT_ALL });
    expect(parseFilterInput({ minLevel: null, types: null, events: null })).toEqual({
      ok: true,
      filter: ACCEPT_ALL,
    });
  });

  it('accepts Chinese level names and English colours', () => {
    for (const [input, level] of [
      ['黄色', '黄色'],
      ['Orange', '橙色'],
      ['red', '红色'],
      ['白色', '白色'],
    ] as const) {
      const parsed = parseFilterInput({ minLevel: input });
      expect(parsed).toEqual({ ok: true, filter: { ...ACCEPT_ALL, minLevel: level } });
    }
  });

  it('keeps types as codes, one each, and puts events in their usual order', () => {
    const parsed = parseFilterInput({
      types: [' 暴雨', '暴雨', '11B03', 'Typhoon', 'typhoon', ' tyPhoon ', '台风'],
      events: ['expired', 'new', 'new'],
    });
    expect(parsed).toEqual({
      ok: true,
      filter: { minLevel: null, types: ['1003', '1001'], events: ['new', 'expired'] },
    });
  });

  it('refuses a type that is neither a code nor a known name, naming it and the list (README, promises)', () => {
    for (const bad of ['台风风', 'Typhooon', 'rain storm!', 'A1']) {
      const parsed = parseFilterInput({ types: ['暴雨', bad] });
      expect(parsed.ok).toBe(false);
      if (parsed.ok) continue;
      expect(parsed.problems).toEqual([
        {
          field: 'types[1]',
          message: expect.stringContaining(
            `${JSON.stringify(bad)} is not a QWeather warning type`,
          ) as unknown,
        },
      ]);
      expect(parsed.problems[0]!.message).toContain('docs/warning-types.md');
    }
    // A four-digit code the table does not know yet is QWeather's to add: accepted as given.
    expect(parseFilterInput({ types: ['1099'] })).toMatchObject({
      ok: true,
      filter: { types: ['1099'] },
    });
  });

  it('names each bad field and the rule it broke', () => {
    const parsed = parseFilterInput({ minLevel: 'purple', types: ['暴雨', '', 1003], events: [] });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems.map((problem) => problem.field)).toEqual([
      'minLevel',
      'types[1]',
      'types[2]',
      'events',
    ]);
    expect(parsed.problems[0]?.message).toMatch(/must be one of 白色, 蓝色, 黄色, 橙色, 红色/);
    expect(parsed.problems[0]?.message).toContain('"purple"');
    expect(parsed.problems[2]?.message).toMatch(/written as a string/);
    expect(parsed.problems[3]?.message).toMatch(/non-empty array/);
  });

  it('rejects empty type lists, non-arrays and unknown event kinds', () => {
    const parsed = parseFilterInput({ minLevel: 3, types: [], events: ['new', 'ended'] });
    expect(parsed).toEqual({
      ok: false,
      problems: [
        { field: 'minLevel', message: expect.stringMatching(/must be one of .*got 3$/) as string },
        {
          field: 'types',
          message: expect.stringMatching(/non-empty array.*an empty array$/) as string,
        },
        {
          field: 'events[1]',
          message: expect.stringMatching(/new, update, cancel, expired.*"ended"/) as string,
        },
      ],
    });
    const notArrays = parseFilterInput({ types: '暴雨', events: 'new' });
    expect(notArrays.ok ? [] : notArrays.problems.map((p) => p.field)).toEqual(['types', 'events']);
  });
});

describe('parseLevel', () => {
  it('never answers with an inherited member for a name that is not a level', async () => {
    const { parseLevel } = await import('../../src/domain/warning.js');
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(parseLevel(name)).toBeUndefined();
    }
    expect(parseLevel(' Orange ')).toBe('橙色');
  });
});
