// Pseudonymise, phone format: the digits FF1-encrypted, `+`, spaces, brackets and dashes kept, so
// `+44 20 7946 0958` stays a phone-shaped number. Optional keepFirst/keepLast (e.g. a country code).

import { compileFpe } from './fpe-core.ts';
import { digitsFormat, readDigitsOptions, type DigitsOptions } from './digits.ts';
import type { Technique } from '../technique.ts';

export const fpePhoneTechnique: Technique<DigitsOptions> = {
  id: 'fpe-phone',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,
  validate: (raw) => readDigitsOptions(raw, 'phone'),
  compile: (options) => compileFpe('fpe-phone', digitsFormat(options), options.shortValues),
};
