/**
 * English for English subscribers (README, promises): the upstream's own English texts where it
 * gave them (`lang=en`), else the type, level and place in English from tables and the
 * original text, marked as Chinese. Pure.
 */
import { LEVEL_EN, type Warning, type WarningEnglish } from './warning.js';
import { englishTypeName } from './warning-types.js';

/**
 * The warnings of a Chinese answer with the English texts of the same ids from an English
 * answer. An English answer that repeats the Chinese text gave no English for that warning.
 */
export function withEnglish(warnings: readonly Warning[], english: readonly Warning[]): Warning[] {
  const byId = new Map(english.map((w) => [w.id, w]));
  return warnings.map((w) => {
    const en = byId.get(w.id);
    if (!en || (en.text === w.text && en.title === w.title)) return w;
    const texts: WarningEnglish = {
      title: en.title,
      text: en.text,
      sender: en.sender,
      typeName: en.typeName,
      instruction: en.instruction,
    };
    return { ...w, english: texts };
  });
}

/**
 * A warning as an English subscriber reads it: its English texts when the upstream gave them;
 * else an English title and type name, and the original text, which `textInChinese` says is
 * Chinese.
 */
export function inEnglish(warning: Warning): { warning: Warning; textInChinese: boolean } {
  const en = warning.english;
  if (en) {
    return {
      warning: {
        ...warning,
        title: en.title || warning.title,
        text: en.text || warning.text,
        sender: en.sender ?? warning.sender,
        typeName: en.typeName ?? englishTypeName(warning) ?? warning.typeName,
        instruction: en.instruction ?? warning.instruction,
      },
      textInChinese: false,
    };
  }
  const type = englishTypeName(warning) ?? warning.typeName;
  const level = warning.level === 'unknown' ? '' : LEVEL_EN[warning.level];
  const title = [level, type ?? '', 'Warning'].filter((s) => s !== '').join(' ');
  return {
    warning: { ...warning, title, typeName: type },
    textInChinese: warning.text.trim() !== '',
  };
}
