// Email addresses in RFC 5321 shape: a dot-atom local part of 1-64 characters (in free text the
// practical set letters, digits and . _ % + -; no leading, trailing or doubled dot), `@`, and a
// domain of at least two labels (letters, digits, inner hyphens, 1-63 each, 253 in all) ending in an
// alphabetic top-level label of two or more letters or an `xn--` label. Domain labels may be
// internationalised (IDN, `jane@bücher.de`, `info@пример.рф`: letters, marks and digits of any
// script) as well as their `xn--` form. Quoted local parts, address literals (`[192.0.2.1]`) and
// non-ASCII local parts are not detected.

import { CLASS, DOMAIN, LOCAL, WORD, classAt } from './chars.ts';

const MAX_LOCAL = 64;
const MAX_DOMAIN = 253;

/** The [start, end) of the address around the `@` at `at`, or undefined. */
export function emailAround(text: string, at: number): [number, number] | undefined {
  // Local part: back over local characters, then drop leading dots.
  let start = at;
  while (start > 0 && at - start <= MAX_LOCAL) {
    const c = text.charCodeAt(start - 1);
    if (c >= 128 || (CLASS[c] & LOCAL) === 0) break;
    start--;
  }
  while (start < at && text.charCodeAt(start) === 46) start++;
  const localLength = at - start;
  if (localLength === 0 || localLength > MAX_LOCAL) return undefined;
  if (classAt(text, start - 1) & WORD) return undefined;
  if (text.charCodeAt(at - 1) === 46) return undefined;
  for (let i = start + 1; i < at; i++) if (text.charCodeAt(i) === 46 && text.charCodeAt(i - 1) === 46) return undefined;

  // Domain: forward over domain characters, then drop a trailing `.` or `-` (sentence punctuation).
  const n = text.length;
  let end = at + 1;
  while (end < n && end - at <= MAX_DOMAIN + 1) {
    const c = text.charCodeAt(end);
    if (c >= 128 ? !isIdnChar(c) : (CLASS[c] & DOMAIN) === 0) break;
    end++;
  }
  while (end > at + 1 && (text.charCodeAt(end - 1) === 46 || text.charCodeAt(end - 1) === 45)) end--;
  if (classAt(text, end) & WORD || text.charCodeAt(end) === 64) return undefined;
  return domainValid(text, at + 1, end) ? [start, end] : undefined;
}

function domainValid(text: string, from: number, to: number): boolean {
  const length = to - from;
  if (length < 4 || length > MAX_DOMAIN) return false;
  let labels = 0;
  let labelStart = from;
  for (let i = from; i <= to; i++) {
    if (i < to && text.charCodeAt(i) !== 46) continue;
    const size = i - labelStart;
    if (size < 1 || size > 63) return false;
    if (text.charCodeAt(labelStart) === 45 || text.charCodeAt(i - 1) === 45) return false;
    labels++;
    if (i === to && !topLevelValid(text, labelStart, i)) return false;
    labelStart = i + 1;
  }
  return labels >= 2;
}

function topLevelValid(text: string, from: number, to: number): boolean {
  // `xn--` in any case, read without a lower-cased copy.
  if (to - from >= 4 && (text.charCodeAt(from) | 0x20) === 120 && (text.charCodeAt(from + 1) | 0x20) === 110 && text.charCodeAt(from + 2) === 45 && text.charCodeAt(from + 3) === 45) return true;
  if (to - from < 2) return false;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 ? !IDN_LETTER.test(text[i]) : (c | 0x20) < 97 || (c | 0x20) > 122) return false;
  }
  return true;
}

/** Letters and combining marks of any script: the characters of an internationalised domain label. */
const IDN_LETTER = /^[\p{L}\p{M}]$/u;
const IDN_CHAR = /^[\p{L}\p{M}\p{Nd}]$/u;

/** A non-ASCII character that may stand in a domain label (IDNA: letters, marks, digits). */
function isIdnChar(c: number): boolean {
  // Typographic spaces, dashes and quotes end a domain; the test below is only for what remains.
  if (c < 0xaa || (c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f) || (c >= 0xd800 && c <= 0xdfff) || c >= 0xfe30) return false;
  return IDN_CHAR.test(String.fromCharCode(c));
}
