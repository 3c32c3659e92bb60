// Detected phone numbers: a pseudonym of the same country and writing. What is kept and what is
// permuted (docs/detection.md, "Pseudonyms of detected values"):
// - `+` / `00` and the country calling code are kept (ITU-T E.164 assignments: `1` and `7` are one
//   digit, the listed two-digit codes two, every other code three);
// - North American numbers (`+1`, `1-…`, or ten digits written NANP-style): area code and exchange
//   stay valid NANP codes by construction (first digit 2-9, no N11 service code, area code not
//   N9X): the ten digits are ranked among the 712 x 792 x 10,000 valid ones and permuted by a rank
//   cipher of 33 bits (expected 0.52 extra steps); a leading `1` is kept;
// - other numbers keep the first digit of the national number (after the country code, or after
//   the first digit of a national writing: a trunk `0`, the `8` of `8 (912) …`) and FF1-encrypt the
//   rest; ten digits that are no NANP number stay that way (walked past NANP ones, so Reconstruct
//   picks the same side); with fewer than six digits left
//   the first national digit is encrypted too, and a national part of four or five digits (a
//   three-digit country code and seven or eight digits in all: Saint Helena, Tokelau), too small
//   for FF1, takes a keyed shuffle of its 10^4 or 10^5 values (small-domain.ts).

import type { FF1 } from '../../../crypto/ff1.ts';
import { ValueError } from '../../technique.ts';
import { RankCipher } from './rank-cipher.ts';
import { walkSteps } from './walk-steps.ts';
import { smallDomainPermute } from './small-domain.ts';
import { digitsOf, digitsValue, withDigits, writeValue, type DetectedTweaks } from './digit-text.ts';

/** Two-digit country calling codes (ITU-T E.164); 1 and 7 are the one-digit ones, all others three. */
const CC2 = new Set([
  20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54, 55, 56, 57, 58,
  60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98,
]);

function countryCodeLength(digits: ArrayLike<number>, at: number): number {
  const first = digits[at];
  if (first === 1 || first === 7) return 1;
  return CC2.has(first * 10 + digits[at + 1]) ? 2 : 3;
}

/** Valid NANP area codes (NXX, not N11, not N9X) and exchanges (NXX, not N11), in order. */
const AREAS: readonly number[] = codes(true);
const EXCHANGES: readonly number[] = codes(false);
const AREA_INDEX = indexOf(AREAS);
const EXCHANGE_INDEX = indexOf(EXCHANGES);
const LINES = 10_000;
const NANP_SIZE = AREAS.length * EXCHANGES.length * LINES;

function codes(area: boolean): number[] {
  const out: number[] = [];
  for (let c = 200; c <= 999; c++) {
    const b = Math.floor(c / 10) % 10;
    if (b === 1 && c % 10 === 1) continue;
    if (area && b === 9) continue;
    out.push(c);
  }
  return out;
}

function indexOf(list: readonly number[]): Int16Array {
  const index = new Int16Array(1000).fill(-1);
  list.forEach((code, i) => (index[code] = i));
  return index;
}

const MIN_FREE = 6;
/**
 * Four or five national digits (`+290 8912`, `+690 7243`: numbers valid in their country's plan):
 * under FF1's minimum domain, shuffled instead (small-domain.ts). Fewer is no phone detection takes.
 */
const MIN_SHUFFLED = 4;
/** A walk this long means the input was outside the set (a bug): 2^-1000 at worst otherwise. */
const MAX_WALK = 10_000;

/** Ten digits at digits[from…] form a valid NANP number (area code and exchange as above). */
function isNanp(digits: ArrayLike<number>, from: number): boolean {
  return AREA_INDEX[digitsValue(digits, from, 3)] >= 0 && EXCHANGE_INDEX[digitsValue(digits, from + 3, 3)] >= 0;
}

export class PhoneScheme {
  readonly #nanp: RankCipher;

  constructor(
    private readonly ff1: FF1,
    ff1Radix2: FF1,
    private readonly tweaks: DetectedTweaks,
    /** The field's FF1 key: the small-domain shuffle derives its own key from it. */
    private readonly key: Uint8Array,
  ) {
    this.#nanp = new RankCipher(ff1Radix2, NANP_SIZE);
  }

  step(value: string, decrypt: boolean): string {
    const digits = digitsOf(value);
    const n = digits.length;
    const plus = value.trimStart().startsWith('+');
    let kept: number;
    let nanpOutside = false;
    if (plus || (digits[0] === 0 && digits[1] === 0)) {
      // International: prefix (`00`) and country code kept.
      const prefix = plus ? 0 : 2;
      const cc = countryCodeLength(digits, prefix);
      if (cc === 1 && digits[prefix] === 1 && n - prefix - 1 === 10) {
        if (isNanp(digits, n - 10)) return this.#nanpStep(value, digits, n - 10, decrypt);
        // `+1` and ten digits that are no valid NANP number: permuted among such numbers (below).
        nanpOutside = true;
      }
      kept = prefix + cc;
    } else if ((n === 10 || (n === 11 && digits[0] === 1)) && isNanp(digits, n - 10)) {
      return this.#nanpStep(value, digits, n - 10, decrypt);
    } else {
      // A national number: its first digit kept (a trunk `0`, or a digit of a national writing a
      // detector accepts); ten digits that are no NANP number stay on that side, as for `+1`.
      kept = 1;
      nanpOutside = n === 10 || (n === 11 && digits[0] === 1);
    }
    // The national number's first digit (an area or a mobile range) stays when six digits remain.
    if (n - kept - 1 >= MIN_FREE) kept++;
    const free = n - kept;
    if (free >= MIN_FREE) {
      const tweak = this.tweaks.get(`phone:${n}:${kept}`);
      for (let steps = 0; ; steps++) {
        const part = digits.subarray(kept);
        digits.set(decrypt ? this.ff1.decrypt(part, tweak) : this.ff1.encrypt(part, tweak), kept);
        // Reconstruct tells the two `+1` schemes apart by validity: each keeps to its own side.
        if (!nanpOutside || !isNanp(digits, n - 10)) break;
        if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
        walkSteps.count++;
      }
    } else if (free >= MIN_SHUFFLED) {
      const size = 10 ** free;
      const rank = smallDomainPermute(this.key, this.tweaks.get(`phone:${n}:${kept}`), size, digitsValue(digits, kept, free), decrypt);
      writeValue(digits, kept, free, rank);
    } else throw new ValueError('VALUE_TOO_SHORT_FOR_FPE');
    return withDigits(value, digits);
  }

  /** Ten NANP digits at digits[from…]: ranked among the valid ones, permuted, written back. */
  #nanpStep(value: string, digits: Uint16Array, from: number, decrypt: boolean): string {
    const area = AREA_INDEX[digitsValue(digits, from, 3)];
    const exchange = EXCHANGE_INDEX[digitsValue(digits, from + 3, 3)];
    if (area < 0 || exchange < 0) throw new ValueError('NOT_A_PHONE');
    const rank = (area * EXCHANGES.length + exchange) * LINES + digitsValue(digits, from + 6, 4);
    const out = this.#nanp.permute(rank, this.tweaks.get('phone:nanp'), decrypt);
    const line = out % LINES;
    const rest = Math.floor(out / LINES);
    writeValue(digits, from, 3, AREAS[Math.floor(rest / EXCHANGES.length)]);
    writeValue(digits, from + 3, 3, EXCHANGES[rest % EXCHANGES.length]);
    writeValue(digits, from + 6, 4, line);
    return withDigits(value, digits);
  }
}
