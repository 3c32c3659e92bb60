// Anonymise by redaction: every value becomes one fixed text. With preserve_string_length the text
// is cut or padded (with the mask character) to the value's length in characters.

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { MaskRuns, scalarText } from '../mask/masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface RedactOptions {
  readonly text: string;
  readonly maskChar: string;
}

export const redactTechnique: Technique<RedactOptions> = {
  id: 'redact',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['method', 'text', 'maskChar'], { name: 'method', value: 'redact' });
    return { text: reader.string('text', { default: 'REDACTED' }), maskChar: reader.character('maskChar', '*') };
  },

  compile(options): CompiledTechnique {
    const textChars = Array.from(options.text);
    const runs = new MaskRuns(options.maskChar);
    const fixed = { forward: (): Scalar => options.text };
    const preserving = {
      forward: (value: Scalar): Scalar => {
        let length = 0;
        for (const _ of scalarText(value)) length++;
        if (length === textChars.length) return options.text;
        if (length < textChars.length) return textChars.slice(0, length).join('');
        return options.text + runs.of(length - textChars.length);
      },
    };
    return {
      bind: (ctx) => (ctx.preserveStringLength ? preserving : fixed),
      explain: () => `redact(text=${JSON.stringify(options.text)}, maskChar=${options.maskChar})`,
    };
  },
};
