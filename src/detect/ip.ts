// IPv6 addresses in text (IPv4 ones are digit runs, see digit-runs.ts): a stretch of hex digits,
// colons and dots with at least two colons that Node's own parser accepts (`::` compression and an
// embedded IPv4 tail included). A zone id (`%eth0`, `%25eth0` in a URL) and a CIDR prefix length
// (`/64`) written right after the address are part of the match: left out, they would stay in clear
// next to a protected address. Brackets are not part of the match.

import { isIPv6 } from 'node:net';
import { CLASS, DIGIT, HEX, LOWER, UPPER, WORD, classAt } from './chars.ts';

const LETTER = LOWER | UPPER;

const COLON = 58;
const DOT = 46;
const PERCENT = 37;
const SLASH = 47;

function isAddressChar(c: number): boolean {
  return c === COLON || c === DOT || (c < 128 && (CLASS[c] & HEX) !== 0);
}

/** A zone id character (RFC 6874 unreserved: letters, digits, `-`, `.`, `_`, `~`). */
function isZoneChar(c: number): boolean {
  return c === 45 || c === 46 || c === 126 || (c < 128 && (CLASS[c] & WORD) !== 0);
}

function countColons(text: string, from: number, to: number): number {
  let colons = 0;
  for (let i = from; i < to; i++) if (text.charCodeAt(i) === COLON) colons++;
  return colons;
}

function isAddressAt(text: string, from: number, to: number): boolean {
  return to - from >= 3 && countColons(text, from, to) >= 2 && isIPv6(text.slice(from, to));
}

/**
 * The stretch of address characters around the colon at `at`: [start, end, isAddress]. When it is
 * not an address, no other colon of the same stretch starts one either, so the caller does not
 * check them again; `end` is then the stretch's end. A stretch glued to a word on its left whose
 * part after its first colon is an address (`Node:fe80::1`, a key and its value) gives that part.
 */
export function ipv6Around(text: string, at: number): [number, number, boolean] {
  let start = at;
  while (start > 0 && at - start < 45 && isAddressChar(text.charCodeAt(start - 1))) start--;
  let end = at + 1;
  const n = text.length;
  while (end < n && end - start < 46 && isAddressChar(text.charCodeAt(end))) end++;
  // Sentence punctuation after an address is not part of it.
  while (end > at + 1 && text.charCodeAt(end - 1) === DOT) end--;
  if (classAt(text, end) & WORD) return [start, end, false];
  if (!(classAt(text, start - 1) & WORD) && isAddressAt(text, start, end)) return [start, suffixEnd(text, end), true];
  // `Node:fe80::1`, `IP:2001:db8::1`, `ip:::1`: a key of letters glued before the value (not
  // `text2001:db8::1` or `12345:db8::1`, which are no address at all).
  const afterKey = text.indexOf(':', start) + 1;
  if (afterKey < end && isLetterKeyBefore(text, afterKey - 1) && isAddressAt(text, afterKey, end)) return [afterKey, suffixEnd(text, end), true];
  return [start, end, false];
}

/** The word just before the colon at `colon` is made of letters only (a key: `Node`, `ip`). */
function isLetterKeyBefore(text: string, colon: number): boolean {
  let i = colon;
  while (i > 0 && classAt(text, i - 1) & WORD) {
    if (!(classAt(text, i - 1) & LETTER)) return false;
    i--;
  }
  return i < colon;
}

/** After an address ending at `end`: past a zone id (`%eth0`) and a prefix length (`/64`), if written. */
function suffixEnd(text: string, end: number): number {
  const n = text.length;
  if (text.charCodeAt(end) === PERCENT && end + 1 < n && isZoneChar(text.charCodeAt(end + 1))) {
    let z = end + 1;
    while (z < n && z - end <= 64 && isZoneChar(text.charCodeAt(z))) z++;
    while (text.charCodeAt(z - 1) === DOT) z--;
    if (z > end + 1) end = z;
  }
  return prefixLengthEnd(text, end, 128);
}

/**
 * After an address ending at `end`: past `/n` when it is a prefix length of at most `max` (32 for
 * IPv4, 128 for IPv6) not followed by more of a word or path (`/24`, not `/24x` or `/2/3`).
 */
export function prefixLengthEnd(text: string, end: number, max: number): number {
  if (text.charCodeAt(end) !== SLASH) return end;
  let i = end + 1;
  let value = 0;
  while (i < text.length && i - end <= 3 && classAt(text, i) & DIGIT) value = value * 10 + text.charCodeAt(i++) - 48;
  if (i === end + 1 || i - end > 4 || value > max || (i - end > 2 && text.charCodeAt(end + 1) === 48)) return end;
  if (classAt(text, i) & WORD || text.charCodeAt(i) === SLASH) return end;
  return i;
}

/**
 * The length of an address's text without its zone id and prefix length (`fe80::1%eth0/64` →
 * `fe80::1`): techniques that rewrite the address keep the suffix as written.
 */
export function addressLength(value: string): number {
  let end = value.length;
  const slash = value.lastIndexOf('/');
  if (slash > 0 && prefixLengthEnd(value, slash, 128) === value.length) end = slash;
  const percent = value.lastIndexOf('%', end);
  return percent > 0 ? percent : end;
}
