// Detected phone numbers: a pseudonym of the same country, type and writing. What is kept and what
// is permuted (docs/detection.md, "Pseudonyms of detected values"):
// - `+` / `00` and the country calling code are kept (ITU-T E.164 assignments: `1` and `7` are one
//   digit, the listed two-digit codes two, every other code three), a NANP leading `1`, a national
//   writing's trunk prefix, every separator and bracket;
// - a number its country's plan holds (libphonenumber-js metadata: for `+`/`00` the regions of its
//   calling code, for NANP-style writings the NANP regions, for other national writings the regions
//   of detect.phoneRegions) keeps its first national digit and is ranked among the plan's numbers of
//   the same length, number types and first digit (phone-number-space.ts); the rank is permuted (rank
//   cipher, or the keyed shuffle for fewer than 2^16 numbers) and written back, so the pseudonym is a
//   valid number of that region and type by construction. It walks on only where another plan would
//   read it first (a region listed earlier, the NANP side), so Reconstruct places it where its
//   original was;
// - a number no plan holds (`555-0132` numbers, `+44 (0) 20…`, national writings without
//   detect.phoneRegions) cannot be given a valid pseudonym and still be told apart on the way back:
//   it stays outside every plan. NANP numbers are ranked among the 712 x 792 x 10,000 NANP-valid ones
//   (area code and exchange 2-9 first, no N11, area code not N9X), others keep the first national
//   digit and FF1-encrypt the rest (four or five digits: the keyed shuffle of small-domain.ts).

import type { FF1 } from '../../../crypto/ff1.ts';
import { ValueError } from '../../technique.ts';
import { ff1Packed } from './packed-ff1.ts';
import { RankCipher } from './rank-cipher.ts';
import { walkSteps } from './walk-steps.ts';
import { smallDomainPermute } from './small-domain.ts';
import { digitsOf, digitsValue, withDigits, writeValue, type DetectedTweaks } from './digit-text.ts';
import { regionsOfCallingCode, regionTrunk } from '../../../detect/phone-regions.ts';
import { NOT_VALID, PlanSpace } from '../../../detect/phone-number-space.ts';

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
 * Four or five free digits (`+353 1 2345`, a number outside its country's plan): under FF1's
 * minimum domain, shuffled instead (small-domain.ts). Fewer is no phone detection takes.
 */
const MIN_SHUFFLED = 4;
/** A walk this long means the input was outside the set (a bug): 2^-1000 at worst otherwise. */
const MAX_WALK = 10_000;
/**
 * Number spaces smaller than this take the keyed shuffle of their ranks (one lookup, tables of at
 * most 1 MB); larger ones FF1 radix 2, which walks 2^20 / size - 1 steps on average below 2^20 (at most 7).
 */
const SHUFFLE_BELOW = 1 << 17;
/** The rank cipher's largest set (2^52): a wider national number keeps one more leading digit. */
const MAX_RANKED = 2 ** 52;
/** FF1 radix 2 over enough bits for a plan's ranks, and at least SP 800-38G's minimum domain (2^20 > 10^6). */
const rankBits = (size: number): number => Math.max(20, Math.ceil(Math.log2(size)));

/** Ten digits at digits[from…] form a valid NANP number (area code and exchange as above). */
function isNanp(digits: ArrayLike<number>, from: number): boolean {
  return AREA_INDEX[digitsValue(digits, from, 3)] >= 0 && EXCHANGE_INDEX[digitsValue(digits, from + 3, 3)] >= 0;
}

/** Where a number sits in a plan: its national number digits[from…] has class `cls` in `space`. */
interface Placement {
  readonly space: PlanSpace;
  readonly from: number;
  readonly cls: number;
  /**
   * `space` is the first plan read for this writing, so a pseudonym of the same class keeps the
   * placement by construction ('any') or as long as it stays NANP-shaped ('nanp'); undefined: the
   * earlier plans must be read again (#sameRegion).
   */
  readonly first?: 'any' | 'nanp';
}

/** The first of `spaces` whose plan holds digits[from…] (the order detection and Reconstruct read them in). */
function placeIn(spaces: readonly PlanSpace[], digits: ArrayLike<number>, from: number): Placement | undefined {
  for (const space of spaces) {
    const cls = space.classOf(digits, from, digits.length);
    if (cls !== NOT_VALID) return { space, from, cls };
  }
  return undefined;
}

const spacesOf = (regions: readonly string[]): PlanSpace[] => regions.map((r) => PlanSpace.of(r)).filter((s): s is PlanSpace => s !== undefined);
const NANP_SPACES: PlanSpace[] = [];
const byCallingCode = new Map<number, readonly PlanSpace[]>();

/** The plans of the regions of the calling code digits[at, at + length), in libphonenumber-js's order (at most 1,110 codes: kept). */
function spacesOfCallingCode(digits: ArrayLike<number>, at: number, length: number): readonly PlanSpace[] {
  const code = digitsValue(digits, at, length);
  let spaces = byCallingCode.get(code);
  if (spaces === undefined) byCallingCode.set(code, (spaces = spacesOf(regionsOfCallingCode(String(code)))));
  return spaces;
}

export class PhoneScheme {
  readonly #nanp: RankCipher;
  readonly #one = new Float64Array(1);
  readonly #regionTweaks = new Map<PlanSpace, Map<number, Uint8Array>>();
  /** The listed regions (detect.phoneRegions) outside NANP, in order, with their trunk prefixes. */
  readonly #national: readonly { readonly space: PlanSpace; readonly trunk: string; readonly trunkWritten: boolean }[];

  constructor(
    private readonly ff1: FF1,
    private readonly ff1Radix2: FF1,
    private readonly tweaks: DetectedTweaks,
    /** The field's FF1 key: the small-domain shuffle derives its own key from it. */
    private readonly key: Uint8Array,
    /** detect.phoneRegions: national writings are placed in these regions' plans. */
    nationalRegions: readonly string[] = [],
  ) {
    if (NANP_SPACES.length === 0) NANP_SPACES.push(...spacesOfCallingCode([1], 0, 1));
    // NANP numbers that no NANP region's plan holds (`555-01xx`) stay out of every plan.
    this.#nanp = new RankCipher(ff1Radix2, NANP_SIZE, (rank) => placeIn(NANP_SPACES, nanpDigits(rank), 0) === undefined);
    this.#national = nationalRegions.flatMap((region) => {
      const trunk = regionTrunk(region.toUpperCase());
      const space = PlanSpace.of(region.toUpperCase());
      return trunk === undefined || space === undefined || trunk.callingCode === '1' ? [] : [{ space, trunk: trunk.trunk, trunkWritten: trunk.trunkWritten }];
    });
  }

  step(value: string, decrypt: boolean): string {
    const plan = this.#plan(value);
    const digits = plan.digits;
    if (plan.how === 'nanp') {
      const { out, steps } = this.#nanpWalk(value, plan, this.#nanp.permute(plan.rank, this.tweaks.get('phone:nanp'), decrypt), decrypt);
      walkSteps.count += steps;
      return out;
    }
    if (plan.how === 'region') return this.#regionStep(value, plan, decrypt);
    const { kept, free } = plan;
    for (let steps = 0; ; steps++) {
      if (plan.how === 'ff1') {
        const part = digits.subarray(kept);
        digits.set(decrypt ? this.ff1.decrypt(part, plan.tweak) : this.ff1.encrypt(part, plan.tweak), kept);
      } else {
        writeValue(digits, kept, free, smallDomainPermute(this.key, plan.tweak, 10 ** free, digitsValue(digits, kept, free), decrypt));
      }
      // Reconstruct must take the same road: a number of no plan stays one (and off the NANP side).
      if (this.#staysOutside(value, plan, digits)) break;
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
      walkSteps.count++;
    }
    return withDigits(value, digits);
  }

  /**
   * step for many values (see KindScheme.many): FF1 radix 2 once for the ranks of all numbers
   * placed in a plan, the NANP rank cipher once for all NANP numbers outside every plan, FF1 once
   * for all the other numbers outside every plan; each walks on alone, its steps counted in
   * steps[k]. Undefined where step throws and for the shuffled short numbers outside every plan.
   */
  stepMany(values: readonly string[], decrypt: boolean, steps: Int32Array): (string | undefined)[] {
    const out = new Array<string | undefined>(values.length);
    const nanp: number[] = [];
    const nanpPlans: NanpPlan[] = [];
    const ff1: number[] = [];
    const ff1Plans: Ff1Plan[] = [];
    const region: number[] = [];
    const regionPlans: RegionPlan[] = [];
    for (let k = 0; k < values.length; k++) {
      let plan: PhonePlan;
      try {
        plan = this.#plan(values[k]);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
        continue;
      }
      if (plan.how === 'region') {
        if (plan.size < 2) out[k] = values[k];
        else if (plan.size < SHUFFLE_BELOW) this.#regionFinish(values, k, plan, this.#regionApply(plan.rank, plan, decrypt), decrypt, out, steps);
        else {
          region.push(k);
          regionPlans.push(plan);
        }
      } else if (plan.how === 'nanp') {
        nanp.push(k);
        nanpPlans.push(plan);
      } else if (plan.how === 'ff1') {
        ff1.push(k);
        ff1Plans.push(plan);
      }
    }
    this.#regionMany(values, region, regionPlans, decrypt, out, steps);
    const ranks = Float64Array.from(nanpPlans, (p) => p.rank);
    const taken = new Int32Array(ranks.length);
    this.#nanp.permuteMany(ranks, this.tweaks.get('phone:nanp'), decrypt, taken);
    for (let j = 0; j < nanp.length; j++) {
      if (Number.isNaN(ranks[j])) continue;
      const k = nanp[j];
      try {
        const walked = this.#nanpWalk(values[k], nanpPlans[j], ranks[j], decrypt);
        out[k] = walked.out;
        steps[k] += taken[j] + walked.steps;
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
      }
    }
    // The FF1 digits of every other number in one packed array, encrypted in place.
    const result = ff1Packed(this.ff1, ff1Plans, (packed, j, at) => packed.set(ff1Plans[j].digits.subarray(ff1Plans[j].kept), at), decrypt);
    for (let j = 0; j < ff1.length; j++) {
      const k = ff1[j];
      const plan = ff1Plans[j];
      const { digits, kept, tweak } = plan;
      digits.set(result.digitsOf(j), kept);
      let walked = 0;
      while (!this.#staysOutside(values[k], plan, digits) && walked < MAX_WALK) {
        walked++;
        const part = digits.subarray(kept);
        digits.set(decrypt ? this.ff1.decrypt(part, tweak) : this.ff1.encrypt(part, tweak), kept);
      }
      if (!this.#staysOutside(values[k], plan, digits)) continue;
      out[k] = withDigits(values[k], digits);
      steps[k] += walked;
    }
    return out;
  }

  /**
   * The FF1 applications of placed numbers' ranks, batched round by round (one FF1 run for all the
   * numbers still walking): a number is done when its rank is one of its plan's and takes its
   * original's road, after as many extra applications (steps) as #regionWalk would take.
   */
  #regionMany(values: readonly string[], index: readonly number[], plans: readonly RegionPlan[], decrypt: boolean, out: (string | undefined)[], steps: Int32Array): void {
    if (plans.length === 0) return;
    const ranks = Float64Array.from(plans, (p) => p.rank);
    const bits = Int32Array.from(plans, (p) => rankBits(p.size));
    const tweaks = plans.map((p) => p.tweak);
    let walking: number[] | undefined;
    for (let round = 0; walking === undefined || walking.length > 0; round++) {
      if (decrypt) this.ff1Radix2.decryptNumbers(ranks, bits, tweaks, walking);
      else this.ff1Radix2.encryptNumbers(ranks, bits, tweaks, walking);
      const still: number[] = [];
      const count = walking === undefined ? plans.length : walking.length;
      for (let w = 0; w < count; w++) {
        const j = walking === undefined ? w : walking[w];
        const plan = plans[j];
        const k = index[j];
        if (ranks[j] < plan.size) {
          plan.place.space.unrank(ranks[j], plan.digits, plan.place.from, plan.kept, plan.digits.length, plan.place.cls);
          if (this.#sameRegion(values[k], plan)) {
            out[k] = withDigits(values[k], plan.digits);
            steps[k] += round;
            continue;
          }
        }
        // Left undefined past MAX_WALK: the one-value form throws there.
        if (round < MAX_WALK) still.push(j);
      }
      walking = still;
    }
  }

  /** out[k] and steps[k] for a placed number whose first application gave `rank`; left undefined where step throws. */
  #regionFinish(values: readonly string[], k: number, plan: RegionPlan, rank: number, decrypt: boolean, out: (string | undefined)[], steps: Int32Array): void {
    try {
      const walked = this.#regionWalk(values[k], plan, rank, decrypt);
      out[k] = walked.out;
      steps[k] += walked.steps;
    } catch (err) {
      if (!(err instanceof ValueError)) throw err;
    }
  }

  /**
   * How step treats a number: placed in its country's plan when a plan holds it (the pseudonym is
   * drawn among the plan's numbers of the same type and length), else which digits are kept and
   * which permutation takes the rest.
   */
  #plan(value: string): PhonePlan {
    const digits = digitsOf(value);
    return this.#planOf(digits, this.#road(value, digits));
  }

  #planOf(digits: Uint16Array, road: Road): PhonePlan {
    if (road.how === 'region') return this.#regionPlan(digits, road.place);
    if (road.how === 'nanp') return this.#nanpPlan(digits, road.from);
    const { kept, free, nanpOutside } = road;
    const tweak = this.tweaks.get(`phone:${digits.length}:${kept}`);
    return { how: free >= MIN_FREE ? 'ff1' : 'shuffle', digits, kept, free, tweak, nanpOutside };
  }

  /** Which scheme a number's digits take: the same for a pseudonym as for its original (walks make sure). */
  #road(value: string, digits: Uint16Array): Road {
    const n = digits.length;
    const plus = value.trimStart().startsWith('+');
    let kept: number;
    let nanpOutside = false;
    if (plus || (digits[0] === 0 && digits[1] === 0)) {
      // International: prefix (`00`) and country code kept.
      const prefix = plus ? 0 : 2;
      const cc = countryCodeLength(digits, prefix);
      const tenNanp = cc === 1 && digits[prefix] === 1 && n - prefix - 1 === 10;
      const nanp = tenNanp && isNanp(digits, n - 10);
      // `+1` and ten digits: in a NANP region's plan only as detection reads NANP numbers (no N11 exchange…).
      const spaces = spacesOfCallingCode(digits, prefix, cc);
      const place = placeIn(spaces, digits, prefix + cc);
      if (place !== undefined && (!tenNanp || nanp)) return { how: 'region', place: place.space === spaces[0] ? { ...place, first: tenNanp ? 'nanp' : 'any' } : place };
      if (nanp) return { how: 'nanp', from: n - 10 };
      // `+1` and ten digits that are no valid NANP number: permuted among such numbers (below).
      nanpOutside = tenNanp;
      kept = prefix + cc;
    } else if (n === 10 || (n === 11 && digits[0] === 1)) {
      // Ten digits (after a `1`) read as NANP by detection's rules and in a NANP region's plan, else
      // in a listed region's plan (a Chinese mobile `138…`, a US number with an N11 exchange, which
      // detection reads as no NANP number), else NANP-shaped, else none: each stays on its side.
      const nanp = isNanp(digits, n - 10);
      const inNanp = nanp ? placeIn(NANP_SPACES, digits, n - 10) : undefined;
      if (inNanp !== undefined) return { how: 'region', place: inNanp.space === NANP_SPACES[0] ? { ...inNanp, first: 'nanp' } : inNanp };
      const place = this.#placeNational(digits);
      if (place !== undefined) return { how: 'region', place };
      if (nanp) return { how: 'nanp', from: n - 10 };
      kept = 1;
      nanpOutside = true;
    } else {
      const place = this.#placeNational(digits);
      if (place !== undefined) return { how: 'region', place };
      // A national number of no listed plan: its first digit kept (a trunk `0`, or a digit of a national writing a detector accepts).
      kept = 1;
    }
    // The national number's first digit (an area or a mobile range) stays when six digits remain.
    if (n - kept - 1 >= MIN_FREE) kept++;
    const free = n - kept;
    if (free < MIN_SHUFFLED) throw new ValueError('VALUE_TOO_SHORT_FOR_FPE');
    return { how: 'outside', kept, free, nanpOutside };
  }

  /** A national writing in the first listed region whose plan holds it, trunk prefix read as detection reads it (phone-regions.ts). */
  #placeNational(digits: Uint16Array): Placement | undefined {
    for (const { space, trunk, trunkWritten } of this.#national) {
      let from = 0;
      if (trunk !== '' && digitsStartWith(digits, trunk)) from = trunk.length;
      else if (trunkWritten) continue;
      const cls = space.classOf(digits, from, digits.length);
      if (cls !== NOT_VALID) return { space, from, cls };
    }
    return undefined;
  }

  /** A pseudonym of a number outside every plan is outside too (and a `+1`/ten-digit one no NANP number). */
  #staysOutside(value: string, plan: Ff1Plan, digits: Uint16Array): boolean {
    if (plan.nanpOutside && isNanp(digits, digits.length - 10)) return false;
    return this.#road(value, digits).how === 'outside';
  }

  #regionPlan(digits: Uint16Array, place: Placement): RegionPlan {
    const { space, from, cls } = place;
    const n = digits.length;
    // The national number's first digit (an area, a mobile range) is kept, more while the set is too large to rank.
    let kept = Math.min(1, n - from);
    let size = space.size(digits, from, kept, n, cls);
    while (size > MAX_RANKED) size = space.size(digits, from, ++kept, n, cls);
    const tweak = this.#regionTweak(space, digits, from, kept, cls);
    return { how: 'region', digits, place, kept, size, rank: space.rank(digits, from, kept, n, cls), tweak };
  }

  /**
   * A number in its country's plan: its rank among the plan's numbers of the same type, length and
   * first national digit is permuted, and walked on only where the pseudonym would be read in
   * another plan first (another region of the calling code or of detect.phoneRegions, the NANP side).
   */
  #regionStep(value: string, plan: RegionPlan, decrypt: boolean): string {
    if (plan.size < 2) return value;
    const { out, steps } = this.#regionWalk(value, plan, this.#regionApply(plan.rank, plan, decrypt), decrypt);
    walkSteps.count += steps;
    return out;
  }

  /** One application of a placed number's permutation to a rank: the shuffle's lookup, or FF1 radix 2 (whose result may lie past size). */
  #regionApply(rank: number, plan: RegionPlan, decrypt: boolean): number {
    if (plan.size < SHUFFLE_BELOW) return smallDomainPermute(this.key, plan.tweak, plan.size, rank, decrypt);
    const one = this.#one;
    one[0] = rank;
    if (decrypt) this.ff1Radix2.decryptNumbers(one, [rankBits(plan.size)], [plan.tweak]);
    else this.ff1Radix2.encryptNumbers(one, [rankBits(plan.size)], [plan.tweak]);
    return one[0];
  }

  /**
   * From `rank`, the first application done: applications until the rank is one of the plan's and
   * its number takes the original's road (no plan read first takes it); the extra applications are
   * the walk's steps. The same applications both ways, so Reconstruct stops on the original.
   */
  #regionWalk(value: string, plan: RegionPlan, rank: number, decrypt: boolean): { out: string; steps: number } {
    const { digits, place, kept, size } = plan;
    const n = digits.length;
    for (let steps = 0; ; steps++) {
      if (rank < size) {
        place.space.unrank(rank, digits, place.from, kept, n, place.cls);
        if (this.#sameRegion(value, plan)) return { out: withDigits(value, digits), steps };
      }
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
      rank = this.#regionApply(rank, plan, decrypt);
    }
  }

  /**
   * A NANP-shaped number of no plan, its rank permuted once (to `rank`): on while a listed region's
   * plan would take the pseudonym first (a national writing), so Reconstruct takes the same road.
   */
  #nanpWalk(value: string, plan: NanpPlan, rank: number, decrypt: boolean): { out: string; steps: number } {
    const tweak = this.tweaks.get('phone:nanp');
    for (let steps = 0; ; steps++) {
      const out = this.#nanpWrite(value, plan.digits, plan.from, rank);
      if (this.#national.length === 0 || this.#road(value, plan.digits).how === 'nanp') return { out, steps };
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
      rank = this.#nanp.permute(rank, tweak, decrypt);
    }
  }

  /** The tweak of a placed number's layout: region, length, where the national number starts, class and kept digits. */
  #regionTweak(space: PlanSpace, digits: Uint16Array, from: number, kept: number, cls: number): Uint8Array {
    const key = ((((digitsValue(digits, from, kept) * 4 + kept) * 32 + from) * 32 + digits.length) * 4096 + cls) * 2;
    let bySpace = this.#regionTweaks.get(space);
    if (bySpace === undefined) this.#regionTweaks.set(space, (bySpace = new Map()));
    let tweak = bySpace.get(key);
    if (tweak === undefined) {
      const head = String.fromCharCode(...digits.subarray(from, from + kept).map((d) => d + 48));
      tweak = this.tweaks.get(`phone:plan:${space.region}:${digits.length}:${from}:${cls}:${head}`);
      if (bySpace.size < 4096) bySpace.set(key, tweak);
    }
    return tweak;
  }

  /** The plan's digits (a candidate pseudonym) take the road of the number the plan was made for. */
  #sameRegion(value: string, plan: RegionPlan): boolean {
    const { place, digits } = plan;
    if (place.first === 'any') return true;
    if (place.first === 'nanp') return isNanp(digits, digits.length - 10);
    const road = this.#road(value, digits);
    return road.how === 'region' && road.place.space === place.space && road.place.from === place.from && road.place.cls === place.cls;
  }

  #nanpPlan(digits: Uint16Array, from: number): NanpPlan {
    const area = AREA_INDEX[digitsValue(digits, from, 3)];
    const exchange = EXCHANGE_INDEX[digitsValue(digits, from + 3, 3)];
    if (area < 0 || exchange < 0) throw new ValueError('NOT_A_PHONE');
    return { how: 'nanp', digits, from, rank: (area * EXCHANGES.length + exchange) * LINES + digitsValue(digits, from + 6, 4) };
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

/** A NANP number of no NANP region's plan: its rank among the valid NANP numbers. */
interface NanpPlan {
  readonly how: 'nanp';
  readonly digits: Uint16Array;
  readonly from: number;
  readonly rank: number;
}

/** A number of no plan: digits[kept…] go through FF1 (six or more) or the small-domain shuffle. */
interface Ff1Plan {
  readonly how: 'ff1' | 'shuffle';
  readonly digits: Uint16Array;
  readonly kept: number;
  readonly free: number;
  readonly tweak: Uint8Array;
  readonly nanpOutside: boolean;
}

/** A number in its country's plan: its rank among the `size` numbers of its class that share digits[place.from, + kept). */
interface RegionPlan {
  readonly how: 'region';
  readonly digits: Uint16Array;
  readonly place: Placement;
  readonly kept: number;
  readonly size: number;
  readonly rank: number;
  readonly tweak: Uint8Array;
}

type PhonePlan = NanpPlan | Ff1Plan | RegionPlan;

/** The scheme a number's digits take (#road). */
type Road =
  | { readonly how: 'region'; readonly place: Placement }
  | { readonly how: 'nanp'; readonly from: number }
  | { readonly how: 'outside'; readonly kept: number; readonly free: number; readonly nanpOutside: boolean };

function digitsStartWith(digits: Uint16Array, prefix: string): boolean {
  for (let i = 0; i < prefix.length; i++) if (digits[i] !== prefix.charCodeAt(i) - 48) return false;
  return prefix.length <= digits.length;
}

/** The ten digits of the NANP number of rank `rank` (#nanpWrite's order). */
function nanpDigits(rank: number): Uint16Array {
  const digits = new Uint16Array(10);
  const rest = Math.floor(rank / LINES);
  writeValue(digits, 0, 3, AREAS[Math.floor(rest / EXCHANGES.length)]);
  writeValue(digits, 3, 3, EXCHANGES[rest % EXCHANGES.length]);
  writeValue(digits, 6, 4, rank % LINES);
  return digits;
}
