// Mask, initials style: the first letter or digit of each word is kept, the rest of each word
// masked and everything between words kept (`John Smith` → `J*** S****`).

import type { Scalar } from '../core/types.ts';
import { OptionReader } from './option-reader.ts';
import { maskablePredicate, scalarText } from './masker.ts';
import type { CompiledTechnique, Technique } from './technique.ts';

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
    const forward = (value: Scalar): Scalar => {
      let out = '';
      let inWord = false;
      for (const ch of scalarText(value)) {
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
