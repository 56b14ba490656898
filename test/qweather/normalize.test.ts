import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LEVELS } from '../../src/domain/warning.js';
import {
  levelFrom,
  normalizeStatus,
  normalizeTime,
  parsePlace,
  parseV1Alert,
  parseV7Warning,
  splitType,
} from '../../src/qweather/normalize.js';
import {
  cityLookupBody,
  poiBody,
  topCitiesBody,
  v1Alert,
  v7NewWarning,
  v7OldWarning,
  v7SampleWarning,
} from './fixtures.js';

describe('places', () => {
  it('turns the string-valued sample into typed fields', () => {
    expect(parsePlace(cityLookupBody.location[0])).toEqual({
      id: '101210101',
      name: '杭州',
      lat: 30.28746,
      lon: 120.15358,
      adm1: '浙江省',
      adm2: '杭州',
      country: '中国',
      tz: 'Asia/Shanghai',
      utcOffset: '+08:00',
      isDst: false,
      type: 'city',
      rank: 11,
      fxLink: 'https://www.qweather.com/weather/hangzhou-101210101.html',
    });
  });

  it('reads the country from cnty and accepts numbers sent as numbers', () => {
    const [beijing, newYork] = topCitiesBody.topCityList.map(parsePlace);
    expect(beijing?.country).toBe('中国');
    expect(newYork).toMatchObject({
      lat: 40.71427,
      lon: -74.00597,
      isDst: true,
      rank: 15,
      country: 'United States of America',
    });
  });

  it('keeps a POI with its category', () => {
    expect(parsePlace(poiBody.poi[0])).toMatchObject({ id: '10121010101A', type: 'scenic' });
  });

  it('leaves missing optional fields empty and a missing rank null', () => {
    expect(parsePlace({ id: 'x1', name: 'Somewhere', lat: '1.5', lon: '2.5' })).toEqual({
      id: 'x1',
      name: 'Somewhere',
      lat: 1.5,
      lon: 2.5,
      adm1: '',
      adm2: '',
      country: '',
      tz: '',
      utcOffset: '',
      isDst: false,
      type: '',
      rank: null,
      fxLink: '',
    });
  });

  it('rejects a record without coordinates', () => {
    expect(() => parsePlace({ id: 'x1', name: 'Somewhere', lat: 'north' })).toThrow();
  });
});

describe('v7 warnings', () => {
  it('normalizes the spec sample: type name in type, localized status, missing fields', () => {
    const w = parseV7Warning(v7SampleWarning);
    expect(w).toMatchObject({
      id: '10101010020230612080000000',
      source: 'v7',
      title: '北京市气象台发布高温黄色预警',
      sender: null,
      pubTime: '2023-06-12T08:00+08:00',
      startTime: null,
      // Documented format without an offset takes the pubTime's offset.
      endTime: '2023-06-13T08:00+08:00',
      status: 'active',
      level: '黄色',
      typeCode: null,
      typeName: '高温',
      related: [],
      instruction: null,
      severity: null,
      color: null,
    });
    expect(w.raw).toBe(v7SampleWarning);
  });

  it('normalizes an older record with a level and a type code', () => {
    expect(parseV7Warning(v7OldWarning)).toMatchObject({
      status: 'update',
      level: '橙色',
      typeCode: '1003',
      typeName: '暴雨',
      sender: '杭州市气象台',
      related: ['10121010120230712060000001'],
      startTime: '2023-07-12T09:00+08:00',
    });
  });

  it('takes the level from severityColor when level is empty', () => {
    expect(parseV7Warning(v7NewWarning)).toMatchObject({
      level: '蓝色',
      severity: 'minor',
      color: 'blue',
      related: [],
    });
  });

  it.each([
    ['White', '白色'],
    ['Blue', '蓝色'],
    ['Yellow', '黄色'],
    ['Orange', '橙色'],
    ['Red', '红色'],
    ['Green', 'unknown'],
    ['Black', 'unknown'],
    [null, 'unknown'],
  ])('maps severityColor %s to %s', (color, level) => {
    expect(parseV7Warning({ ...v7NewWarning, severityColor: color }).level).toBe(level);
  });

  it('lets a filled level win over the colour', () => {
    expect(levelFrom('红色', 'Blue')).toBe('红色');
    expect(levelFrom('', 'Black')).toBe('unknown');
    // Inherited object members are not levels.
    expect(levelFrom('__proto__', 'constructor')).toBe('unknown');
  });

  it('uses +08:00 for offset-less times when pubTime has no offset either', () => {
    const w = parseV7Warning({ id: 'a1', pubTime: '', startTime: '2025-08-01T12:00' });
    expect(w.pubTime).toBeNull();
    expect(w.startTime).toBe('2025-08-01T12:00+08:00');
  });

  it('accepts records with every optional field missing', () => {
    expect(parseV7Warning({ id: 42 })).toMatchObject({
      id: '42',
      title: '',
      text: '',
      status: 'active',
      level: 'unknown',
      typeCode: null,
      typeName: null,
      related: [],
    });
  });

  it('rejects a record without an id', () => {
    expect(() => parseV7Warning({ title: 'no id' })).toThrow();
  });
});

describe('status text', () => {
  it.each([
    ['预警中', 'active'],
    ['发布', 'active'],
    ['生效', 'active'],
    ['Active', 'active'],
    ['', 'active'],
    [undefined, 'active'],
    ['更新', 'update'],
    ['Update', 'update'],
    ['取消', 'cancel'],
    ['解除', 'cancel'],
    ['cancel', 'cancel'],
  ])('%s → %s', (text, status) => {
    expect(normalizeStatus(text)).toBe(status);
  });
});

describe('type', () => {
  it('tells codes from names', () => {
    expect(splitType('1003', '暴雨')).toEqual({ typeCode: '1003', typeName: '暴雨' });
    expect(splitType('11B03', undefined)).toEqual({ typeCode: '11B03', typeName: null });
    expect(splitType('暴雨', undefined)).toEqual({ typeCode: null, typeName: '暴雨' });
    expect(splitType('Rainstorm', '')).toEqual({ typeCode: null, typeName: 'Rainstorm' });
  });
});

describe('times', () => {
  it('keeps ISO times with an offset and normalizes their form', () => {
    expect(normalizeTime('2025-08-01T12:00+08:00')).toBe('2025-08-01T12:00+08:00');
    expect(normalizeTime('2025-08-01T12:00:30Z')).toBe('2025-08-01T12:00:30Z');
    expect(normalizeTime('2025-08-01 12:00+0800')).toBe('2025-08-01T12:00+08:00');
  });

  it('adds the fallback offset to times without one', () => {
    expect(normalizeTime('2025-08-01T12:00', '+05:30')).toBe('2025-08-01T12:00+05:30');
  });

  it('turns empty and unreadable values into null', () => {
    expect(normalizeTime('')).toBeNull();
    expect(normalizeTime('   ')).toBeNull();
    expect(normalizeTime(undefined)).toBeNull();
    expect(normalizeTime('soon')).toBeNull();
  });
});

describe('v1 alerts', () => {
  it('normalizes the facts-note body', () => {
    const w = parseV1Alert(v1Alert);
    expect(w).toMatchObject({
      id: 'fe6ff12e7ae8cc7a3e1f01c5eea2f5d5',
      source: 'v1',
      title: '上海中心气象台发布大风蓝色预警',
      sender: '上海中心气象台',
      pubTime: '2025-10-24T11:19+08:00',
      startTime: '2025-10-24T11:19+08:00',
      endTime: '2025-10-25T11:19+08:00',
      status: 'update',
      level: '蓝色',
      severity: 'minor',
      color: 'blue',
      typeCode: '1006',
      typeName: '大风',
      text: '受冷空气影响，预计本市将出现6级以上大风。',
      related: ['a61b6a2ea7df1a8c41e5d1c6d8a8b8c1'],
      instruction: '注意防风。',
    });
  });

  it('accepts expiredTime for expireTime', () => {
    const { expireTime: _drop, ...rest } = v1Alert;
    const w = parseV1Alert({ ...rest, expiredTime: '2025-10-26T00:00+08:00' });
    expect(w.endTime).toBe('2025-10-26T00:00+08:00');
  });

  it.each([
    [null, []],
    [[], []],
    [
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ],
  ])('supersedes %j → related %j', (supersedes, related) => {
    const w = parseV1Alert({ ...v1Alert, messageType: { code: 'update', supersedes } });
    expect(w.related).toEqual(related);
  });

  it.each([
    ['alert', 'active'],
    ['update', 'update'],
    ['cancel', 'cancel'],
    ['something-new', 'active'],
  ])('messageType %s → status %s', (code, status) => {
    expect(parseV1Alert({ ...v1Alert, messageType: { code } }).status).toBe(status);
  });

  it('reads offset-less v1 times as UTC, the API default', () => {
    const w = parseV1Alert({ id: 'z', issuedTime: '2025-10-24T03:19' });
    expect(w.pubTime).toBe('2025-10-24T03:19+00:00');
    expect(w).toMatchObject({ status: 'active', level: 'unknown', related: [] });
  });
});

describe('normalization never throws and always yields a valid level', () => {
  const validLevels: readonly string[] = [...LEVELS, 'unknown'];
  const maybeText = fc.option(
    fc.oneof(fc.string(), fc.constantFrom('', '红色', 'Blue', 'Green', '__proto__', 'toString')),
    {
      nil: undefined,
    },
  );
  const maybeTime = fc.option(
    fc.oneof(fc.string(), fc.constantFrom('', '2025-08-01T12:00', '2025-08-01T12:00+08:00')),
    { nil: undefined },
  );

  it('for v7 records with arbitrary optional fields missing', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            id: fc.stringMatching(/^[0-9]{1,26}$/),
            sender: maybeText,
            pubTime: maybeTime,
            title: maybeText,
            startTime: maybeTime,
            endTime: maybeTime,
            status: fc.option(fc.constantFrom('预警中', '更新', '取消', 'active', '', 'x'), {
              nil: undefined,
            }),
            level: maybeText,
            severity: maybeText,
            severityColor: fc.option(
              fc.constantFrom('White', 'Blue', 'Green', 'Yellow', 'Orange', 'Red', 'Black'),
              { nil: null },
            ),
            type: maybeText,
            typeName: maybeText,
            text: maybeText,
            related: fc.option(fc.oneof(fc.string(), fc.array(fc.string())), { nil: null }),
          },
          { requiredKeys: ['id'] },
        ),
        (record) => {
          const w = parseV7Warning(record);
          expect(validLevels).toContain(w.level);
          expect(['active', 'update', 'cancel']).toContain(w.status);
          expect(Array.isArray(w.related)).toBe(true);
        },
      ),
    );
  });

  it('for v1 alerts with arbitrary optional fields missing', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            id: fc.string({ minLength: 1 }).filter((s) => s.trim() !== ''),
            senderName: maybeText,
            issuedTime: maybeTime,
            messageType: fc.option(
              fc.record(
                {
                  code: maybeText,
                  supersedes: fc.option(fc.array(fc.string()), { nil: null }),
                },
                { requiredKeys: [] },
              ),
              { nil: null },
            ),
            eventType: fc.option(fc.record({ name: maybeText, code: maybeText }), { nil: null }),
            severity: maybeText,
            color: fc.option(fc.record({ code: maybeText }), { nil: null }),
            effectiveTime: maybeTime,
            onsetTime: maybeTime,
            expireTime: maybeTime,
            expiredTime: maybeTime,
            headline: maybeText,
            description: maybeText,
            instruction: maybeText,
          },
          { requiredKeys: ['id'] },
        ),
        (record) => {
          const w = parseV1Alert(record);
          expect(validLevels).toContain(w.level);
          expect(['active', 'update', 'cancel']).toContain(w.status);
        },
      ),
    );
  });
});
