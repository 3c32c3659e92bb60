// Anonymise by generalising a number to the range bucket it falls in: with width 10000, 54321 →
// `50000-59999`. Numeric strings are read too; anything else fails with NOT_A_NUMBER.

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type CompiledTechnique, type Technique } from '../technique.ts';

export interface GeneraliseNumberOptions {
  readonly width: number;
}

const NUMERIC_TEXT = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

function numberOf(value: Scalar): number {
  let n = Number.NaN;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && NUMERIC_TEXT.test(value.trim())) n = Number(value.trim());
  if (!Number.isFinite(n) || Math.abs(n) > Number.MAX_SAFE_INTEGER) throw new ValueError('NOT_A_NUMBER');
  return n;
}

export const generaliseNumberTechnique: Technique<GeneraliseNumberOptions> = {
  id: 'generalise-number',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['method', 'width'], { name: 'method', value: 'generalise-number' });
    return { width: reader.integer('width', { min: 1, max: Number.MAX_SAFE_INTEGER, required: true }) };
  },

  compile(options): CompiledTechnique {
    const { width } = options;
    const forward = (value: Scalar): Scalar => {
      const low = Math.floor(numberOf(value) / width) * width;
      return `${low}-${low + width - 1}`;
    };
    const bound = { forward };
    return { bind: () => bound, explain: () => `generalise-number(width=${width})` };
  },
};
