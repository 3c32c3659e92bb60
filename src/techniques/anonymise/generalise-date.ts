// Anonymise by generalising a date to its year (`1985`) or month (`1985-04`), whatever textual form
// it came in (see date-text.ts). A value that is not a date fails with NOT_A_DATE.

import type { Scalar } from '../../core/types.ts';
import { parseDateText } from '../date-text.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type CompiledTechnique, type Technique } from '../technique.ts';

export interface GeneraliseDateOptions {
  readonly to: 'year' | 'month';
  /** Reads `01/02/1985` as 1 February (true, default) or as January 2 (false). */
  readonly dayFirst: boolean;
}

export const generaliseDateTechnique: Technique<GeneraliseDateOptions> = {
  id: 'generalise-date',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['method', 'to', 'dayFirst'], { name: 'method', value: 'generalise-date' });
    return { to: reader.oneOf('to', ['year', 'month'], 'year'), dayFirst: reader.boolean('dayFirst', true) };
  },

  compile(options): CompiledTechnique {
    const forward = (value: Scalar): Scalar => {
      const date = typeof value === 'string' ? parseDateText(value.trim(), options.dayFirst) : undefined;
      if (date === undefined) throw new ValueError('NOT_A_DATE');
      const year = String(date.year).padStart(4, '0');
      return options.to === 'year' ? year : `${year}-${String(date.month).padStart(2, '0')}`;
    };
    const bound = { forward };
    return { bind: () => bound, explain: () => `generalise-date(to=${options.to}, dayFirst=${options.dayFirst})` };
  },
};
