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
import { ff1Packed } from './packed-ff1.ts';
import { RankCipher } from './rank-cipher.ts';
import { walkSteps } from './walk-steps.ts';
import { smallDomainPermute } from './small-domain.ts';
import { digitsOf, digitsValue, withDigits, writeValue, type DetectedTweaks } from './digit-text.ts';
import { internationalValid } from '../../../detect/phone-regions.ts';
import { E164_MIN_DIGITS } from '../../../detect/phone.ts';

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
/**
 * Numbers detection takes only when valid in their country's plan (`00` and the number as one
 * group, or fewer than 8 digits after `+`/`00`): the last PLANNED_FREE digits (fewer when the
 * national number is shorter) are shuffled (small-domain.ts) and cycle-walked until the number is
 * valid in the plan again, so the pseudonym is detected like the original by construction.
 * Expected steps: 10^4 / (valid endings of the kept digits); at most 10^4 (a cycle of the shuffle).
 */
const PLANNED_FREE = 4;
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
    const plan = this.#plan(value);
    const digits = plan.digits;
    if (plan.how === 'nanp') return this.#nanpWrite(value, digits, plan.from, this.#nanp.permute(plan.rank, this.tweaks.get('phone:nanp'), decrypt));
    if (plan.how === 'planned') return this.#plannedStep(value, plan, decrypt);
    const { kept, free } = plan;
    if (plan.how === 'ff1') {
      for (let steps = 0; ; steps++) {
        const part = digits.subarray(kept);
        digits.set(decrypt ? this.ff1.decrypt(part, plan.tweak) : this.ff1.encrypt(part, plan.tweak), kept);
        // Reconstruct tells the two `+1` schemes apart by validity: each keeps to its own side.
        if (!plan.nanpOutside || !isNanp(digits, digits.length - 10)) break;
        if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
        walkSteps.count++;
      }
    } else {
      const rank = smallDomainPermute(this.key, plan.tweak, 10 ** free, digitsValue(digits, kept, free), decrypt);
      writeValue(digits, kept, free, rank);
    }
    return withDigits(value, digits);
  }

  /**
   * step for many values (see KindScheme.many): the NANP rank cipher once for all NANP numbers, FF1
   * once for all the others; a `+1` pseudonym that lands on the NANP side walks on alone, its
   * steps counted in steps[k]. Undefined where step throws, and for the shuffled short numbers.
   */
  stepMany(values: readonly string[], decrypt: boolean, steps: Int32Array): (string | undefined)[] {
    const out = new Array<string | undefined>(values.length);
    const nanp: number[] = [];
    const nanpPlans: NanpPlan[] = [];
    const ff1: number[] = [];
    const ff1Plans: Ff1Plan[] = [];
    for (let k = 0; k < values.length; k++) {
      let plan: PhonePlan;
      try {
        plan = this.#plan(values[k]);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        continue;
      }
      if (plan.how === 'nanp') {
        nanp.push(k);
        nanpPlans.push(plan);
      } else if (plan.how === 'ff1') {
        ff1.push(k);
        ff1Plans.push(plan);
      }
    }
    const ranks = Float64Array.from(nanpPlans, (p) => p.rank);
    const taken = new Int32Array(ranks.length);
    this.#nanp.permuteMany(ranks, this.tweaks.get('phone:nanp'), decrypt, taken);
    for (let j = 0; j < nanp.length; j++) {
      if (Number.isNaN(ranks[j])) continue;
      const k = nanp[j];
      out[k] = this.#nanpWrite(values[k], nanpPlans[j].digits, nanpPlans[j].from, ranks[j]);
      steps[k] += taken[j];
    }
    // The FF1 digits of every other number in one packed array, encrypted in place.
    const result = ff1Packed(this.ff1, ff1Plans, (packed, j, at) => packed.set(ff1Plans[j].digits.subarray(ff1Plans[j].kept), at), decrypt);
    for (let j = 0; j < ff1.length; j++) {
      const k = ff1[j];
      const { digits, kept, tweak, nanpOutside } = ff1Plans[j];
      digits.set(result.digitsOf(j), kept);
      let walked = 0;
      while (nanpOutside && isNanp(digits, digits.length - 10) && walked < MAX_WALK) {
        walked++;
        const part = digits.subarray(kept);
        digits.set(decrypt ? this.ff1.decrypt(part, tweak) : this.ff1.encrypt(part, tweak), kept);
      }
      if (nanpOutside && isNanp(digits, digits.length - 10)) continue;
      out[k] = withDigits(values[k], digits);
      steps[k] += walked;
    }
    return out;
  }

  /** How step treats a number: which digits are kept and which permutation takes the rest. */
  #plan(value: string): PhonePlan {
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
        if (isNanp(digits, n - 10)) return this.#nanpPlan(digits, n - 10);
        // `+1` and ten digits that are no valid NANP number: permuted among such numbers (below).
        nanpOutside = true;
      }
      kept = prefix + cc;
      const nsn = n - kept;
      const oneGroup = !plus && /^\d+$/.test(value);
      if (!nanpOutside && (oneGroup || n - prefix < E164_MIN_DIGITS)) {
        // Taken by detection only as a valid number of its plan: the pseudonym must be one too.
        const free = Math.min(PLANNED_FREE, nsn);
        if (free < 1) throw new ValueError('VALUE_TOO_SHORT_FOR_FPE');
        return { how: 'planned', digits, kept: n - free, free, prefix, tweak: this.tweaks.get(`phone:plan:${n}:${n - free}`) };
      }
    } else if ((n === 10 || (n === 11 && digits[0] === 1)) && isNanp(digits, n - 10)) {
      return this.#nanpPlan(digits, n - 10);
    } else {
      // A national number: its first digit kept (a trunk `0`, or a digit of a national writing a
      // detector accepts); ten digits that are no NANP number stay on that side, as for `+1`.
      kept = 1;
      nanpOutside = n === 10 || (n === 11 && digits[0] === 1);
    }
    // The national number's first digit (an area or a mobile range) stays when six digits remain.
    if (n - kept - 1 >= MIN_FREE) kept++;
    const free = n - kept;
    const tweak = this.tweaks.get(`phone:${n}:${kept}`);
    if (free >= MIN_FREE) return { how: 'ff1', digits, kept, free, tweak, nanpOutside };
    if (free >= MIN_SHUFFLED) return { how: 'shuffle', digits, kept, free, tweak, nanpOutside };
    throw new ValueError('VALUE_TOO_SHORT_FOR_FPE');
  }

  #nanpPlan(digits: Uint16Array, from: number): NanpPlan {
    const area = AREA_INDEX[digitsValue(digits, from, 3)];
    const exchange = EXCHANGE_INDEX[digitsValue(digits, from + 3, 3)];
    if (area < 0 || exchange < 0) throw new ValueError('NOT_A_PHONE');
    return { how: 'nanp', digits, from, rank: (area * EXCHANGES.length + exchange) * LINES + digitsValue(digits, from + 6, 4) };
  }

  /** A plan-checked number: its last digits shuffled and walked until it is valid in its plan again. */
  #plannedStep(value: string, plan: PlannedPlan, decrypt: boolean): string {
    const { digits, kept, free, prefix, tweak } = plan;
    const head = String.fromCharCode(...digits.subarray(prefix, kept).map((d) => d + 48));
    const valid = (ending: number): boolean => internationalValid(head + String(ending).padStart(free, '0'));
    let ending = digitsValue(digits, kept, free);
    if (!valid(ending)) throw new ValueError('NOT_A_PHONE');
    const size = 10 ** free;
    // A cycle of the shuffle is at most `size` long and holds the input, which is valid: the walk ends.
    for (let steps = 0; steps <= size; steps++) {
      ending = smallDomainPermute(this.key, tweak, size, ending, decrypt);
      if (valid(ending)) {
        writeValue(digits, kept, free, ending);
        return withDigits(value, digits);
      }
      walkSteps.count++;
    }
    throw new ValueError('FPE_DOMAIN_ERROR');
  }

  /** Ten NANP digits at digits[from…] rewritten as the valid number of rank `out`. */
  #nanpWrite(value: string, digits: Uint16Array, from: number, out: number): string {
    const line = out % LINES;
    const rest = Math.floor(out / LINES);
    writeValue(digits, from, 3, AREAS[Math.floor(rest / EXCHANGES.length)]);
    writeValue(digits, from + 3, 3, EXCHANGES[rest % EXCHANGES.length]);
    writeValue(digits, from + 6, 4, line);
    return withDigits(value, digits);
  }
}

/** A NANP number: its rank among the valid ones. */
interface NanpPlan {
  readonly how: 'nanp';
  readonly digits: Uint16Array;
  readonly from: number;
  readonly rank: number;
}

/** Any other number: digits[kept…] go through FF1 (six or more) or the small-domain shuffle. */
interface Ff1Plan {
  readonly how: 'ff1' | 'shuffle';
  readonly digits: Uint16Array;
  readonly kept: number;
  readonly free: number;
  readonly tweak: Uint8Array;
  readonly nanpOutside: boolean;
}

/** A number detection takes only when valid in its plan: digits[kept…] walked among valid endings. */
interface PlannedPlan {
  readonly how: 'planned';
  readonly digits: Uint16Array;
  readonly kept: number;
  readonly free: number;
  /** Digits of the `00` prefix (0 after `+`): the plan is checked on the digits after it. */
  readonly prefix: number;
  readonly tweak: Uint8Array;
}

type PhonePlan = NanpPlan | Ff1Plan | PlannedPlan;
