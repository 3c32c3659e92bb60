// Character classes for the FF1 formats: a value's ASCII digits (radix 10) and letters (radix 26,
// case kept as an overlay) are lifted out as numerals and written back in place, so separators,
// case and length never change. Values mixing digits and letters are ranked in a mixed radix.

import type { Scalar } from '../../core/types.ts';
import { MIN_DOMAIN, TOO_SHORT, type AnyFpeJob, type FpeJob, type FpeNumberJob, type TweakCache } from './fpe-core.ts';
import { shortJob } from './fpe-short.ts';
import { ValueError } from '../technique.ts';

export const DIGIT = 0;
export const LOWER = 1;
export const UPPER = 2;

/** Where the symbols of a text are: its ASCII digits and/or letters inside text[start, end). */
export interface SymbolSpan {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly digits: boolean;
  readonly letters: boolean;
}

/**
 * The encryptable characters of a span, in order. Only their values are stored: where they sit and
 * which kind each is follow from the text itself (symbols keep their kind).
 */
export interface Symbols extends SymbolSpan {
  /** 0-9 for digits, 0-25 for letters. */
  readonly values: number[];
}

/** DIGIT, LOWER or UPPER for a symbol character, -1 for anything else (or a class not lifted). */
function kindOf(c: number, digits: boolean, letters: boolean): number {
  if (c >= 48 && c <= 57) return digits ? DIGIT : -1;
  if (c >= 97 && c <= 122) return letters ? LOWER : -1;
  if (c >= 65 && c <= 90) return letters ? UPPER : -1;
  return -1;
}

const BASE_CODE = [48, 97, 65];

/** Lifts out the ASCII digits and/or letters of `text[start, end)`. */
export function extractSymbols(text: string, digits: boolean, letters: boolean, start = 0, end = text.length): Symbols {
  // Counted first so the array is allocated once at its size (pushing grows it several times).
  let count = 0;
  for (let i = start; i < end; i++) if (kindOf(text.charCodeAt(i), digits, letters) >= 0) count++;
  const values = new Array<number>(count);
  for (let i = start, k = 0; k < count; i++) {
    const c = text.charCodeAt(i);
    const kind = kindOf(c, digits, letters);
    if (kind >= 0) values[k++] = c - BASE_CODE[kind];
  }
  return { text, start, end, digits, letters, values };
}

/** Texts up to this length are built with one String.fromCharCode call (argument count limit). */
const ONE_CALL_LENGTH = 8192;
/** Char-code arrays reused per text length: rendering is synchronous, so one array per length serves all. */
const REUSED_LENGTH = 256;
const codeArrays: number[][] = [];

function codeArray(n: number): number[] {
  if (n > REUSED_LENGTH) return new Array<number>(n);
  let codes = codeArrays[n];
  if (codes === undefined) codeArrays[n] = codes = new Array<number>(n).fill(0);
  return codes;
}

/**
 * Writes new symbol values (values[at, at + symbol count)) back into the text, each in its kind
 * (digit, lower or upper letter). Built from char codes in one go: concatenating per symbol made
 * dozens of intermediate strings per value.
 */
export function writeSymbols(span: SymbolSpan, values: ArrayLike<number>, at = 0): string {
  const { text, start, end, digits, letters } = span;
  const n = text.length;
  const codes = codeArray(n);
  for (let i = 0; i < start; i++) codes[i] = text.charCodeAt(i);
  for (let i = start, k = at; i < end; i++) {
    const c = text.charCodeAt(i);
    const kind = kindOf(c, digits, letters);
    codes[i] = kind < 0 ? c : BASE_CODE[kind] + values[k++];
  }
  for (let i = end; i < n; i++) codes[i] = text.charCodeAt(i);
  if (n <= ONE_CALL_LENGTH) return String.fromCharCode.apply(null, codes);
  let out = '';
  for (let i = 0; i < n; i += ONE_CALL_LENGTH) out += String.fromCharCode.apply(null, codes.slice(i, i + ONE_CALL_LENGTH));
  return out;
}

function bitsToBigInt(bits: ArrayLike<number>, at: number, length: number): bigint {
  let hex = '0x0';
  const lead = length % 4;
  let nibble = 0;
  for (let i = 0; i < length; i++) {
    nibble = (nibble << 1) | bits[at + i];
    if ((i + 1 - lead) % 4 === 0) {
      hex += nibble.toString(16);
      nibble = 0;
    }
  }
  return BigInt(hex);
}

function bigIntToBits(value: bigint, length: number): Uint16Array {
  const bits = new Uint16Array(length);
  const binary = value.toString(2);
  for (let i = 0; i < binary.length; i++) bits[length - binary.length + i] = binary.charCodeAt(i) - 48;
  return bits;
}

const TWO_32 = 4294967296;

/** Bit length of an integer 1 <= x < 2^53 (what BigInt's toString(2).length gives), without strings. */
function bitLength(x: number): number {
  const high = Math.floor(x / TWO_32);
  return high > 0 ? 64 - Math.clz32(high) : 32 - Math.clz32(x);
}

// Symbol values of the text being rendered; rendering is synchronous, so one scratch serves all.
let digitScratch = new Uint8Array(64);

/** A scratch array for at least `length` symbol values (0-25), valid until the next call. */
export function scratchDigits(length: number): Uint8Array {
  if (digitScratch.length < length) digitScratch = new Uint8Array(length);
  return digitScratch;
}

const keepText = (text: string): string => text;

// The same doubles Math.log10 gives, summed in the same order: the threshold test is unchanged.
const LOG10_10 = Math.log10(10);
const LOG10_26 = Math.log10(26);

/**
 * A text's symbols as an FF1 job. Jobs are classes holding only the span, not objects of closures
 * over extracted arrays: planning a value then costs one small object, which matters when a batch
 * plans tens of thousands of values. The numerals are read from the text when FF1 needs them.
 */
abstract class SpanJob implements SymbolSpan {

  constructor(
    readonly text: string,
    readonly start: number,
    readonly end: number,
    readonly digits: boolean,
    readonly letters: boolean,
    protected readonly finish: (text: string) => Scalar,
  ) {}
}

/** One class only: FF1 directly over the symbols in radix 10 or 26. */
class UniformJob extends SpanJob implements FpeJob {
  constructor(
    span: SymbolSpan,
    readonly radix: number,
    readonly tweak: Uint8Array,
    readonly length: number,
    finish: (text: string) => Scalar,
  ) {
    super(span.text, span.start, span.end, span.digits, span.letters, finish);
  }

  writeNumerals(into: Uint16Array, at: number): void {
    const { text, digits, letters } = this;
    for (let i = this.start, k = at; i < this.end; i++) {
      const c = text.charCodeAt(i);
      const kind = kindOf(c, digits, letters);
      if (kind >= 0) into[k++] = c - BASE_CODE[kind];
    }
  }

  render(out: Uint16Array, at: number): Scalar {
    return this.finish(writeSymbols(this, out, at));
  }
}

/**
 * Mixed classes with a domain of at most 2^52 (so at most 15 symbols): the rank is an exact double
 * and FF1 (radix 2, one numeral per bit) works on it as a number, no bit array and no BigInt. The
 * class layout is a number: a leading 1, then one bit per symbol (1 = digit).
 */
class MixedJob extends SpanJob implements FpeNumberJob {
  readonly radix = 2;
  readonly length: number;

  constructor(
    span: SymbolSpan,
    readonly tweak: Uint8Array,
    private readonly layout: number,
    private readonly domain: number,
    readonly rank: number,
    finish: (text: string) => Scalar,
  ) {
    super(span.text, span.start, span.end, span.digits, span.letters, finish);
    this.length = bitLength(domain - 1);
  }

  acceptRank(rank: number): boolean {
    return rank < this.domain;
  }

  renderRank(rank: number): Scalar {
    const { layout } = this;
    const n = 31 - Math.clz32(layout);
    const values = scratchDigits(n);
    for (let k = n - 1; k >= 0; k--) {
      const radix = (layout >>> (n - 1 - k)) & 1 ? 10 : 26;
      // rank < 2^52 and radix <= 26: the floating quotient is exact, no slow floating `%` needed.
      const q = Math.floor(rank / radix);
      values[k] = rank - q * radix;
      rank = q;
    }
    return this.finish(writeSymbols(this, values));
  }
}

/** Mixed classes with a domain above 2^52: the same ranking in BigInt, FF1 on the bits. */
class BigMixedJob extends SpanJob implements FpeJob {
  readonly radix = 2;
  readonly tweak: Uint8Array;
  readonly length: number;
  readonly #bits: Uint16Array;
  readonly #domain: bigint;
  /** 'D' or 'L' per symbol: its radix. */
  readonly #shape: string;

  constructor(span: Symbols, shape: string, tweaks: TweakCache, finish: (text: string) => Scalar) {
    super(span.text, span.start, span.end, span.digits, span.letters, finish);
    let domain = 1n;
    let rank = 0n;
    for (let k = 0; k < shape.length; k++) {
      const radix = BigInt(shapeRadix(shape, k));
      domain *= radix;
      rank = rank * radix + BigInt(span.values[k]);
    }
    this.#bits = bigIntToBits(rank, (domain - 1n).toString(2).length);
    this.length = this.#bits.length;
    this.#domain = domain;
    this.#shape = shape;
    this.tweak = tweaks.forShape(shape);
  }

  writeNumerals(into: Uint16Array, at: number): void {
    into.set(this.#bits, at);
  }

  accept(out: Uint16Array, at: number): boolean {
    return bitsToBigInt(out, at, this.length) < this.#domain;
  }

  render(out: Uint16Array, at: number): Scalar {
    const shape = this.#shape;
    let r = bitsToBigInt(out, at, this.length);
    const values = scratchDigits(shape.length);
    for (let k = shape.length - 1; k >= 0; k--) {
      const radix = BigInt(shapeRadix(shape, k));
      values[k] = Number(r % radix);
      r /= radix;
    }
    return this.finish(writeSymbols(this, values));
  }
}

function shapeRadix(shape: string, k: number): number {
  return shape.charCodeAt(k) === 68 /* D */ ? 10 : 26;
}

/**
 * The FF1 job for the symbols of a span. One class only: FF1 directly in radix 10 or 26 (tweak =
 * scope). Digits and letters mixed: the symbols are one number in a mixed radix (domain N = product
 * of the radices), encrypted as bits with FF1 radix 2 and cycle-walked back below N; the class
 * layout is part of the tweak. Either way the domain must be at least 1,000,000; below it the value
 * fails with VALUE_TOO_SHORT_FOR_FPE, or with `short` takes the short-value scheme (fpe-short.ts).
 */
export function symbolsJob(span: SymbolSpan, tweaks: TweakCache, finish: (text: string) => string = keepText, short = false): AnyFpeJob {
  const { text, start, end, digits, letters } = span;
  let n = 0;
  let firstRadix = 0;
  let uniform = true;
  let log10Domain = 0;
  // Doubles are exact while the domain stays within 2^53; past it the (rounded) product stays
  // above 2^52, so the test below still picks the BigInt path reliably. `layout` is only used
  // then too (at most 15 symbols); it stops growing at 30 so it stays a small integer.
  let domain = 1;
  let rank = 0;
  let layout = 1;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    const kind = kindOf(c, digits, letters);
    if (kind < 0) continue;
    const radix = kind === DIGIT ? 10 : 26;
    if (n++ === 0) firstRadix = radix;
    else if (radix !== firstRadix) uniform = false;
    log10Domain += radix === 10 ? LOG10_10 : LOG10_26;
    domain *= radix;
    rank = rank * radix + (c - BASE_CODE[kind]);
    if (n <= 30) layout = layout * 2 + (kind === DIGIT ? 1 : 0);
  }
  if (n === 0 || log10Domain < 6 - 1e-9) {
    if (!short) throw new ValueError(TOO_SHORT);
    const classes = digits && letters ? 'alnum' : digits ? 'digits' : 'letters';
    return shortJob({ text, start, end, classes, finish }, text, tweaks);
  }
  if (uniform) return new UniformJob(span, firstRadix, tweaks.scope, n, finish);
  if (domain <= 2 ** 52) {
    if (domain < MIN_DOMAIN) throw new ValueError(TOO_SHORT);
    return new MixedJob(span, tweaks.forLayout(layout), layout, domain, rank, finish);
  }
  const symbols = extractSymbols(text, digits, letters, start, end);
  let shape = '';
  for (let i = start; i < end; i++) {
    const kind = kindOf(text.charCodeAt(i), digits, letters);
    if (kind >= 0) shape += kind === DIGIT ? 'D' : 'L';
  }
  return new BigMixedJob(symbols, shape, tweaks, finish);
}
