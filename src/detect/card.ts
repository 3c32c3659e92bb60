// Payment card numbers: a brand's issuer prefix (IIN) and one of that brand's lengths, and the Luhn
// check. The table is narrow on purpose: a Luhn-valid order number of the wrong length or prefix is
// not a card. Sources: ISO/IEC 7812 brand ranges as published by the schemes (Visa, Mastercard incl.
// the 2-series, Amex, Discover, JCB, Diners, UnionPay, Maestro, Mir, RuPay, Verve, Troy, UATP,
// Dankort), as listed in the IIN table of Wikipedia's "Payment card number" article (2026-11). Visa's 13-digit numbers are no longer issued
// and a 13-digit `4…` is far more often an EAN-13 barcode (GS1 prefixes 400-440 are Germany's), so
// Visa is 16 and 19 digits here.

interface Brand {
  /** Inclusive prefix ranges, as strings of equal length (`['2221', '2720']`). */
  readonly ranges: readonly (readonly [string, string])[];
  readonly lengths: readonly number[];
}

const range = (from: string, to = from): readonly [string, string] => [from, to];
const span = (min: number, max: number): number[] => Array.from({ length: max - min + 1 }, (_, i) => min + i);

const BRANDS: readonly Brand[] = [
  { ranges: [range('4')], lengths: [16, 19] }, // Visa
  { ranges: [range('51', '55'), range('2221', '2720')], lengths: [16] }, // Mastercard
  { ranges: [range('34'), range('37')], lengths: [15] }, // American Express
  { ranges: [range('6011'), range('644', '649'), range('65')], lengths: span(16, 19) }, // Discover
  { ranges: [range('3528', '3589')], lengths: span(16, 19) }, // JCB
  { ranges: [range('300', '305'), range('36'), range('38', '39')], lengths: span(14, 19) }, // Diners Club
  { ranges: [range('62')], lengths: span(16, 19) }, // UnionPay
  { ranges: [range('5018'), range('5020'), range('5038'), range('5893'), range('6304'), range('6759'), range('6761', '6763')], lengths: span(12, 19) }, // Maestro
  { ranges: [range('2200', '2204')], lengths: span(16, 19) }, // Mir
  { ranges: [range('60'), range('81', '82'), range('508')], lengths: [16] }, // RuPay
  { ranges: [range('506099', '506198'), range('650002', '650027')], lengths: span(16, 19) }, // Verve
  { ranges: [range('9792')], lengths: [16] }, // Troy
  { ranges: [range('1')], lengths: [15] }, // UATP (airline cards)
  { ranges: [range('5019'), range('4571')], lengths: [16] }, // Dankort (and Visa/Dankort)
];

/** Shortest and longest card numbers of any brand. */
export const CARD_MIN_DIGITS = 12;
export const CARD_MAX_DIGITS = 19;

/** The longest issuer prefix in the table (Verve's `506099`). */
export const CARD_PREFIX_DIGITS = 6;

/**
 * Per length, the prefix ranges valid at that length as [from, to] pairs of six-digit numbers
 * (`2221`-`2720` is 222100-272099), compiled once: a check is a few integer comparisons.
 */
const RANGES_BY_LENGTH: readonly Int32Array[] = (() => {
  const out: number[][] = Array.from({ length: CARD_MAX_DIGITS + 1 }, () => []);
  for (const brand of BRANDS) {
    for (const n of brand.lengths) {
      for (const [from, to] of brand.ranges) out[n].push(Number(from.padEnd(CARD_PREFIX_DIGITS, '0')), Number(to.padEnd(CARD_PREFIX_DIGITS, '9')));
    }
  }
  return out.map((pairs) => Int32Array.from(pairs));
})();

/** True when `digits` (digits only) has a known brand prefix for its length. */
export function hasCardPrefix(digits: string): boolean {
  return digits.length >= CARD_MIN_DIGITS && hasCardPrefixFor(Number(digits.slice(0, CARD_PREFIX_DIGITS)), digits.length);
}

/**
 * True when a card number of `length` digits (12-19) whose first six digits are `head6` (as a
 * number) has a known brand prefix for that length.
 */
export function hasCardPrefixFor(head6: number, length: number): boolean {
  const ranges = RANGES_BY_LENGTH[length];
  if (ranges === undefined) return false;
  for (let i = 0; i < ranges.length; i += 2) if (head6 >= ranges[i] && head6 <= ranges[i + 1]) return true;
  return false;
}

/** The Luhn (mod 10) check over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** A card number's digits: a brand prefix valid for its length, and the Luhn check. */
export function isCardDigits(digits: string): boolean {
  return digits.length >= CARD_MIN_DIGITS && digits.length <= CARD_MAX_DIGITS && hasCardPrefix(digits) && luhnValid(digits);
}

/**
 * A GTIN (EAN-13 or UPC-A, 12-13 digits) check digit: weights 3 and 1 from the right. A number of
 * that length written as one group that passes it is taken as a barcode, not a card (the card
 * lengths 12-13 are only Maestro's, rare and shrinking).
 */
export function isGtinDigits(text: string, start: number, end: number): boolean {
  const n = end - start;
  if (n !== 12 && n !== 13) return false;
  let sum = 0;
  for (let i = end - 2, w = 3; i >= start; i--, w = 4 - w) sum += (text.charCodeAt(i) - 48) * w;
  return (10 - (sum % 10)) % 10 === text.charCodeAt(end - 1) - 48;
}
