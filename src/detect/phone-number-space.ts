// The valid numbers of one region's numbering plan as a set that can be counted, ranked and
// unranked, so a phone pseudonym can be drawn among them directly — valid by construction, no walk
// through the ~90% of digit strings a plan leaves out (detected/phone.ts).
//
// A number's class says what it is in the plan: which number types (fixed line, mobile, toll free…,
// libphonenumber's order) match it at its length, whether the region's general pattern does, and
// that it passes detection's own test (some type's pattern, a length the region uses: phone-regions.ts).
// Numbers of one class and length, with the same first digits, are ranked in digit order by an
// automaton built from the region's patterns (phone-pattern.ts); a pseudonym of the same class is
// valid in the plan exactly when the original is (libphonenumber's isValid and getNumberType
// included), and detection reads it the same way.

import { DigitNfa } from './phone-pattern.ts';
import { regionNumbering } from './phone-regions.ts';

/** Class bit: the region's general pattern matches (libphonenumber checks it before the types). */
const GENERAL = 1 << 10;
/** Class bit: some type's pattern matches at a length the region uses — detection's test. */
const DETECTED = 1 << 11;
/** Class of a number that is not valid in the plan. */
export const NOT_VALID = -1;
/** Memoised counts per region before they are dropped (bounded memory whatever the input). */
const MAX_COUNTS = 1 << 17;

const spaces = new Map<string, PlanSpace | undefined>();

export class PlanSpace {
  /** The space of a region libphonenumber-js knows, built on first use; undefined for others. */
  static of(region: string): PlanSpace | undefined {
    if (!spaces.has(region)) {
      const plan = regionNumbering(region);
      spaces.set(region, plan && new PlanSpace(region, plan.minLength, plan.maxLength, plan.lengths, plan.general, plan.types));
    }
    return spaces.get(region);
  }

  readonly #nfa = new DigitNfa();
  /** Lengths (bit L) at which each type is valid. */
  readonly #typeLengths: number[] = [];
  /** DFA over the NFA, built as it is walked: subsets, their transitions (-2 not yet known, -1 dead), their final bits. */
  readonly #ids = new Map<string, number>();
  readonly #subsets: Int32Array[] = [];
  readonly #next: Int32Array[] = [];
  readonly #flags: number[] = [];
  readonly #start: number;
  readonly #counts = new Map<number, number>();

  private constructor(
    readonly region: string,
    private readonly minLength: number,
    private readonly maxLength: number,
    regionLengths: readonly number[],
    general: string,
    types: readonly ({ pattern: string; lengths: readonly number[] | undefined } | undefined)[],
  ) {
    const lengthBits = (lengths: readonly number[]): number => lengths.reduce((bits, l) => bits | (1 << l), 0);
    this.#nfa.add(general, GENERAL);
    types.forEach((type, t) => {
      this.#typeLengths[t] = type === undefined ? 0 : lengthBits(type.lengths ?? regionLengths);
      if (type !== undefined) this.#nfa.add(type.pattern, 1 << t);
    });
    this.#start = this.#intern([this.#nfa.start]);
  }

  /** The class of the national number digits[from, to), or NOT_VALID. */
  classOf(digits: ArrayLike<number>, from: number, to: number): number {
    let id = this.#start;
    for (let i = from; i < to && id >= 0; i++) id = this.#step(id, digits[i]);
    return id < 0 ? NOT_VALID : this.#classOfFlags(this.#flags[id], to - from);
  }

  /** How many numbers of length to - from and class `cls` start with digits[from, from + kept). */
  size(digits: ArrayLike<number>, from: number, kept: number, to: number, cls: number): number {
    const id = this.#walk(digits, from, from + kept);
    return this.#count(id, to - from - kept, to - from, cls);
  }

  /** The rank of digits[from, to) among the numbers size() counts, in digit order. */
  rank(digits: ArrayLike<number>, from: number, kept: number, to: number, cls: number): number {
    const length = to - from;
    let id = this.#walk(digits, from, from + kept);
    let rank = 0;
    for (let i = from + kept; i < to; i++) {
      const left = to - i - 1;
      for (let d = 0; d < digits[i]; d++) rank += this.#count(this.#step(id, d), left, length, cls);
      id = this.#step(id, digits[i]);
    }
    return rank;
  }

  /** Writes into digits[from + kept, to) the number of rank `rank` (the inverse of rank()). */
  unrank(rank: number, digits: Uint16Array, from: number, kept: number, to: number, cls: number): void {
    const length = to - from;
    let id = this.#walk(digits, from, from + kept);
    for (let i = from + kept; i < to; i++) {
      const left = to - i - 1;
      let d = 0;
      for (; d < 9; d++) {
        const here = this.#count(this.#step(id, d), left, length, cls);
        if (rank < here) break;
        rank -= here;
      }
      digits[i] = d;
      id = this.#step(id, d);
    }
  }

  #walk(digits: ArrayLike<number>, from: number, to: number): number {
    let id = this.#start;
    for (let i = from; i < to && id >= 0; i++) id = this.#step(id, digits[i]);
    return id;
  }

  #classOfFlags(flags: number, length: number): number {
    if (length < this.minLength || length > this.maxLength || (flags & 0x3ff) === 0) return NOT_VALID;
    let cls = DETECTED | (flags & GENERAL);
    for (let t = 0; t < 10; t++) if ((flags >> t) & 1 && (this.#typeLengths[t] >> length) & 1) cls |= 1 << t;
    return cls;
  }

  /** Digit strings of `left` more digits from DFA state `id` that end a number of `length` digits and class `cls`. */
  #count(id: number, left: number, length: number, cls: number): number {
    if (id < 0) return 0;
    if (left === 0) return this.#classOfFlags(this.#flags[id], length) === cls ? 1 : 0;
    const key = ((id * 18 + left) * 18 + length) * 4096 + cls;
    let n = this.#counts.get(key);
    if (n !== undefined) return n;
    n = 0;
    for (let d = 0; d < 10; d++) n += this.#count(this.#step(id, d), left - 1, length, cls);
    if (this.#counts.size >= MAX_COUNTS) this.#counts.clear();
    this.#counts.set(key, n);
    return n;
  }

  #step(id: number, digit: number): number {
    const next = this.#next[id];
    const known = next[digit];
    if (known !== -2) return known;
    const nfa = this.#nfa;
    const bit = 1 << digit;
    const moved: number[] = [];
    for (const s of this.#subsets[id]) if (nfa.digitMask[s] & bit) moved.push(nfa.digitTo[s]);
    const to = moved.length === 0 ? -1 : this.#intern(moved);
    next[digit] = to;
    return to;
  }

  /** The DFA state of the epsilon closure of `states`. */
  #intern(states: readonly number[]): number {
    const nfa = this.#nfa;
    const seen = new Set<number>();
    const stack = [...states];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (seen.has(s)) continue;
      seen.add(s);
      for (const e of nfa.epsilon[s]) if (!seen.has(e)) stack.push(e);
    }
    // Only states with a digit edge or a final mark decide anything: the rest are dropped, so equal subsets meet.
    const kept = Int32Array.from([...seen].filter((s) => nfa.digitMask[s] !== 0 || nfa.finalBits[s] !== 0)).sort();
    if (kept.length === 0) return -1;
    const key = kept.join(',');
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.#subsets.length;
      this.#ids.set(key, id);
      this.#subsets.push(kept);
      this.#next.push(new Int32Array(10).fill(-2));
      this.#flags.push(kept.reduce((f, s) => f | nfa.finalBits[s], 0));
    }
    return id;
  }
}
