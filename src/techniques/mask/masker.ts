// The character-masking engine shared by the Mask styles and Anonymise's prefix masking: which
// characters count as maskable, the rule that a mask hides at least half of them, and a fast path
// for the common ASCII case (a card number masked with keepLast 4 costs one scan and two slices).

import { ValueError } from '../technique.ts';

/**
 * What a Mask does when its options would keep more than half of a value's maskable characters
 * (`0100` with keepLast 4): `mask-more` keeps at most half (the default), `reject` fails the value.
 */
export const SHORT_MASK_POLICIES = ['mask-more', 'reject'] as const;
export type ShortMaskPolicy = (typeof SHORT_MASK_POLICIES)[number];
export const TOO_SHORT_TO_MASK = 'VALUE_TOO_SHORT_TO_MASK';

/**
 * The most characters a mask may leave visible out of `total` maskable ones: floor(total / 2), so
 * at least half are always hidden. `wanted` above it is cut down to it, or fails with `reject`.
 */
export function visibleAtMost(total: number, wanted: number, policy: ShortMaskPolicy): number {
  const most = total >>> 1;
  if (wanted <= most) return wanted;
  if (policy === 'reject') throw new ValueError(TOO_SHORT_TO_MASK);
  return most;
}

/** Which characters a mask replaces; the rest (separators) are kept in place. */
export type MaskableSet = 'alphanumeric' | 'digits' | 'all';

const WIDE_ALNUM = /^[\p{L}\p{N}\p{M}]$/u;
const WIDE_DIGIT = /^\p{Nd}$/u;

/** 1 for each ASCII code the set masks, 0 otherwise. */
export function asciiTable(set: MaskableSet): Uint8Array {
  const table = new Uint8Array(128);
  for (let c = 0; c < 128; c++) {
    const digit = c >= 48 && c <= 57;
    const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    table[c] = set === 'all' || digit || (set === 'alphanumeric' && letter) ? 1 : 0;
  }
  return table;
}

/** Tells whether a character (one code point, as a string) is maskable. */
export function maskablePredicate(set: MaskableSet): (ch: string) => boolean {
  const table = asciiTable(set);
  const wide = set === 'all' ? () => true : set === 'digits' ? (ch: string) => WIDE_DIGIT.test(ch) : (ch: string) => WIDE_ALNUM.test(ch);
  return (ch) => {
    const c = ch.charCodeAt(0);
    return c < 128 && ch.length === 1 ? table[c] === 1 : wide(ch);
  };
}

/** Repeats of one mask character, cached for the short lengths values usually have. */
export class MaskRuns {
  private readonly cache: string[] = [];

  constructor(readonly maskChar: string) {
    let run = '';
    for (let i = 0; i <= 64; i++) {
      this.cache.push(run);
      run += maskChar;
    }
  }

  of(length: number): string {
    return length < this.cache.length ? this.cache[length] : this.maskChar.repeat(length);
  }
}

export interface MaskerSpec {
  readonly set: MaskableSet;
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly maskChar: string;
  /** Default `mask-more`: see visibleAtMost. */
  readonly shortValues?: ShortMaskPolicy;
}

/**
 * Compiles a function masking every maskable character of a string except the first `keepFirst`
 * and the last `keepLast` maskable ones. Separators do not count towards those numbers. Length in
 * characters (code points) is always kept. When first + last would leave more than half of the
 * maskable characters visible, both are cut down in proportion (or the value fails, `reject`).
 */
export function compileMasker(spec: MaskerSpec): (value: string) => string {
  const policy = spec.shortValues ?? 'mask-more';
  const wanted = spec.keepFirst + spec.keepLast;
  /** keepFirst when `visible` characters may stay visible (keepLast takes the rest of them). */
  const firstFor = (visible: number): number =>
    visible === wanted ? spec.keepFirst : wanted === 0 ? 0 : Math.floor((spec.keepFirst * visible) / wanted);
  const table = asciiTable(spec.set);
  const runs = new MaskRuns(spec.maskChar);
  const isMaskable = maskablePredicate(spec.set);
  const maskCode = spec.maskChar.charCodeAt(0);
  // The byte-buffer path below needs a mask character of one code unit that latin1 can hold.
  const latin1Mask = spec.maskChar.length === 1 && maskCode < 256;

  // Code-point path for anything outside ASCII: rarer, so simpler rather than faster.
  const wideMask = (value: string): string => {
    const chars = Array.from(value);
    let total = 0;
    for (const ch of chars) if (isMaskable(ch)) total++;
    const visible = visibleAtMost(total, wanted, policy);
    const keepFirst = firstFor(visible);
    const maskTo = total - (visible - keepFirst);
    let ordinal = 0;
    for (let i = 0; i < chars.length; i++) {
      if (!isMaskable(chars[i])) continue;
      if (ordinal >= keepFirst && ordinal < maskTo) chars[i] = spec.maskChar;
      ordinal++;
    }
    return chars.join('');
  };

  return (value: string): string => {
    const n = value.length;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const c = value.charCodeAt(i);
      if (c >= 128) return wideMask(value);
      total += table[c];
    }
    const visible = visibleAtMost(total, wanted, policy);
    const keepFirst = firstFor(visible);
    const maskTo = total - (visible - keepFirst);
    if (maskTo <= keepFirst) return value;
    if (total === n) {
      // Every character is maskable (a bare card number): a cached run and one or two slices.
      const tail = runs.of(maskTo - keepFirst) + value.slice(maskTo);
      return keepFirst === 0 ? tail : value.slice(0, keepFirst) + tail;
    }
    // Mixed maskable and separator characters: write the result into one reused byte buffer and
    // read it back as a single flat string. Concatenating runs and slices instead builds a chain of
    // rope strings per value, which dominated garbage collection on large columns.
    if (!latin1Mask) return wideMask(value);
    const buf = latin1Scratch(n);
    let ordinal = 0;
    for (let i = 0; i < n; i++) {
      const c = value.charCodeAt(i);
      if (table[c] === 1) {
        buf[i] = ordinal >= keepFirst && ordinal < maskTo ? maskCode : c;
        ordinal++;
      } else buf[i] = c;
    }
    return buf.toString('latin1', 0, n);
  };
}

/** Scratch space for the ASCII path; single-threaded and fully rewritten before each read. */
const scratch = Buffer.allocUnsafe(4096);

/**
 * A byte buffer of at least `length` bytes for building one latin1 string (read it back with
 * `toString('latin1', 0, length)` before the next call: it is shared).
 */
export function latin1Scratch(length: number): Buffer {
  return length <= scratch.length ? scratch : Buffer.allocUnsafe(length);
}

/** The text a technique works on for a non-string scalar (numbers are masked as their JSON text). */
export function scalarText(value: string | number | boolean | null): string {
  if (typeof value === 'string') return value;
  if (value === null) return '';
  return String(value);
}
