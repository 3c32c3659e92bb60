// IPv6 addresses in text (IPv4 ones are digit runs, see digit-runs.ts): a stretch of hex digits,
// colons and dots with at least two colons that Node's own parser accepts (`::` compression and an
// embedded IPv4 tail included; zone ids and brackets are not part of the match).

import { isIPv6 } from 'node:net';
import { CLASS, HEX, WORD, classAt } from './chars.ts';

const COLON = 58;
const DOT = 46;

function isAddressChar(c: number): boolean {
  return c === COLON || c === DOT || (c < 128 && (CLASS[c] & HEX) !== 0);
}

/**
 * The stretch of address characters around the colon at `at`: [start, end, isAddress]. When it is
 * not an address, no other colon of the same stretch starts one either, so scanning goes on at `end`.
 */
export function ipv6Around(text: string, at: number): [number, number, boolean] {
  let start = at;
  while (start > 0 && at - start < 45 && isAddressChar(text.charCodeAt(start - 1))) start--;
  let end = at + 1;
  const n = text.length;
  while (end < n && end - start < 46 && isAddressChar(text.charCodeAt(end))) end++;
  // Sentence punctuation after an address is not part of it.
  while (end > at + 1 && text.charCodeAt(end - 1) === DOT) end--;
  if (classAt(text, start - 1) & WORD || classAt(text, end) & WORD) return [start, end, false];
  let colons = 0;
  for (let i = start; i < end; i++) if (text.charCodeAt(i) === COLON) colons++;
  if (colons < 2 || end - start < 3) return [start, end, false];
  return [start, end, isIPv6(text.slice(start, end))];
}
