// Telephone numbers, in three written forms (see docs/detection.md):
// - international: `+` (or `00`) and an assigned ITU country calling code, 8-15 digits in all,
//   separators (space, `-`, `.`, brackets) anywhere between digit groups;
// - North American (NANP): `(415) 555-0132`, `415-555-0132`, `415.555.0132`, `415 555 0132`,
//   `1-415-555-0132`: area code and exchange 2-9 first, no N11 service codes, one separator style;
// - national with a trunk 0: `020 7946 0958`, `01 23 45 67 89`: 10-11 digits in at least two groups.
// Bare runs of digits without `+` are never phones: too many ids look like them.

/** Two-digit country calling codes (ITU-T E.164 assignments); 1 and 7 are the one-digit ones. */
const CC2 = [
  20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54, 55, 56, 57, 58,
  60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98,
];
/** Leading two digits of the zones where three-digit codes are assigned. */
const CC3_ZONES = [21, 22, 23, 24, 25, 26, 29, 35, 37, 38, 42, 50, 59, 67, 68, 69, 80, 85, 87, 88, 96, 97, 99];

/** By the first two digits (0-99): 1 when a country calling code starts there. */
const STARTS_CODE: Uint8Array = (() => {
  const t = new Uint8Array(100);
  for (const two of [...CC2, ...CC3_ZONES]) t[two] = 1;
  for (let d = 0; d < 10; d++) t[10 + d] = t[70 + d] = 1; // +1 (NANP) and +7
  return t;
})();

/**
 * True when digits after `+` or `00` starting with `firstTwo` (their first two digits as a number
 * 0-99) start with an assigned country calling code.
 */
export function startsCountryCode(firstTwo: number): boolean {
  return STARTS_CODE[firstTwo] === 1;
}

export const E164_MIN_DIGITS = 8;
export const E164_MAX_DIGITS = 15;

/** A NANP area code or exchange: first digit 2-9, and not an N11 service code. */
function nanpCode(digits: string, at: number): boolean {
  const a = digits.charCodeAt(at) - 48;
  const b = digits.charCodeAt(at + 1) - 48;
  const c = digits.charCodeAt(at + 2) - 48;
  return a >= 2 && !(b === 1 && c === 1);
}

/** Ten NANP digits (no leading 1): valid area code (not N9X) and exchange. */
export function isNanpDigits(digits: string): boolean {
  return digits.length === 10 && nanpCode(digits, 0) && digits.charCodeAt(1) !== 57 && nanpCode(digits, 3);
}
