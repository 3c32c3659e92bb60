// Strict JSON (RFC 8259) read straight from the text, with the exact span of every token: what
// the JSON codec needs to replace protected values in place and leave every other byte alone. It
// accepts exactly what JSON.parse accepts (a property test holds it to that), so a document the
// gateway reads is one every strict upstream parser reads the same way; no leniency (comments,
// NaN, trailing commas, single quotes) that a lenient upstream might read differently.
// Hand-written rather than a library: it is the hot path of every JSON door (docs/performance.md).

import { DpgError } from '../../core/errors.ts';
import type { Scalar } from '../../core/types.ts';

const enum Ch {
  Tab = 9,
  Lf = 10,
  Cr = 13,
  Space = 32,
  Quote = 34,
  Plus = 43,
  Comma = 44,
  Minus = 45,
  Dot = 46,
  Slash = 47,
  Zero = 48,
  One = 49,
  Nine = 57,
  Colon = 58,
  UpperE = 69,
  LBracket = 91,
  Backslash = 92,
  RBracket = 93,
  LowerE = 101,
  LowerF = 102,
  LowerN = 110,
  LowerT = 116,
  LowerU = 117,
  LBrace = 123,
  RBrace = 125,
}

/** Limits of one read. */
export interface JsonTextLimits {
  /** Deepest nesting of objects and arrays accepted (the root container is level 1). */
  readonly maxDepth: number;
}

/** A scalar token's kind, as scalarEnd found it. */
export const ScalarKind = { String: 0, Number: 1, True: 2, False: 3, Null: 4 } as const;
export type ScalarKind = (typeof ScalarKind)[keyof typeof ScalarKind];

/** The exact JSON number grammar, for numeric text a technique hands back. */
export const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * A cursor-free reader over one JSON text: every method takes an offset and returns the offset
 * after what it read, or throws MALFORMED_DATA_SET with a line and column and a reason in our own
 * words (never the text). `what` names the document in messages ("JSON", "JSON array element 3").
 */
export class JsonText {
  readonly length: number;
  /** Set by stringEnd: the string just read holds a backslash escape. */
  hadEscape = false;
  /** Set by scalarEnd: the kind of the scalar just read. */
  kind: ScalarKind = ScalarKind.Null;

  constructor(
    readonly text: string,
    readonly limits: JsonTextLimits,
    private readonly what = 'JSON',
  ) {
    this.length = text.length;
  }

  fail(at: number, reason: string): never {
    const text = this.text;
    let line = 1;
    let lineStart = 0;
    const stop = Math.min(at, text.length);
    for (let i = text.indexOf('\n'); i !== -1 && i < stop; i = text.indexOf('\n', i + 1)) {
      line++;
      lineStart = i + 1;
    }
    throw new DpgError('MALFORMED_DATA_SET', `${this.what} does not parse at line ${line}, column ${stop - lineStart + 1}: ${reason}`);
  }

  tooDeep(at: number): never {
    return this.fail(at, `nesting is deeper than the limit of ${this.limits.maxDepth} levels`);
  }

  /** Skips the four white-space characters JSON allows. */
  ws(p: number): number {
    const text = this.text;
    for (;;) {
      const c = text.charCodeAt(p);
      if (c === Ch.Space || c === Ch.Lf || c === Ch.Cr || c === Ch.Tab) p++;
      else return p;
    }
  }

  /** The offset of the first value and, once read, checks that only white space follows it. */
  start(): number {
    const p = this.ws(0);
    if (p >= this.length) this.fail(p, this.length === 0 || this.text.trim() === '' ? 'the document is empty' : 'unexpected character');
    return p;
  }

  end(p: number): void {
    const q = this.ws(p);
    if (q < this.length) this.fail(q, 'unexpected text after the JSON value');
  }

  /** A string token starting at the quote at `p`; sets hadEscape. */
  stringEnd(p: number): number {
    const text = this.text;
    let i = p + 1;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === Ch.Quote) {
        this.hadEscape = escaped;
        return i + 1;
      }
      if (c === Ch.Backslash) {
        escaped = true;
        const e = text.charCodeAt(i + 1);
        if (e === Ch.LowerU) {
          for (let k = i + 2; k < i + 6; k++) {
            const h = text.charCodeAt(k);
            if (!((h >= 48 && h <= 57) || (h >= 65 && h <= 70) || (h >= 97 && h <= 102))) this.fail(i, 'invalid \\u escape in a string');
          }
          i += 6;
        } else if (e === Ch.Quote || e === Ch.Backslash || e === Ch.Slash || e === 98 || e === Ch.LowerF || e === Ch.LowerN || e === 114 || e === Ch.LowerT) {
          i += 2;
        } else {
          this.fail(i, 'invalid escape in a string');
        }
      } else if (c < Ch.Space || c !== c) {
        // charCodeAt past the end is NaN: the string never closed.
        this.fail(c !== c ? p : i, c !== c ? 'a string is not closed' : 'control character in a string');
      } else {
        i++;
      }
    }
  }

  numberEnd(p: number): number {
    const text = this.text;
    let i = p;
    if (text.charCodeAt(i) === Ch.Minus) i++;
    let c = text.charCodeAt(i);
    if (c === Ch.Zero) c = text.charCodeAt(++i);
    else if (c >= Ch.One && c <= Ch.Nine) {
      do c = text.charCodeAt(++i);
      while (c >= Ch.Zero && c <= Ch.Nine);
    } else this.fail(i, 'invalid number');
    if (c === Ch.Dot) {
      c = text.charCodeAt(++i);
      if (!(c >= Ch.Zero && c <= Ch.Nine)) this.fail(i, 'invalid number');
      do c = text.charCodeAt(++i);
      while (c >= Ch.Zero && c <= Ch.Nine);
    }
    if (c === Ch.LowerE || c === Ch.UpperE) {
      c = text.charCodeAt(++i);
      if (c === Ch.Plus || c === Ch.Minus) c = text.charCodeAt(++i);
      if (!(c >= Ch.Zero && c <= Ch.Nine)) this.fail(i, 'invalid number');
      do c = text.charCodeAt(++i);
      while (c >= Ch.Zero && c <= Ch.Nine);
    }
    return i;
  }

  /** A string, number, true, false or null at `p`; sets kind (and hadEscape for strings). */
  scalarEnd(p: number): number {
    const c = this.text.charCodeAt(p);
    if (c === Ch.Quote) {
      this.kind = ScalarKind.String;
      return this.stringEnd(p);
    }
    if (c === Ch.Minus || (c >= Ch.Zero && c <= Ch.Nine)) {
      this.kind = ScalarKind.Number;
      return this.numberEnd(p);
    }
    const text = this.text;
    if (c === Ch.LowerT && text.startsWith('true', p)) {
      this.kind = ScalarKind.True;
      return p + 4;
    }
    if (c === Ch.LowerF && text.startsWith('false', p)) {
      this.kind = ScalarKind.False;
      return p + 5;
    }
    if (c === Ch.LowerN && text.startsWith('null', p)) {
      this.kind = ScalarKind.Null;
      return p + 4;
    }
    return this.fail(p, p >= this.length ? 'the document ends too early' : 'unexpected character');
  }

  /** The value of a string token [start, end), escapes resolved. */
  stringValue(start: number, end: number, escaped: boolean): string {
    // The token is valid JSON already; JSON.parse resolves its escapes exactly as a parser would.
    return escaped ? (JSON.parse(this.text.slice(start, end)) as string) : this.text.slice(start + 1, end - 1);
  }

  /**
   * The value of the scalar just read by scalarEnd. Integers beyond 2^53 (and numbers beyond the
   * double range) are returned as their text, so that no digit is lost on the way to a technique.
   */
  scalarValue(start: number, end: number): Scalar {
    switch (this.kind) {
      case ScalarKind.String:
        return this.stringValue(start, end, this.hadEscape);
      case ScalarKind.Number:
        return numberValue(this.text.slice(start, end));
      case ScalarKind.True:
        return true;
      case ScalarKind.False:
        return false;
      default:
        return null;
    }
  }

  /** Reads and checks any value at `p` (nested depth `depth` for its containers); returns its end. */
  skipValue(p: number, depth: number): number {
    const c = this.text.charCodeAt(p);
    if (c === Ch.LBrace) return this.skipObject(p, depth + 1);
    if (c === Ch.LBracket) return this.skipArray(p, depth + 1);
    return this.scalarEnd(p);
  }

  /**
   * After a member or element: the offset of the next one after a `,`, or — when `closer` follows
   * instead — the bitwise complement (`~`) of the offset after the closer, a negative number.
   * (A number rather than an object: this runs once per value on the hot path.)
   */
  separator(p: number, closer: number): number {
    const q = this.ws(p);
    const c = this.text.charCodeAt(q);
    if (c === Ch.Comma) return this.ws(q + 1);
    if (c === closer) return ~(q + 1);
    return this.fail(q, q >= this.length ? 'the document ends too early' : closer === Ch.RBrace ? "expected ',' or '}'" : "expected ',' or ']'");
  }

  /** At a property name: checks the quote, reads the name and the colon; returns the value's offset. */
  memberName(q: number): number {
    if (this.text.charCodeAt(q) !== Ch.Quote) this.fail(q, q >= this.length ? 'the document ends too early' : 'expected a property name in double quotes');
    const keyEnd = this.stringEnd(q);
    const colon = this.ws(keyEnd);
    if (this.text.charCodeAt(colon) !== Ch.Colon) this.fail(colon, "expected ':' after a property name");
    return keyEnd;
  }

  /** The offset of a member's value, given the end of its name (after memberName). */
  memberValue(keyEnd: number): number {
    return this.ws(this.ws(keyEnd) + 1);
  }

  private skipObject(p: number, depth: number): number {
    if (depth > this.limits.maxDepth) this.tooDeep(p);
    let q = this.ws(p + 1);
    if (this.text.charCodeAt(q) === Ch.RBrace) return q + 1;
    for (;;) {
      const keyEnd = this.memberName(q);
      q = this.separator(this.skipValue(this.memberValue(keyEnd), depth), Ch.RBrace);
      if (q < 0) return ~q;
    }
  }

  private skipArray(p: number, depth: number): number {
    if (depth > this.limits.maxDepth) this.tooDeep(p);
    let q = this.ws(p + 1);
    if (this.text.charCodeAt(q) === Ch.RBracket) return q + 1;
    for (;;) {
      q = this.separator(this.skipValue(q, depth), Ch.RBracket);
      if (q < 0) return ~q;
    }
  }
}

/** A JSON number's value; its text when a double cannot hold it exactly (big integers, overflow). */
export function numberValue(text: string): Scalar {
  const n = Number(text);
  if (!Number.isFinite(n)) return text;
  if (!Number.isSafeInteger(n) && !/[.eE]/.test(text)) return text;
  return n;
}

/**
 * A technique's result as JSON text. A number stays a number; a string is written as a JSON
 * string — except where the input was a number handed over as text (a big integer) and the result
 * is still a JSON number, which is written bare again so the field keeps its type.
 */
export function encodeScalar(value: Scalar, numberAsText: boolean): string {
  if (typeof value === 'string') return numberAsText && JSON_NUMBER.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return 'null';
}

/** Reads and checks a whole JSON text (no protection): MALFORMED_DATA_SET with a position, or nothing. */
export function checkJsonText(text: string, limits: JsonTextLimits, what = 'JSON'): void {
  const reader = new JsonText(text, limits, what);
  reader.end(reader.skipValue(reader.start(), 0));
}

/** Where a value sits in a JSON text: [start, end). */
export interface JsonSpan {
  readonly start: number;
  readonly end: number;
}

/**
 * The span of the value of member `name` of the top-level object of `text` (keys compared after
 * their escapes are resolved, so `"data\u0053et"` is `dataSet`); undefined when there is none.
 * The whole text is checked. A name given twice is refused: readers disagree on which one wins.
 */
export function topLevelMember(text: string, name: string, limits: JsonTextLimits, what = 'JSON'): JsonSpan | undefined {
  const reader = new JsonText(text, limits, what);
  let q = reader.start();
  if (text.charCodeAt(q) !== 123) reader.fail(q, 'expected an object');
  let found: JsonSpan | undefined;
  q = reader.ws(q + 1);
  if (text.charCodeAt(q) !== 125) {
    for (;;) {
      const keyEnd = reader.memberName(q);
      const key = reader.stringValue(q, keyEnd, reader.hadEscape);
      const valueStart = reader.memberValue(keyEnd);
      const valueEnd = reader.skipValue(valueStart, 1);
      if (key === name) {
        if (found !== undefined) throw new DpgError('INVALID_REQUEST', `Field ${name} is given more than once`);
        found = { start: valueStart, end: valueEnd };
      }
      q = reader.separator(valueEnd, 125);
      if (q < 0) break;
    }
    q = ~q;
  } else q++;
  reader.end(q);
  return found;
}
