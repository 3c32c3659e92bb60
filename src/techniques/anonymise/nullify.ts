// Anonymise by nullifying: every value becomes JSON null (an empty element or cell in text formats).

import { OptionReader } from '../option-reader.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export const nullifyTechnique: Technique<Record<string, never>> = {
  id: 'nullify',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    new OptionReader(raw, ['method'], { name: 'method', value: 'nullify' });
    return {};
  },

  compile(): CompiledTechnique {
    const bound = { forward: () => null };
    return { bind: () => bound, explain: () => 'nullify()' };
  },
};
