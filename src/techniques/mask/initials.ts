// Mask, initials style: the first letter or digit of each word is kept, the rest of each word
// masked and everything between words kept (`John Smith` → `J*** S****`).

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { asciiTable, latin1Scratch, maskablePredicate, scalarText } from './masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface MaskInitialsOptions {
  readonly maskChar: string;
}

export const maskInitialsTechnique: Technique<MaskInitialsOptions> = {
  id: 'mask-initials',
  jobType: 'Mask',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['style', 'maskChar'], { name: 'style', value: 'initials' });
    return { maskChar: reader.character('maskChar', '*') };
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
      for (let i = 0; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c >= 128) return undefined;
        if (wordChar[c] === 1) {
          buf[i] = inWord ? maskCode : c;
          inWord = true;
        } else {
          buf[i] = c;
          inWord = false;
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
      let out = '';
      let inWord = false;
      for (const ch of text) {
        if (!isWordChar(ch)) {
          inWord = false;
          out += ch;
        } else {
          out += inWord ? options.maskChar : ch;
          inWord = true;
        }
      }
      return out;
    };
    const bound = { forward };
    return { bind: () => bound, explain: () => `mask-initials(maskChar=${options.maskChar})` };
  },
};
