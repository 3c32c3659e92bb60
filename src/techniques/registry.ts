// Every technique by id, and the rule that picks one from a manifest entry: the job type plus its
// selector option (Mask `style`, Anonymise `method`, Pseudonymise `format`, Encrypt `mode`).

import type { ForwardJobType } from '../core/types.ts';
import { generaliseDateTechnique } from './anonymise/generalise-date.ts';
import { generaliseNumberTechnique } from './anonymise/generalise-number.ts';
import { generalisePrefixTechnique } from './anonymise/generalise-prefix.ts';
import { hashTechnique } from './anonymise/hash.ts';
import { nullifyTechnique } from './anonymise/nullify.ts';
import { redactTechnique } from './anonymise/redact.ts';
import { encryptTechnique } from './encrypt/encrypt.ts';
import { fpeCardTechnique } from './pseudonymise/card.ts';
import { fpeDigitsTechnique } from './pseudonymise/digits.ts';
import { fpeEmailTechnique } from './pseudonymise/email.ts';
import { fpeIbanTechnique } from './pseudonymise/iban.ts';
import { fpeIpTechnique } from './pseudonymise/ip.ts';
import { fpeNameTechnique } from './pseudonymise/name.ts';
import { fpePhoneTechnique } from './pseudonymise/phone.ts';
import { fpeTextTechnique } from './pseudonymise/text.ts';
import { maskEmailTechnique } from './mask/email.ts';
import { maskInitialsTechnique } from './mask/initials.ts';
import { maskTechnique } from './mask/plain.ts';
import { dateShiftTechnique } from './pseudonymise/date-shift.ts';
import { restrictTechnique } from './restrict.ts';
import { TechniqueOptionError, type Technique } from './technique.ts';

// Technique<O> is invariant in O; the registry only hands options from validate() back to compile().
type AnyTechnique = Technique<any>;

const all: readonly AnyTechnique[] = [
  maskTechnique,
  maskEmailTechnique,
  maskInitialsTechnique,
  redactTechnique,
  hashTechnique,
  generaliseDateTechnique,
  generaliseNumberTechnique,
  generalisePrefixTechnique,
  nullifyTechnique,
  fpeDigitsTechnique,
  fpeTextTechnique,
  fpeCardTechnique,
  fpeEmailTechnique,
  fpePhoneTechnique,
  fpeIbanTechnique,
  fpeNameTechnique,
  fpeIpTechnique,
  dateShiftTechnique,
  encryptTechnique,
  restrictTechnique,
];

export const techniques: ReadonlyMap<string, Technique> = new Map(all.map((t) => [t.id, t]));

interface Selector {
  readonly option: string;
  readonly fallback: string;
  readonly byValue: Readonly<Record<string, AnyTechnique>>;
}

const selectors: Readonly<Record<ForwardJobType, Selector>> = {
  Mask: {
    option: 'style',
    fallback: 'plain',
    byValue: { plain: maskTechnique, email: maskEmailTechnique, initials: maskInitialsTechnique },
  },
  Anonymise: {
    option: 'method',
    fallback: 'redact',
    byValue: {
      redact: redactTechnique,
      hash: hashTechnique,
      'generalise-date': generaliseDateTechnique,
      'generalise-number': generaliseNumberTechnique,
      'generalise-prefix': generalisePrefixTechnique,
      nullify: nullifyTechnique,
    },
  },
  Pseudonymise: {
    option: 'format',
    fallback: 'text',
    byValue: {
      digits: fpeDigitsTechnique,
      text: fpeTextTechnique,
      card: fpeCardTechnique,
      email: fpeEmailTechnique,
      phone: fpePhoneTechnique,
      iban: fpeIbanTechnique,
      name: fpeNameTechnique,
      date: dateShiftTechnique,
      ip: fpeIpTechnique,
    },
  },
  Encrypt: { option: 'mode', fallback: 'gcm', byValue: { gcm: encryptTechnique, siv: encryptTechnique } },
  Restrict: { option: '', fallback: '', byValue: {} },
};

/**
 * The technique a manifest entry names: chosen by the job type and its selector option (absent →
 * the default: Mask plain, Anonymise redact, Pseudonymise text, Encrypt gcm). Restrict takes no
 * selector. The chosen technique's validate() still has to check the options as a whole.
 */
export function techniqueFor(jobType: ForwardJobType, options: Readonly<Record<string, unknown>>): Technique {
  if (jobType === 'Restrict') return restrictTechnique;
  const selector = selectors[jobType];
  if (selector === undefined) throw new TechniqueOptionError(`no techniques for job type '${String(jobType)}'`);
  const raw = options !== null && typeof options === 'object' && Object.hasOwn(options, selector.option) ? options[selector.option] : undefined;
  if (raw === undefined || raw === null) return selector.byValue[selector.fallback];
  const known = Object.keys(selector.byValue);
  const name = typeof raw === 'string' ? known.find((k) => k === raw.toLowerCase()) : undefined;
  if (name === undefined) {
    throw new TechniqueOptionError(`${selector.option} must be one of: ${known.join(', ')}`, selector.option);
  }
  return selector.byValue[name];
}
