// One lookup table of ASCII character classes shared by the detectors' single pass.

export const DIGIT = 1;
export const UPPER = 2;
export const LOWER = 4;
/** Letters, digits and `_`: a detected value never starts or ends next to one. */
export const WORD = 8;
/** Characters the scanner accepts in an email local part found in text. */
export const LOCAL = 16;
/** Letters, digits, `.` and `-`: an email domain. */
export const DOMAIN = 32;
export const HEX = 64;

export const CLASS: Uint8Array = (() => {
  const t = new Uint8Array(128);
  for (let c = 48; c <= 57; c++) t[c] = DIGIT | WORD | LOCAL | DOMAIN | HEX;
  for (let c = 65; c <= 90; c++) t[c] = UPPER | WORD | LOCAL | DOMAIN | (c <= 70 ? HEX : 0);
  for (let c = 97; c <= 122; c++) t[c] = LOWER | WORD | LOCAL | DOMAIN | (c <= 102 ? HEX : 0);
  t[95] |= WORD | LOCAL; // _
  for (const ch of '.%+-') t[ch.charCodeAt(0)] |= LOCAL;
  t[46] |= DOMAIN; // .
  t[45] |= DOMAIN; // -
  return t;
})();

/** The class bits of the character at i (0 outside the text or beyond ASCII). */
export function classAt(text: string, i: number): number {
  if (i < 0 || i >= text.length) return 0;
  const c = text.charCodeAt(i);
  return c < 128 ? CLASS[c] : 0;
}

/** True when a detected value may start at `start` (nothing word-like just before it). */
export function boundaryBefore(text: string, start: number): boolean {
  return (classAt(text, start - 1) & WORD) === 0;
}

/** True when a detected value may end at `end` (nothing word-like just after it). */
export function boundaryAfter(text: string, end: number): boolean {
  return (classAt(text, end) & WORD) === 0;
}

/**
 * Spaces people (and word processors) put between digit groups: space, no-break space, the
 * typographic spaces U+2000-U+200A (figure, thin, hair…), narrow no-break space, medium mathematical
 * space, ideographic space.
 */
export function isGroupSpace(c: number): boolean {
  if (c === 32 || c === 0xa0) return true;
  return c >= 0x2000 && (c <= 0x200a || c === 0x202f || c === 0x205f || c === 0x3000);
}

/** Dashes between digit groups: `-`, hyphen, non-breaking hyphen, figure/en/em dash, minus sign, small and fullwidth hyphen-minus. */
export function isGroupDash(c: number): boolean {
  if (c === 45) return true;
  return c >= 0x2010 && ((c <= 0x2014) || c === 0x2212 || c === 0xfe63 || c === 0xff0d);
}
