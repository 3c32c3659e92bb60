// Pseudonymise, card format: the middle digits FF1-encrypted, the last 4 (and optionally the first
// N) kept, separators kept, and the Luhn check still holding. One free digit is not encrypted but
// recomputed so the Luhn sum keeps its residue: valid stays valid, reversibly, with no cycle walking.
// A value too short for that (no digit left to encrypt) is pseudonymised as plain digits instead.

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
import { digitPosition, MIN_FF1_DIGITS, numberShape, plainDigitLimit, plainDigitsJob, type NumberShape } from './digits.ts';
import { extractSymbols, scratchDigits, writeSymbols, type Symbols } from './fpe-symbols.ts';
import { shortJob } from './fpe-short.ts';
import { OptionReader } from '../option-reader.ts';
import { TechniqueOptionError, ValueError, type Technique } from '../technique.ts';

/** A card's issuer identification number (BIN): its first six digits. */
const BIN_DIGITS = 6;

export interface CardOptions {
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly shortValues: ShortValuePolicy;
}

// Luhn contribution of a digit, plain or doubled, and the digit giving each contribution.
const DOUBLED = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
const UNDOUBLED_FROM = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const DOUBLED_FROM = [0, 5, 1, 6, 2, 7, 3, 8, 4, 9];

/** Luhn sum mod 10 of digits[0, n), skipping index `skip`; the rightmost digit is never doubled. */
function luhnResidue(digits: ArrayLike<number>, skip = -1, n = digits.length): number {
  let sum = 0;
  for (let i = 0; i < n; i++) {
    if (i === skip) continue;
    sum += (n - 1 - i) % 2 === 1 ? DOUBLED[digits[i]] : digits[i];
  }
  return sum % 10;
}

export function isLuhnValid(text: string): boolean {
  const digits = extractSymbols(text, true, false).values;
  return digits.length > 0 && luhnResidue(digits) === 0;
}

/**
 * The text with its Luhn digit (the last free one, just before the kept tail) set so the Luhn sum
 * has `residue`: how a short card keeps its validity whatever its new length.
 */
function withLuhnResidue(text: string, keepLast: number, residue: number): string {
  const digits = extractSymbols(text, true, false).values;
  const n = digits.length;
  const fix = n - keepLast - 1;
  const wanted = (residue - luhnResidue(digits, fix, n) + 10) % 10;
  const digit = ((n - 1 - fix) % 2 === 1 ? DOUBLED_FROM : UNDOUBLED_FROM)[wanted];
  const at = digitPosition(text, fix);
  return text.slice(0, at) + String.fromCharCode(48 + digit) + text.slice(at + 1);
}

function cardJob(value: Scalar, options: CardOptions, tweaks: TweakCache, short: boolean): AnyFpeJob {
  let text: string;
  let shape: NumberShape | undefined;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number') {
    shape = numberShape(value);
    if (!Number.isInteger(value) || value < 0) throw new ValueError('UNSUPPORTED_NUMBER');
    text = shape.text;
  } else throw new ValueError(TOO_SHORT);
  const symbols = extractSymbols(text, true, false);
  const digits = symbols.values;
  const n = digits.length;
  const fix = n - options.keepLast - 1;
  // The fixed-up digit carries no key-dependent information: FF1 runs on the other free digits.
  if (fix - options.keepFirst < MIN_FF1_DIGITS) {
    if (!short) throw new ValueError(TOO_SHORT);
    // Too short to keep its kept digits and Luhn digit around an encrypted one (`1111`, `12345`
    // with keepLast 4): pseudonymised as plain digits, nothing kept (digits.ts plainDigitLimit).
    if (n <= plainDigitLimit(options.keepFirst + options.keepLast + 1)) return plainDigitsJob(value, text, shape, symbols, tweaks);
    const residue = luhnResidue(digits);
    const start = options.keepFirst === 0 ? 0 : digitPosition(text, options.keepFirst - 1) + 1;
    const finish = (out: string) => withLuhnResidue(out, options.keepLast, residue);
    return shortJob({ text, start, end: digitPosition(text, fix), classes: 'digits', finish, isNumber: shape !== undefined }, value, tweaks);
  }
  const needLead = shape !== undefined && options.keepFirst === 0;
  return needLead ? new LeadingCardJob(tweaks.scope, symbols, options.keepFirst, fix, true) : new CardJob(tweaks.scope, symbols, options.keepFirst, fix, shape !== undefined);
}

// A class rather than an object of closures: a batch plans one small object per value.
class CardJob implements FpeJob {
  readonly radix = 10;
  readonly length: number;
  readonly #residue: number;

  constructor(
    readonly tweak: Uint8Array,
    private readonly symbols: Symbols,
    private readonly keepFirst: number,
    /** Index of the digit recomputed for the Luhn sum. */
    private readonly fix: number,
    private readonly isNumber: boolean,
  ) {
    this.length = fix - keepFirst;
    this.#residue = luhnResidue(symbols.values);
  }

  writeNumerals(into: Uint16Array, at: number): void {
    const digits = this.symbols.values;
    for (let k = 0; k < this.length; k++) into[at + k] = digits[this.keepFirst + k];
  }

  render(out: Uint16Array, at: number): Scalar {
    const { fix, keepFirst } = this;
    const digits = this.symbols.values;
    const n = digits.length;
    const result = scratchDigits(n);
    for (let k = 0; k < n; k++) result[k] = k >= keepFirst && k < fix ? out[at + k - keepFirst] : digits[k];
    const wanted = (this.#residue - luhnResidue(result, fix, n) + 10) % 10;
    result[fix] = ((n - 1 - fix) % 2 === 1 ? DOUBLED_FROM : UNDOUBLED_FROM)[wanted];
    const written = writeSymbols(this.symbols, result);
    return this.isNumber ? Number(written) : written;
  }
}

/** A JSON number whose first digit is encrypted: cycle-walked so it never gains a leading zero. */
class LeadingCardJob extends CardJob {
  accept(out: Uint16Array, at: number): boolean {
    return out[at] !== 0;
  }
}

export const fpeCardTechnique: Technique<CardOptions> = {
  id: 'fpe-card',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'keepFirst', 'keepLast', 'keepBin', 'shortValues'], { name: 'format', value: 'card' });
    // keepBin: the issuer's first six digits (BIN) kept, for partners that route on them.
    const keepBin = reader.boolean('keepBin', false);
    if (keepBin && reader.has('keepFirst') && raw.keepFirst !== BIN_DIGITS) {
      throw new TechniqueOptionError(`keepBin keeps the first ${BIN_DIGITS} digits: leave keepFirst out (or set it to ${BIN_DIGITS})`, 'keepBin');
    }
    return {
      keepFirst: keepBin ? BIN_DIGITS : reader.integer('keepFirst', { min: 0, max: 64, default: 0 }),
      keepLast: reader.integer('keepLast', { min: 0, max: 64, default: 4 }),
      shortValues: reader.oneOf('shortValues', SHORT_VALUE_POLICIES, DEFAULT_SHORT_VALUE_POLICY),
    };
  },

  compile(options) {
    const format: FpeFormat = {
      plan: (value, tweaks, short) => cardJob(value, options, tweaks, short),
      explain: () => `keepFirst=${options.keepFirst}, keepLast=${options.keepLast}, luhn=kept`,
    };
    // Detected cards keep their brand digits and these (docs/detection.md).
    return { ...compileFpe('fpe-card', format, options.shortValues), detected: { keepFirst: options.keepFirst, keepLast: options.keepLast } };
  },
};
