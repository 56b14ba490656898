import { describe, expect, it } from 'vitest';
import { inEnglish, withEnglish } from '../../src/domain/english.js';
import { warning } from './detect-fixtures.js';

describe('English for English subscribers', () => {
  const zh = warning('A', {
    title: '杭州市气象台发布暴雨橙色预警',
    text: '中文正文',
    level: '橙色',
  });

  it("takes the English answer's texts for the same ids, and none from an answer that repeats the Chinese", () => {
    const en = warning('A', {
      title: 'Orange Rainstorm Warning issued',
      text: 'English text',
      sender: 'Hangzhou Meteorological Observatory',
      typeName: 'Rainstorm',
    });
    const [withEn] = withEnglish([zh], [en, warning('OTHER')]);
    expect(withEn?.english).toEqual({
      title: 'Orange Rainstorm Warning issued',
      text: 'English text',
      sender: 'Hangzhou Meteorological Observatory',
      typeName: 'Rainstorm',
      instruction: null,
    });
    expect(withEnglish([zh], [zh])[0]).toBe(zh);
    expect(withEnglish([zh], [])[0]).toBe(zh);
  });

  it("shows the upstream's English when given, else English names and the original text", () => {
    const [withEn] = withEnglish(
      [zh],
      [
        warning('A', {
          title: 'Orange Rainstorm Warning',
          text: 'Heavy rain.',
          typeName: 'Rainstorm',
        }),
      ],
    );
    expect(inEnglish(withEn!)).toMatchObject({
      warning: { title: 'Orange Rainstorm Warning', text: 'Heavy rain.', typeName: 'Rainstorm' },
      textInChinese: false,
    });
    expect(inEnglish(zh)).toMatchObject({
      warning: { title: 'Orange Rainstorm Warning', typeName: 'Rainstorm', text: '中文正文' },
      textInChinese: true,
    });
  });
});
