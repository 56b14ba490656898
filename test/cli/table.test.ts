import { describe, expect, it } from 'vitest';
import { displayWidth, formatTable } from '../../src/cli/table.js';

describe('displayWidth', () => {
  it('counts Chinese characters as two cells and combining marks as none', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('杭州')).toBe(4);
    expect(displayWidth('Ａ')).toBe(2);
    expect(displayWidth('e\u0301')).toBe(1);
  });
});

describe('formatTable', () => {
  it('aligns mixed-width text and right-aligns numbers', () => {
    const rows = [
      { name: '杭州', rank: 11 },
      { name: 'Hangzhou Bay', rank: 5 },
      { name: '西湖区', rank: null },
    ];
    const out = formatTable(rows, [
      { header: 'name', value: (r) => r.name },
      { header: 'rank', value: (r) => r.rank, align: 'right' },
    ]);
    expect(out.split('\n')).toEqual([
      'name          rank',
      '杭州            11',
      'Hangzhou Bay     5',
      '西湖区',
    ]);
  });

  it('prints only the header for no rows, and flattens line breaks in cells', () => {
    expect(formatTable([], [{ header: 'id', value: () => 'x' }])).toBe('id');
    expect(formatTable([{ t: 'a\nb' }], [{ header: 't', value: (r) => r.t }])).toBe('t\na b');
  });
});
