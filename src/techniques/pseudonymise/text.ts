// Pseudonymise, text format: the ASCII letters and digits of any text FF1-encrypted over their own
// classes (see fpe-symbols.ts), case, separators and length kept. JSON numbers go as digits.

import { compileFpe, DEFAULT_SHORT_VALUE_POLICY, SHORT_VALUE_POLICIES, TOO_SHORT, type ShortValuePolicy } from './fpe-core.ts';
import { digitsJob } from './digits.ts';
import { symbolsJob } from './fpe-symbols.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface TextOptions {
  readonly shortValues: ShortValuePolicy;
}

export const fpeTextTechnique: Technique<TextOptions> = {
  id: 'fpe-text',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'shortValues'], { name: 'format', value: 'text' });
    return { shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY) };
  },

  compile(options) {
    return compileFpe(
      'fpe-text',
      {
        plan(value, tweaks, short) {
          if (typeof value === 'number') return digitsJob(value, 0, 0, tweaks, short);
          if (typeof value !== 'string') throw new ValueError(TOO_SHORT);
          return symbolsJob({ text: value, start: 0, end: value.length, digits: true, letters: true }, tweaks, undefined, short);
        },
        explain: () => 'classes=digits+letters',
      },
      options.shortValues,
    );
  },
};
