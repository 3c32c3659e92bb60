// Mask, initials style: the first letter or digit of each word is kept, the rest of each word
// masked and everything between words kept (`John Smith` → `J*** S****`). Initials are kept only
// while they are at most half of the letters and digits (`A B` → `A *`, `J` → `*`).

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { asciiTable, latin1Scratch, maskablePredicate, scalarText, SHORT_MASK_POLICIES, visibleAtMost, type ShortMaskPolicy } from './masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface MaskInitialsOptions {
  readonly maskChar: string;
  /** When the initials would be more than half of the maskable characters. */
  readonly shortValues: ShortMaskPolicy;
}

export const maskInitialsTechnique: Technique<MaskInitialsOptions> = {
  id: 'mask-initials',
  jobType: 'Mask',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['style', 'maskChar', 'shortValues'], { name: 'style', value: 'initials' });
    return { maskChar: reader.character('maskChar', '*'), shortValues: reader.oneOf('shortValues', SHORT_MASK_POLICIES, 'mask-more') };
  },

  compile(options): CompiledTechnique {
    const isWordChar = maskablePredicate('alphanumeric');
    const wordChar = asciiTable('alphanumeric');
    const maskCode = options.maskChar.charCodeAt(0);
    const latin1Mask = options.maskChar.length === 1 && maskCode < 256;
    // ASCII text (nearly every name) is built in one shared byte buffer: no per-character strings.
    const forwardAscii = (text: string): string | undefined => {
      const n = text.length;
      const buf = latin1Scratch(n);
      let inWord = false;
      let words = 0;
      let maskable = 0;
      for (let i = 0; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c >= 128) return undefined;
        if (wordChar[c] === 1) {
          buf[i] = inWord ? maskCode : c;
          if (!inWord) words++;
          maskable++;
          inWord = true;
        } else {
          buf[i] = c;
          inWord = false;
        }
      }
      const kept = visibleAtMost(maskable, words, options.shortValues);
      if (kept < words) {
        // Too many initials for the letters there are: only the first `kept` words keep theirs.
        for (let i = 0, word = 0; i < n; i++) {
          if (wordChar[text.charCodeAt(i)] === 1 && (i === 0 || wordChar[text.charCodeAt(i - 1)] !== 1) && word++ >= kept) buf[i] = maskCode;
        }
      }
      return buf.toString('latin1', 0, n);
    };
    const forward = (value: Scalar): Scalar => {
      const text = scalarText(value);
      if (latin1Mask) {
        const fast = forwardAscii(text);
        if (fast !== undefined) return fast;
      }
      const chars = Array.from(text);
      let words = 0;
      let maskable = 0;
      for (let i = 0; i < chars.length; i++) {
        if (!isWordChar(chars[i])) continue;
        maskable++;
        if (i === 0 || !isWordChar(chars[i - 1])) words++;
      }
      const kept = visibleAtMost(maskable, words, options.shortValues);
      let out = '';
      let word = 0;
      for (let i = 0; i < chars.length; i++) {
        const ch = chars[i];
        if (!isWordChar(ch)) out += ch;
        else if (i > 0 && isWordChar(chars[i - 1])) out += options.maskChar;
        else out += word++ < kept ? ch : options.maskChar;
      }
      return out;
    };
    const bound = { forward };
    return { bind: () => bound, explain: () => `mask-initials(maskChar=${options.maskChar}, shortValues=${options.shortValues})` };
  },
};
