// US Social Security numbers, written `123-45-6789` or `123 45 6789`; nine bare digits only right
// after a context word (`SSN`, `SSN#`, `social security (number|no.)`, an `ssn` key: the way
// Presidio uses context) — anywhere else they are too often something else to be taken as one. SSA rules: area 001-899 except 666, group 01-99,
// serial 0001-9999, and the numbers known from advertising (078-05-1120, 219-09-9999) refused.

import { wordsBefore } from './context.ts';

const ADVERTISED = new Set(['078051120', '219099999']);

/** Nine digits that can be an SSN under the SSA's area, group and serial rules. */
export function isSsnDigits(digits: string): boolean {
  if (digits.length !== 9) return false;
  const area = Number(digits.slice(0, 3));
  const group = Number(digits.slice(3, 5));
  const serial = Number(digits.slice(5));
  if (area === 0 || area === 666 || area >= 900) return false;
  if (group === 0 || serial === 0) return false;
  return !ADVERTISED.has(digits);
}

/**
 * True when the text just before `at` ends with an SSN context word, after at most a few characters
 * of punctuation (`SSN: `, `"ssn": "`, `ssn=`, `Social Security No. `).
 */
export function ssnContextBefore(text: string, at: number): boolean {
  const words = wordsBefore(text, at);
  return words !== undefined && SSN_CONTEXT.test(words);
}

const SSN_CONTEXT = /(?:^|[^a-z0-9_])(?:ssn|social security(?: number| no)?)$/;
