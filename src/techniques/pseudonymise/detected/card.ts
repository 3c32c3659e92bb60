// Detected cards: a pseudonym that is a card again by construction, so no walk is needed. The
// shortest leading digits that fix the brand for the number's length are kept (`4` for a Visa,
// `5018` for a Maestro, `2221` … for a Mastercard of the 2-series: every number starting with them
// has a brand prefix at that length), with the rule's keepFirst (6 with keepBin: the BIN) and
// keepLast; the digits between go through FF1 (radix 10) except the last one, recomputed so the
// Luhn check holds. Reconstruct keeps the same digits, decrypts the same ones and recomputes the
// same Luhn digit: the original comes back whatever the grouping.

import { CARD_MAX_DIGITS, CARD_MIN_DIGITS, CARD_PREFIX_DIGITS, hasCardPrefixFor } from '../../../detect/card.ts';
import type { FF1 } from '../../../crypto/ff1.ts';
import { ValueError } from '../../technique.ts';
import { ff1Packed } from './packed-ff1.ts';
import { digitsOf, withDigits, type DetectedTweaks } from './digit-text.ts';

/** FF1's minimum domain is 10^6: six free digits. */
const MIN_FREE = 6;
const HEADS = 10 ** CARD_PREFIX_DIGITS;

/** Per length, the six-digit heads with a brand prefix as merged [from, to] pairs, built on first use. */
const coverage: (Int32Array | undefined)[] = [];

function coverageFor(length: number): Int32Array {
  let pairs = coverage[length];
  if (pairs === undefined) {
    const out: number[] = [];
    let from = -1;
    for (let head = 0; head <= HEADS; head++) {
      const ok = head < HEADS && hasCardPrefixFor(head, length);
      if (ok && from < 0) from = head;
      else if (!ok && from >= 0) {
        out.push(from, head - 1);
        from = -1;
      }
    }
    coverage[length] = pairs = Int32Array.from(out);
  }
  return pairs;
}

/**
 * How many leading digits fix the brand of a card of `length` digits starting with the six-digit
 * `head`: the least k such that every number sharing its first k digits has a brand prefix; 0 when
 * none does (not a card).
 */
export function brandDigits(head: number, length: number): number {
  const pairs = coverageFor(length);
  for (let k = 1; k <= CARD_PREFIX_DIGITS; k++) {
    const unit = 10 ** (CARD_PREFIX_DIGITS - k);
    const lo = Math.floor(head / unit) * unit;
    const hi = lo + unit - 1;
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] <= lo && hi <= pairs[i + 1]) return k;
  }
  return 0;
}

const DOUBLED = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
const UNDOUBLED_FROM = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const DOUBLED_FROM = [0, 5, 1, 6, 2, 7, 3, 8, 4, 9];

/** Sets digits[fix] so the Luhn sum of all the digits is 0 mod 10. */
function fixLuhn(digits: Uint16Array, fix: number): void {
  const n = digits.length;
  let sum = 0;
  for (let i = 0; i < n; i++) if (i !== fix) sum += (n - 1 - i) % 2 === 1 ? DOUBLED[digits[i]] : digits[i];
  const wanted = (10 - (sum % 10)) % 10;
  digits[fix] = ((n - 1 - fix) % 2 === 1 ? DOUBLED_FROM : UNDOUBLED_FROM)[wanted];
}

export interface CardSchemeOptions {
  /** Leading digits kept beyond the brand's (6 with keepBin). */
  readonly keepFirst: number;
  readonly keepLast: number;
}

export class CardScheme {
  constructor(
    private readonly ff1: FF1,
    private readonly tweaks: DetectedTweaks,
    private readonly options: CardSchemeOptions,
  ) {}

  step(value: string, decrypt: boolean): string {
    const plan = this.#plan(value);
    const middle = plan.digits.subarray(plan.first, plan.first + plan.free);
    return this.#finish(value, plan, decrypt ? this.ff1.decrypt(middle, plan.tweak) : this.ff1.encrypt(middle, plan.tweak));
  }

  /** step for many values, FF1 run once for all (see KindScheme.many); undefined where step throws. */
  stepMany(values: readonly string[], decrypt: boolean): (string | undefined)[] {
    const out = new Array<string | undefined>(values.length);
    const index: number[] = [];
    const plans: CardPlan[] = [];
    for (let k = 0; k < values.length; k++) {
      try {
        plans.push(this.#plan(values[k]));
        index.push(k);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
      }
    }
    // The FF1 digits of every card in one packed array, encrypted in place (no array per value).
    const result = ff1Packed(
      this.ff1,
      plans,
      (packed, j, at) => {
        const { digits, first, free } = plans[j];
        for (let d = 0; d < free; d++) packed[at + d] = digits[first + d];
      },
      decrypt,
    );
    for (let j = 0; j < plans.length; j++) out[index[j]] = this.#finish(values[index[j]], plans[j], result.digitsOf(j));
    return out;
  }

  #plan(value: string): CardPlan {
    const digits = digitsOf(value);
    const n = digits.length;
    if (n < CARD_MIN_DIGITS || n > CARD_MAX_DIGITS) throw new ValueError('NOT_A_CARD');
    let head = 0;
    for (let k = 0; k < CARD_PREFIX_DIGITS; k++) head = head * 10 + digits[k];
    const brand = brandDigits(head, n);
    if (brand === 0) throw new ValueError('NOT_A_CARD');
    // Kept digits give way so that six stay free for FF1: the tail first (a BIN asked for is
    // worth more to its partner than the last digits), then the BIN (12-digit cards).
    let first = Math.max(brand, this.options.keepFirst);
    let last = Math.min(this.options.keepLast, Math.max(0, n - first - 1 - MIN_FREE));
    if (n - first - last - 1 < MIN_FREE) {
      first = brand;
      last = Math.min(this.options.keepLast, Math.max(0, n - first - 1 - MIN_FREE));
    }
    const free = n - first - last - 1;
    if (free < MIN_FREE) throw new ValueError('VALUE_TOO_SHORT_FOR_FPE');
    return { digits, first, free, tweak: this.tweaks.get(`card:${n}:${first}:${last}`) };
  }

  #finish(value: string, plan: CardPlan, middle: Uint16Array): string {
    plan.digits.set(middle, plan.first);
    fixLuhn(plan.digits, plan.first + plan.free);
    return withDigits(value, plan.digits);
  }
}

/** What step works out about one card before FF1: its digits, where the FF1 digits start, how many. */
interface CardPlan {
  readonly digits: Uint16Array;
  readonly first: number;
  readonly free: number;
  readonly tweak: Uint8Array;
}
