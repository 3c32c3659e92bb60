// XML character data in and out: decoding references and line ends into the value a technique
// sees, escaping a protected value back, and locating a leaf element's value inside its content.
// Input here has already passed the scanner, so references are known to be valid.

import { isXmlSpace } from './scanner.ts';
import { keptWriting } from '../kept-writing.ts';

const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' };

function decodeReference(raw: string, amp: number, semi: number): string {
  if (raw.charCodeAt(amp + 1) === 35 /* # */) {
    const hex = raw.charCodeAt(amp + 2) === 120; /* x */
    return String.fromCodePoint(Number.parseInt(raw.slice(amp + (hex ? 3 : 2), semi), hex ? 16 : 10));
  }
  return PREDEFINED[raw.slice(amp + 1, semi)] ?? '';
}

const ATTRIBUTE_SPECIAL = /[&\r\n\t]/;
const TEXT_DECODE_SPECIAL = /[&\r]/;

/**
 * Character data as a parser reports it: references decoded, CRLF and lone CR read as LF
 * (XML 1.0 §2.11). `inAttribute` also applies attribute-value normalisation (§3.3.3): literal tab,
 * LF and CR become spaces; characters written as references are kept.
 */
export function decodeCharacterData(raw: string, inAttribute: boolean): string {
  if (!(inAttribute ? ATTRIBUTE_SPECIAL : TEXT_DECODE_SPECIAL).test(raw)) return raw;
  let out = '';
  let from = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 38 /* & */) {
      const semi = raw.indexOf(';', i);
      out += raw.slice(from, i) + decodeReference(raw, i, semi);
      i = semi;
      from = semi + 1;
    } else if (c === 13 /* \r */) {
      out += raw.slice(from, i) + (inAttribute ? ' ' : '\n');
      if (raw.charCodeAt(i + 1) === 10) i++;
      from = i + 1;
    } else if (inAttribute && (c === 10 || c === 9)) {
      out += raw.slice(from, i) + ' ';
      from = i + 1;
    }
  }
  return out + raw.slice(from);
}

/**
 * Where each character of decodeCharacterData(raw, …) was written in `raw` (attribute normalisation
 * maps one character to one): entry i is the start of
 * character i's writing, the last entry raw's length (a reference or a CRLF is one character
 * written with several; a reference beyond U+FFFF is two characters, both starting at its `&`).
 */
function writtenAt(raw: string): number[] {
  const at: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    at.push(i);
    if (c === 38 /* & */) {
      const semi = raw.indexOf(';', i);
      if (decodeReference(raw, i, semi).length === 2) at.push(i);
      i = semi;
    } else if (c === 13 /* \r */ && raw.charCodeAt(i + 1) === 10) i++;
  }
  at.push(raw.length);
  return at;
}

/**
 * The edit writing `replacement` over the character data `raw` (which reads as `value`): only the
 * changed characters are rewritten, escaped (kept-writing.ts); the others stay exactly as sent (a
 * raw `>`, a reference, a CRLF). [from, to) of raw, and the text to write there.
 */
export function changedStretch(raw: string, value: string, replacement: string, escape: (s: string) => string): [number, number, string] {
  const at = writtenAt(raw);
  // Not the reading of raw (a blank element's layout, read as no value): written whole.
  if (at.length !== value.length + 1) return [0, raw.length, escape(replacement)];
  return keptWriting(raw, at, value, replacement, escape);
}

const TEXT_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#13;' };
const ATTRIBUTE_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '"': '&quot;',
  "'": '&apos;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

/** A value as element text: `&`, `<`, `>` and CR escaped so a parser reads back exactly `value`. */
export function escapeText(value: string): string {
  return TEXT_SPECIAL.test(value) ? value.replace(TEXT_SPECIALS, (c) => TEXT_ESCAPES[c]) : value;
}

const TEXT_SPECIAL = /[&<>\r]/;
const TEXT_SPECIALS = /[&<>\r]/g;

/**
 * A value inside an attribute delimited by `quote`: the quote, `&`, `<`, and whitespace that
 * normalisation would otherwise turn into spaces are escaped.
 */
export function escapeAttribute(value: string, quote: '"' | "'"): string {
  const [test, pattern] = quote === '"' ? DOUBLE_QUOTED : SINGLE_QUOTED;
  return test.test(value) ? value.replace(pattern, (c) => ATTRIBUTE_ESCAPES[c]) : value;
}

const DOUBLE_QUOTED = [/[&<"\t\n\r]/, /[&<"\t\n\r]/g] as const;
const SINGLE_QUOTED = [/[&<'\t\n\r]/, /[&<'\t\n\r]/g] as const;

/** CDATA content as a parser reports it: only line ends are normalised. */
function normaliseLineEnds(raw: string): string {
  return raw.indexOf('\r') === -1 ? raw : raw.replace(/\r\n?/g, '\n');
}

/** One piece of character data between markup: a text run or a CDATA section. */
export interface ContentPiece {
  /** Decoded value (references decoded, line ends normalised). */
  readonly value: string;
  /** The span its value occupies: the raw text run, or the inside of the CDATA section. */
  readonly start: number;
  readonly end: number;
  readonly cdata: boolean;
}

/** The value of a leaf element and the span of the original text it occupies. */
export interface LeafContent {
  /** Decoded value: text with references decoded plus CDATA content; comments and PIs skipped. */
  readonly value: string;
  /** The span to replace: the content without its leading and trailing whitespace (all of it when blank). */
  readonly start: number;
  readonly end: number;
  /** The span holds a CDATA section: a replacement is written as CDATA when it safely can be. */
  readonly cdata: boolean;
  /**
   * When comments, processing instructions or CDATA sections split the value: its pieces in order
   * (text runs and CDATA contents; the markup between them is not part of any). Readers differ on
   * what the value is — DOM and SAX readers see each piece, ElementTree the joined text — so a
   * replacement is written piece by piece and the markup stays where it was.
   */
  readonly pieces?: readonly ContentPiece[];
}

/**
 * Reads the content start..end of an element without child elements. Whitespace around the value
 * (indentation) is not part of it; whitespace inside CDATA or written as a reference is.
 */
export function readLeafContent(input: string, start: number, end: number): LeafContent {
  let s = start;
  while (s < end && isXmlSpace(input.charCodeAt(s))) s++;
  if (s === end) return { value: '', start, end, cdata: false };
  let e = end;
  while (isXmlSpace(input.charCodeAt(e - 1))) e--;
  let lt = input.indexOf('<', s);
  if (lt === -1 || lt >= e) return { value: decodeCharacterData(input.slice(s, e), false), start: s, end: e, cdata: false };

  const pieces: ContentPiece[] = [];
  let p = s;
  while (p < e) {
    if (lt === -1 || lt > e) lt = e;
    if (lt > p) pieces.push({ value: decodeCharacterData(input.slice(p, lt), false), start: p, end: lt, cdata: false });
    if (lt >= e) break;
    if (input.startsWith('<![CDATA[', lt)) {
      const close = input.indexOf(']]>', lt + 9);
      pieces.push({ value: normaliseLineEnds(input.slice(lt + 9, close)), start: lt + 9, end: close, cdata: true });
      p = close + 3;
    } else if (input.startsWith('<!--', lt)) {
      p = input.indexOf('-->', lt + 4) + 3;
    } else {
      p = input.indexOf('?>', lt + 2) + 2; // processing instruction
    }
    lt = input.indexOf('<', p);
  }
  let value = '';
  for (const piece of pieces) value += piece.value;
  const cdata = pieces.some((piece) => piece.cdata);
  // A lone CDATA section (`<a><![CDATA[…]]></a>`) is one value written one way: no pieces needed.
  if (pieces.length === 1 && e - s === pieces[0].end - pieces[0].start + 12) return { value, start: s, end: e, cdata };
  return { value, start: s, end: e, cdata, pieces };
}
