// IBANs (ISO 13616): an upper-case country code from the IBAN registry, two check digits 02-98, a
// BBAN of that country's length and character layout, and the mod-97 check. Written compact
// (`DE89370400440532013000`), in the print form of groups of four (`DE89 3704 0044 0532 0130 00`) or
// in fours joined by dashes (`DE89-3704-0044-0532-0130-00`), one separator throughout.
// The per-country lengths and layouts come from ibantools (the SWIFT registry as data).

import { getCountrySpecifications } from 'ibantools';
import { CLASS, DIGIT, UPPER, boundaryAfter, isGroupSpace } from './chars.ts';

interface CountryLayout {
  readonly length: number;
  readonly bban: RegExp | undefined;
}

const LAYOUTS: ReadonlyMap<string, CountryLayout> = (() => {
  const out = new Map<string, CountryLayout>();
  for (const [country, spec] of Object.entries(getCountrySpecifications())) {
    if (spec.chars === null || spec.chars < 5 || spec.chars > 34) continue;
    // Some of the registry's patterns are not anchored: the whole BBAN must match.
    const bban = spec.bban_regexp ? new RegExp(`^(?:${spec.bban_regexp.replace(/^\^/, '').replace(/\$$/, '')})$`) : undefined;
    out.set(country, { length: spec.chars, bban });
  }
  return out;
})();

export const IBAN_MAX_LENGTH = 34;

/** The layouts by country code as a number, (first - 65) * 26 + (second - 65): no string per candidate. */
const LAYOUT_BY_CODE: readonly (CountryLayout | undefined)[] = (() => {
  const out = new Array<CountryLayout | undefined>(26 * 26).fill(undefined);
  for (const [country, layout] of LAYOUTS) {
    const code = codeAt(country, 0);
    if (code >= 0 && country.length === 2) out[code] = layout;
  }
  return out;
})();

/** Two upper-case ASCII letters at i as a number below 26 * 26, else -1. */
function codeAt(text: string, i: number): number {
  const a = text.charCodeAt(i) - 65;
  const b = text.charCodeAt(i + 1) - 65;
  return a >= 0 && a < 26 && b >= 0 && b < 26 ? a * 26 + b : -1;
}

/** ISO 7064 mod 97-10 of the IBAN with its first four characters moved to the end. */
function ibanMod97(compact: string): number {
  let rest = 0;
  const n = compact.length;
  for (let k = 0; k < n; k++) {
    const c = compact.charCodeAt((k + 4) % n);
    rest = c >= 65 ? (rest * 100 + (c - 55)) % 97 : (rest * 10 + (c - 48)) % 97;
  }
  return rest;
}

/** Countries of the IBAN registry with their BBAN patterns (for test corpora). */
export function ibanCountries(): ReadonlyMap<string, { readonly length: number; readonly bban: string | undefined }> {
  return new Map([...LAYOUTS].map(([c, l]) => [c, { length: l.length, bban: l.bban?.source }]));
}

/** A compact upper-case IBAN that passes the registry layout and the mod-97 check. */
export function isIbanCompact(compact: string): boolean {
  const layout = LAYOUTS.get(compact.slice(0, 2));
  return layout !== undefined && compactValid(compact, layout);
}

/** `compact` (upper-case letters and digits) has `layout`'s length and BBAN, check digits 02-98 and mod 97 = 1. */
function compactValid(compact: string, layout: CountryLayout): boolean {
  if (compact.length !== layout.length) return false;
  const c1 = compact.charCodeAt(2) - 48;
  const c2 = compact.charCodeAt(3) - 48;
  // Both check characters digits (what `Number` of the two accepts here), 02-98.
  if (!(c1 >= 0 && c1 <= 9 && c2 >= 0 && c2 <= 9)) return false;
  const check = c1 * 10 + c2;
  if (!(check >= 2 && check <= 98)) return false;
  if (layout.bban !== undefined && !layout.bban.test(compact.slice(4))) return false;
  return ibanMod97(compact) === 1;
}

function isDigitOrUpper(c: number): boolean {
  return c < 128 && (CLASS[c] & (DIGIT | UPPER)) !== 0;
}

/**
 * The end of an IBAN written at `start` (two upper-case letters, two digits, already checked by the
 * caller with a boundary before), or -1. Spaces (any isGroupSpace, e.g. no-break) or dashes are
 * accepted only between groups of four, one kind throughout.
 */
export function ibanEndAt(text: string, start: number): number {
  const code = codeAt(text, start);
  const layout = code < 0 ? undefined : LAYOUT_BY_CODE[code];
  if (layout === undefined) return -1;
  const n = text.length;
  /** Characters of the IBAN read so far (separators not counted). */
  let count = 0;
  let i = start;
  let spaced: boolean | undefined;
  /** The separator between groups: a space of any kind (1) or `-` (2), the same throughout. */
  let separator = 0;
  while (i < n && count < layout.length) {
    const c = text.charCodeAt(i);
    const sep = isGroupSpace(c) ? 1 : c === 45 ? 2 : 0;
    if (count > 0 && count % 4 === 0 && sep !== 0 && isDigitOrUpper(text.charCodeAt(i + 1))) {
      if (spaced === false || (separator !== 0 && separator !== sep)) return -1;
      spaced = true;
      separator = sep;
      i++;
      continue;
    }
    if (c >= 128 || (CLASS[c] & (DIGIT | UPPER)) === 0) return -1;
    if (count % 4 === 0 && count > 0 && spaced === undefined) spaced = false;
    if (spaced === true && count % 4 === 0 && !isGroupSpace(text.charCodeAt(i - 1)) && text.charCodeAt(i - 1) !== 45) return -1;
    count++;
    i++;
  }
  if (count !== layout.length || !boundaryAfter(text, i)) return -1;
  // Written compact, the IBAN is the text itself; in groups, every group is four characters and
  // one separator (the loop above admits nothing else), so the compact form is the groups joined.
  let compact: string;
  if (spaced !== true) compact = text.slice(start, i);
  else {
    compact = '';
    for (let g = start; g < i; g += 5) compact += text.slice(g, Math.min(g + 4, i));
  }
  return compactValid(compact, layout) ? i : -1;
}
