// Restrict: the field is removed from the output (the codec drops the key, element, attribute or
// column); forward never changes a value, and tabular doors write restricted text instead.

import type { Scalar } from '../core/types.ts';
import { OptionReader } from './option-reader.ts';
import type { CompiledTechnique, Technique } from './technique.ts';

export const restrictTechnique: Technique<Record<string, never>> = {
  id: 'restrict',
  jobType: 'Restrict',
  reversible: false,
  removesField: true,

  validate(raw) {
    new OptionReader(raw, []);
    return {};
  },

  compile(): CompiledTechnique {
    const bound = { forward: (value: Scalar): Scalar => value };
    return { bind: () => bound, explain: () => 'restrict()' };
  },
};
