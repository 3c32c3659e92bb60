// Pseudonymise, email format: the local part's letters and digits FF1-encrypted over their own
// classes (dots, plus signs and the like kept), the domain kept, so the result is still an address.

import { compileFpe, DEFAULT_SHORT_VALUE_POLICY, SHORT_VALUE_POLICIES, TOO_SHORT, UNSUPPORTED_TYPE, type ShortValuePolicy } from './fpe-core.ts';
import { symbolsJob } from './fpe-symbols.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface EmailOptions {
  readonly shortValues: ShortValuePolicy;
}

export const fpeEmailTechnique: Technique<EmailOptions> = {
  id: 'fpe-email',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'shortValues'], { name: 'format', value: 'email' });
    return { shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY) };
  },

  compile(options) {
    return compileFpe(
      'fpe-email',
      {
        plan(value, tweaks, short) {
          if (typeof value === 'number') throw new ValueError(UNSUPPORTED_TYPE);
          if (typeof value !== 'string') throw new ValueError(TOO_SHORT);
          const at = value.lastIndexOf('@');
          if (at <= 0 || at === value.length - 1) throw new ValueError('NOT_AN_EMAIL');
          return symbolsJob({ text: value, start: 0, end: at, digits: true, letters: true }, tweaks, undefined, short);
        },
        explain: () => 'local part=digits+letters, domain kept',
      },
      options.shortValues,
    );
  },
};
