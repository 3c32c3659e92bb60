// Anonymise by generalising to a prefix (a postcode to its district): the first N characters are
// kept and the rest dropped, or masked letter by letter keeping separators.

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { maskablePredicate, scalarText } from '../mask/masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface GeneralisePrefixOptions {
  /** Characters (code points) kept from the start. */
  readonly keep: number;
  readonly rest: 'drop' | 'mask';
  readonly maskChar: string;
}

export const generalisePrefixTechnique: Technique<GeneralisePrefixOptions> = {
  id: 'generalise-prefix',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['method', 'keep', 'rest', 'maskChar'], { name: 'method', value: 'generalise-prefix' });
    return {
      keep: reader.integer('keep', { min: 0, max: 1_000_000, required: true }),
      rest: reader.oneOf('rest', ['drop', 'mask'], 'drop'),
      maskChar: reader.character('maskChar', '*'),
    };
  },

  compile(options): CompiledTechnique {
    const isMaskable = maskablePredicate('alphanumeric');
    const { keep, maskChar } = options;
    const drop = (value: Scalar): Scalar => Array.from(scalarText(value)).slice(0, keep).join('');
    // preserve_string_length turns dropping into masking every character after the prefix.
    const mask = (maskSeparators: boolean) => (value: Scalar): Scalar => {
      const chars = Array.from(scalarText(value));
      for (let i = keep; i < chars.length; i++) if (maskSeparators || isMaskable(chars[i])) chars[i] = maskChar;
      return chars.join('');
    };
    const dropping = { forward: drop };
    const masking = { forward: mask(false) };
    const padding = { forward: mask(true) };
    return {
      bind: (ctx) => (options.rest === 'mask' ? masking : ctx.preserveStringLength ? padding : dropping),
      explain: () => `generalise-prefix(keep=${keep}, rest=${options.rest}, maskChar=${maskChar})`,
    };
  },
};
