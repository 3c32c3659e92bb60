// Character classes for the FF1 formats: a value's ASCII digits (radix 10) and letters (radix 26,
// case kept as an overlay) are lifted out as numerals and written back in place, so separators,
// case and length never change. Values mixing digits and letters are ranked in a mixed radix.

import type { Scalar } from '../core/types.ts';
import { MIN_DOMAIN, TOO_SHORT, type FpeJob, type TweakCache } from './fpe-core.ts';
import { ValueError } from './technique.ts';

export const DIGIT = 0;
export const LOWER = 1;
export const UPPER = 2;

/** The encryptable characters of a text, in order. */
export interface Symbols {
  readonly text: string;
  /** UTF-16 index of each symbol in `text`. */
  readonly positions: number[];
  /** 0-9 for digits, 0-25 for letters. */
  readonly values: number[];
  /** DIGIT, LOWER or UPPER per symbol. */
  readonly kinds: number[];
}

/** Lifts out the ASCII digits and/or letters of `text[start, end)`. */
export function extractSymbols(text: string, digits: boolean, letters: boolean, start = 0, end = text.length): Symbols {
  const positions: number[] = [];
  const values: number[] = [];
  const kinds: number[] = [];
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (!digits) continue;
      values.push(c - 48);
      kinds.push(DIGIT);
    } else if (c >= 97 && c <= 122) {
      if (!letters) continue;
      values.push(c - 97);
      kinds.push(LOWER);
    } else if (c >= 65 && c <= 90) {
      if (!letters) continue;
      values.push(c - 65);
      kinds.push(UPPER);
    } else {
      continue;
    }
    positions.push(i);
  }
  return { text, positions, values, kinds };
}

const BASE_CODE = [48, 97, 65];

/** Writes new symbol values back into the text, each in its kind (digit, lower or upper letter). */
export function writeSymbols(symbols: Symbols, values: ArrayLike<number>): string {
  const { text, positions, kinds } = symbols;
  let out = '';
  let from = 0;
  for (let k = 0; k < positions.length; k++) {
    const at = positions[k];
    out += text.slice(from, at) + String.fromCharCode(BASE_CODE[kinds[k]] + values[k]);
    from = at + 1;
  }
  return out + text.slice(from);
}

function radixOf(kind: number): number {
  return kind === DIGIT ? 10 : 26;
}

function bitsToBigInt(bits: ArrayLike<number>): bigint {
  let hex = '0x0';
  const lead = bits.length % 4;
  let nibble = 0;
  for (let i = 0; i < bits.length; i++) {
    nibble = (nibble << 1) | bits[i];
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

/**
 * The FF1 job for a set of symbols. One class only: FF1 directly in radix 10 or 26 (tweak = scope).
 * Digits and letters mixed: the symbols are one number in a mixed radix (domain N = product of the
 * radices), encrypted as bits with FF1 radix 2 and cycle-walked back below N; the class layout is
 * part of the tweak. Either way the domain must be at least 1,000,000.
 */
export function symbolsJob(symbols: Symbols, tweaks: TweakCache, finish: (text: string) => Scalar = (t) => t): FpeJob {
  const { kinds, values } = symbols;
  const n = kinds.length;
  if (n === 0) throw new ValueError(TOO_SHORT);
  const firstRadix = radixOf(kinds[0]);
  let uniform = true;
  let log10Domain = 0;
  for (let k = 0; k < n; k++) {
    const radix = radixOf(kinds[k]);
    if (radix !== firstRadix) uniform = false;
    log10Domain += Math.log10(radix);
  }
  if (log10Domain < 6 - 1e-9) throw new ValueError(TOO_SHORT);
  if (uniform) {
    return { radix: firstRadix, tweak: tweaks.scope, numerals: values, render: (out) => finish(writeSymbols(symbols, out)) };
  }
  let shape = '';
  let domain = 1n;
  let rank = 0n;
  for (let k = 0; k < n; k++) {
    const radix = BigInt(radixOf(kinds[k]));
    shape += kinds[k] === DIGIT ? 'D' : 'L';
    domain *= radix;
    rank = rank * radix + BigInt(values[k]);
  }
  if (domain < BigInt(MIN_DOMAIN)) throw new ValueError(TOO_SHORT);
  const bitLength = (domain - 1n).toString(2).length;
  return {
    radix: 2,
    tweak: tweaks.forShape(shape),
    numerals: bigIntToBits(rank, bitLength),
    accept: (out) => bitsToBigInt(out) < domain,
    render(out) {
      let r = bitsToBigInt(out);
      const digits = new Array<number>(n);
      for (let k = n - 1; k >= 0; k--) {
        const radix = BigInt(radixOf(kinds[k]));
        digits[k] = Number(r % radix);
        r /= radix;
      }
      return finish(writeSymbols(symbols, digits));
    },
  };
}
