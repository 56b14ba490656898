import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  englishTypeName,
  typeCodeOfInput,
  warningTypeOf,
  WARNING_TYPES,
} from '../../src/domain/warning-types.js';

describe('warning types', () => {
  it('takes a code of either style, a Chinese name or an English name in any case', () => {
    for (const text of ['1001', '11B01', '11b01', '台风', 'Typhoon', 'typhoon', ' TYPHOON ']) {
      expect(typeCodeOfInput(text), text).toBe('1001');
    }
    expect(typeCodeOfInput('森林（草原）火险')).toBe('1041');
    expect(typeCodeOfInput('Snow Storm')).toBe('1004');
  });

  it('refuses a name it does not know, and keeps an unknown four-digit code as given', () => {
    for (const text of ['台风风', 'Typhooon', 'storm', '', '10011', 'A1']) {
      expect(typeCodeOfInput(text), text).toBeUndefined();
    }
    expect(typeCodeOfInput('1099')).toBe('1099');
  });

  it('names a type in English from its code or its Chinese name', () => {
    expect(englishTypeName({ typeCode: '1003', typeName: null })).toBe('Rainstorm');
    expect(englishTypeName({ typeCode: null, typeName: '大风' })).toBe('Gale');
    expect(englishTypeName({ typeCode: '9999', typeName: '新类型' })).toBeNull();
    expect(warningTypeOf('11B22')?.zh).toBe('干旱');
  });

  it('is listed whole in docs/warning-types.md', () => {
    const doc = readFileSync(new URL('../../docs/warning-types.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| (\d{4}) \| (.+?) +\| (.+?) +\|$/gm)].map((m) => [
      m[1],
      m[2],
      m[3],
    ]);
    expect(rows).toEqual(WARNING_TYPES.map((t) => [t.code, t.zh, t.en]));
  });
});
