// Pseudonymise, digits format: every digit FF1-encrypted (radix 10), every other character kept;
// optionally the first/last N digits kept. JSON numbers stay numbers with the same digit count.

import type { Scalar } from '../../core/types.ts';
import {
  compileFpe,
  DEFAULT_SHORT_VALUE_POLICY,
  SHORT_VALUE_POLICIES,
  TOO_SHORT,
  type AnyFpeJob,
  type FpeFormat,
  type FpeJob,
  type ShortValuePolicy,
  type TweakCache,
} from './fpe-core.ts';
import { extractSymbols, scratchDigits, writeSymbols, type Symbols } from './fpe-symbols.ts';
import { shortJob } from './fpe-short.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type Technique } from '../technique.ts';

export interface DigitsOptions {
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly shortValues: ShortValuePolicy;
}

/** Numbers are written plainly by JSON only up to 15 significant digits without loss. */
const MAX_NUMBER_DIGITS = 15;
const PLAIN_NUMBER = /^-?(\d+)(?:\.(\d+))?$/;

/** The text of a JSON number and the shape constraints its pseudonym must keep to re-parse exactly. */
export interface NumberShape {
  readonly text: string;
  /** The integer part has several digits: its first digit may not become 0. */
  readonly noLeadingZero: boolean;
  /** There is a fraction: its last digit may not become 0. */
  readonly noTrailingZero: boolean;
}

export function numberShape(value: number): NumberShape {
  const text = String(value);
  const m = PLAIN_NUMBER.exec(text);
  if (m === null || m[1].length + (m[2]?.length ?? 0) > MAX_NUMBER_DIGITS) throw new ValueError('UNSUPPORTED_NUMBER');
  return { text, noLeadingZero: m[1].length > 1, noTrailingZero: m[2] !== undefined };
}

/** Free digits FF1 needs: 10^6 = MIN_DOMAIN, SP 800-38G's minimum domain. */
export const MIN_FF1_DIGITS = 6;

/**
 * Where digit number `ordinal` (0-based) of a text sits, or the text's length past the last one:
 * the bounds of the region of free digits the short-value scheme rewrites.
 */
export function digitPosition(text: string, ordinal: number): number {
  let seen = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57 && seen++ === ordinal) return i;
  }
  return text.length;
}

/** The most digits the short-value scheme takes, and so the most its pseudonyms have (10^5 < 10^6). */
const MAX_SHORT_DIGITS = MIN_FF1_DIGITS - 1;

/** Tweak label of the plain-digits path's short values (fpe-short.ts ShortRegion.tweakLabel). */
const PLAIN = 'plain:';

/**
 * The most digits a value may have and still be pseudonymised as **plain digits** (every digit
 * encrypted, none kept, no Luhn digit) by a format that keeps `kept` digits around the ones it
 * encrypts (keepFirst + keepLast, plus a card's Luhn digit). A value with no free digit must take
 * this path, or nothing in it would be encrypted. Reconstruct picks the path from the digit count
 * alone, so each path must map its own digit counts onto themselves: plain values of up to 5 digits
 * take the short-value scheme, whose pseudonyms have 1 to 5 digits, longer ones FF1, which keeps
 * the count. A format keeping 5 digits or more therefore sends exactly the values without a free
 * digit this way. One keeping fewer (1 to 4) sends every value with fewer than 6 free digits this
 * way: pseudonyms of the kept-digits short path (1 to 5 free digits) would otherwise overlap the
 * plain pseudonyms of up to 5 digits. Nothing kept: 0 (the usual path already encrypts every digit).
 */
export function plainDigitLimit(kept: number): number {
  if (kept === 0) return 0;
  return kept >= MAX_SHORT_DIGITS ? kept : kept + MAX_SHORT_DIGITS;
}

/**
 * Every digit of the value encrypted, nothing kept: the short-value scheme over the whole text up
 * to 5 digits (its own tweaks, see PLAIN), FF1 from 6. See plainDigitLimit for who comes here.
 */
export function plainDigitsJob(value: Scalar, text: string, shape: NumberShape | undefined, symbols: Symbols, tweaks: TweakCache): AnyFpeJob {
  const total = symbols.values.length;
  if (total <= MAX_SHORT_DIGITS) {
    return shortJob({ text, start: 0, end: text.length, classes: 'digits', isNumber: shape !== undefined, tweakLabel: PLAIN }, value, tweaks);
  }
  return ff1DigitsJob(tweaks, symbols, 0, total, shape);
}

/**
 * FF1 over the digits of a text (or of a JSON number's text), keeping `keepFirst`/`keepLast` digits.
 * Fewer than 6 free digits: VALUE_TOO_SHORT_FOR_FPE, or with `short` the plain-digits path
 * (plainDigitLimit) or the short-value scheme over the text between the kept digits.
 */
export function digitsJob(value: Scalar, keepFirst: number, keepLast: number, tweaks: TweakCache, short = false): AnyFpeJob {
  let text: string;
  let shape: NumberShape | undefined;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number') text = (shape = numberShape(value)).text;
  else throw new ValueError(TOO_SHORT);
  const symbols = extractSymbols(text, true, false);
  const total = symbols.values.length;
  const end = total - keepLast;
  if (end - keepFirst < MIN_FF1_DIGITS) {
    if (!short) throw new ValueError(TOO_SHORT);
    // Every value without a free digit goes this way (a value without any digit stays as it is).
    if (total <= plainDigitLimit(keepFirst + keepLast)) return plainDigitsJob(value, text, shape, symbols, tweaks);
    const start = keepFirst === 0 ? 0 : digitPosition(text, keepFirst - 1) + 1;
    const stop = keepLast === 0 ? text.length : digitPosition(text, end);
    return shortJob({ text, start, end: stop, classes: 'digits', isNumber: shape !== undefined }, value, tweaks);
  }
  return ff1DigitsJob(tweaks, symbols, keepFirst, end, shape);
}

/** FF1 over digits[keepFirst, end) of a value of at least 6 such digits. */
function ff1DigitsJob(tweaks: TweakCache, symbols: Symbols, keepFirst: number, end: number, shape: NumberShape | undefined): FpeJob {
  // Cycle walking keeps a number's pseudonym free of a leading or trailing zero it would lose.
  const needLead = shape?.noLeadingZero === true && keepFirst === 0;
  const needTrail = shape?.noTrailingZero === true && end === symbols.values.length;
  const isNumber = shape !== undefined;
  return needLead || needTrail
    ? new ShapedDigitsJob(tweaks.scope, symbols, keepFirst, end, isNumber, needLead, needTrail)
    : new DigitsJob(tweaks.scope, symbols, keepFirst, end, isNumber);
}

// A class rather than an object of closures: a batch plans one small object per value.
class DigitsJob implements FpeJob {
  readonly radix = 10;
  readonly length: number;

  constructor(
    readonly tweak: Uint8Array,
    private readonly symbols: Symbols,
    private readonly keepFirst: number,
    end: number,
    private readonly isNumber: boolean,
  ) {
    this.length = end - keepFirst;
  }

  writeNumerals(into: Uint16Array, at: number): void {
    const digits = this.symbols.values;
    for (let k = 0; k < this.length; k++) into[at + k] = digits[this.keepFirst + k];
  }

  render(out: Uint16Array, at: number): Scalar {
    const digits = this.symbols.values;
    const values = scratchDigits(digits.length);
    const from = this.keepFirst;
    const to = from + this.length;
    for (let k = 0; k < digits.length; k++) values[k] = k >= from && k < to ? out[at + k - from] : digits[k];
    const result = writeSymbols(this.symbols, values);
    return this.isNumber ? Number(result) : result;
  }
}

/** A JSON number whose first or last digit is encrypted: walked so it keeps its digit count. */
class ShapedDigitsJob extends DigitsJob {
  constructor(
    tweak: Uint8Array,
    symbols: Symbols,
    keepFirst: number,
    end: number,
    isNumber: boolean,
    private readonly needLead: boolean,
    private readonly needTrail: boolean,
  ) {
    super(tweak, symbols, keepFirst, end, isNumber);
  }

  accept(out: Uint16Array, at: number): boolean {
    return !(this.needLead && out[at] === 0) && !(this.needTrail && out[at + this.length - 1] === 0);
  }
}

export function readDigitsOptions(raw: Readonly<Record<string, unknown>>, format: string): DigitsOptions {
  const reader = new OptionReader(raw, ['format', 'keepFirst', 'keepLast', 'shortValues'], { name: 'format', value: format });
  return {
    keepFirst: reader.integer('keepFirst', { min: 0, max: 4096, default: 0 }),
    keepLast: reader.integer('keepLast', { min: 0, max: 4096, default: 0 }),
    shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY),
  };
}

export function digitsFormat(options: DigitsOptions): FpeFormat {
  return {
    plan: (value, tweaks, short) => digitsJob(value, options.keepFirst, options.keepLast, tweaks, short),
    explain: () => `keepFirst=${options.keepFirst}, keepLast=${options.keepLast}`,
  };
}

export const fpeDigitsTechnique: Technique<DigitsOptions> = {
  id: 'fpe-digits',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,
  validate: (raw) => readDigitsOptions(raw, 'digits'),
  compile: (options) => compileFpe('fpe-digits', digitsFormat(options), options.shortValues),
};
