// Pseudonymise, name format: the ASCII letters FF1-encrypted in radix 26 with each letter's case
// kept; spaces, hyphens, apostrophes, digits and non-ASCII characters stay as they are.

import { compileFpe, DEFAULT_SHORT_VALUE_POLICY, SHORT_VALUE_POLICIES, TOO_SHORT, UNSUPPORTED_TYPE, type ShortValuePolicy } from './fpe-core.ts';
import { symbolsJob } from './fpe-symbols.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface NameOptions {
  readonly shortValues: ShortValuePolicy;
}

export const fpeNameTechnique: Technique<NameOptions> = {
  id: 'fpe-name',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'shortValues'], { name: 'format', value: 'name' });
    return { shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY) };
  },

  compile(options) {
    return compileFpe(
      'fpe-name',
      {
        plan(value, tweaks, short) {
          if (typeof value === 'number') throw new ValueError(UNSUPPORTED_TYPE);
          if (typeof value !== 'string') throw new ValueError(TOO_SHORT);
          return symbolsJob({ text: value, start: 0, end: value.length, digits: false, letters: true }, tweaks, undefined, short);
        },
        explain: () => 'classes=letters',
      },
      options.shortValues,
    );
  },
};
