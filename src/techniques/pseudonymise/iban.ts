// Pseudonymise, IBAN format: the country code kept, the BBAN FF1-encrypted over its own classes
// (digits stay digits, letters stay letters) and the check digits recomputed, so the result passes
// the ISO 13616 mod-97 check. Only valid IBANs are accepted (check digits 02-98 included): an
// invalid one could not round-trip. A BBAN too short for FF1 takes the short-value scheme.

import { compileFpe, DEFAULT_SHORT_VALUE_POLICY, SHORT_VALUE_POLICIES, TOO_SHORT, UNSUPPORTED_TYPE, type ShortValuePolicy } from './fpe-core.ts';
import { symbolsJob } from './fpe-symbols.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface IbanOptions {
  readonly shortValues: ShortValuePolicy;
}

const INVALID_IBAN = 'INVALID_IBAN';
/** Compact IBAN: country, check digits, 1-30 BBAN characters. Spaces between groups are allowed. */
const COMPACT_IBAN = /^[A-Za-z]{2}\d{2}[A-Za-z0-9]{1,30}$/;

/** ISO 7064 mod 97-10 of an alphanumeric string (letters A=10 … Z=35, any case). */
function mod97(text: string): number {
  let rest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) | 0x20;
    const v = c >= 97 ? c - 87 : c - 48;
    rest = v >= 10 ? (rest * 100 + v) % 97 : (rest * 10 + v) % 97;
  }
  return rest;
}

/**
 * Separators between the print groups: a plain space, the no-break and typographic spaces text
 * detection also accepts there, or a dash (`DE89-3704-…`, issue 17; docs/detection.md), so a
 * detected IBAN can be pseudonymised.
 */
const SPACES = /[ \u00a0\u2000-\u200a\u202f\u205f\u3000-]/g;

function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '-' || (ch > '\u007f' && /^[\u00a0\u2000-\u200a\u202f\u205f\u3000]$/.test(ch));
}

/**
 * ISO 13616: structure, mod-97 check, and check digits 02-98. 00, 01 and 99 pass the mod-97 test
 * but are never issued, and are not what the check-digit rule computes: accepting `99` next to the
 * `02` it stands for would give two inputs one pseudonym that Reconstruct could not tell apart.
 */
export function isValidIban(value: string): boolean {
  const compact = value.replace(SPACES, '');
  if (!COMPACT_IBAN.test(compact)) return false;
  const check = Number(compact.slice(2, 4));
  return check >= 2 && check <= 98 && mod97(compact.slice(4) + compact.slice(0, 4)) === 1;
}

/** The IBAN with its check digits (third and fourth non-space characters) recomputed. */
function withCheckDigits(value: string): string {
  const compact = value.replace(SPACES, '');
  const check = String(98 - mod97(`${compact.slice(4)}${compact.slice(0, 2)}00`)).padStart(2, '0');
  let out = '';
  let seen = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (isSpace(ch)) {
      out += ch;
      continue;
    }
    out += seen === 2 ? check[0] : seen === 3 ? check[1] : ch;
    if (++seen === 4) return out + value.slice(i + 1);
  }
  return out;
}

export const fpeIbanTechnique: Technique<IbanOptions> = {
  id: 'fpe-iban',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'shortValues'], { name: 'format', value: 'iban' });
    return { shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY) };
  },

  compile(options) {
    return compileFpe(
      'fpe-iban',
      {
        plan(value, tweaks, short) {
          if (typeof value === 'number') throw new ValueError(UNSUPPORTED_TYPE);
          if (typeof value !== 'string') throw new ValueError(TOO_SHORT);
          if (!isValidIban(value) || isSpace(value[0]) || isSpace(value[value.length - 1])) throw new ValueError(INVALID_IBAN);
          // The BBAN starts after the fourth compact character (country code and check digits).
          let bbanStart = 0;
          for (let seen = 0; seen < 4; bbanStart++) if (!isSpace(value[bbanStart])) seen++;
          return symbolsJob({ text: value, start: bbanStart, end: value.length, digits: true, letters: true }, tweaks, withCheckDigits, short);
        },
        explain: () => 'country kept, BBAN=digits+letters, mod-97 check digits recomputed',
      },
      options.shortValues,
    );
  },
};
