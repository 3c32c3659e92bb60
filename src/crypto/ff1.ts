// NIST SP 800-38G FF1 format-preserving encryption over numeral strings, built for throughput:
// node:crypto AES-ECB does every block, and a batch makes one AES call per Feistel round.

import { createCipheriv, type Cipher } from 'node:crypto';

/** Fixed error messages: they never carry numerals, so callers may pass them on as reasons. */
export const ff1Errors = {
  key: 'FF1: key must be 16, 24 or 32 bytes',
  radix: 'FF1: radix must be an integer from 2 to 65536',
  tweak: 'FF1: tweak must be a Uint8Array',
  tooShort: 'FF1: value too short (radix^length must be at least 1,000,000)',
  tooLong: 'FF1: value too long',
  numeral: 'FF1: numeral outside the radix',
  packed: 'FF1: packed value outside its numerals array',
} as const;

/**
 * Longest numeral string accepted. The standard allows up to 2^32-1; we cap it so one value cannot
 * cost more than a few milliseconds of BigInt arithmetic.
 */
export const FF1_MAX_LENGTH = 4096;

/** The standard's minimum domain: radix^length >= 1,000,000 (SP 800-38G Rev. 1). */
const MIN_DOMAIN = 1_000_000;

/** radix^length as a double (Infinity when it overflows). */
export function ff1DomainSize(radix: number, length: number): number {
  return Math.pow(radix, length);
}

/** Shortest length FF1 accepts for a radix: radix^len >= 1,000,000 and len >= 2. */
export function ff1MinLength(radix: number): number {
  let len = 2;
  while (Math.pow(radix, len) < MIN_DOMAIN) len++;
  return len;
}

// Halves up to this size use double arithmetic: NUM(B) fits in 6 bytes and every Horner step
// (r < 2^45) * 256 + 255 stays below 2^53.
const FAST_DOMAIN_LIMIT = 2 ** 45;
// Horner steps reduce with modExact, which needs step + m <= 2^53: with 16-bit limbs the step is
// below m * 65536, so m * 65537 <= 2^53; with bytes m * 257 <= 2^53. Larger m falls back to `%`.
const LIMB16_DOMAIN_LIMIT = Math.floor(2 ** 53 / 65537);
const BYTE_STEP_LIMIT = Math.floor(2 ** 53 / 257);
const TWO_32 = 4294967296;
// encryptNumbers: radix^length up to 2^52 keeps value + radix^v below 2^53 (see #runNumbers).
const MAX_NUMBER_DOMAIN = 2 ** 52;
// Values processed per AES call in a batch; bounds the scratch memory of huge batches.
const CHUNK = 4096;

/** Everything about one input length that does not depend on the tweak or the values. */
interface LengthPlan {
  readonly n: number;
  readonly u: number;
  readonly v: number;
  /** Bytes of NUM(B) in Q. */
  readonly b: number;
  /** Bytes of S used for y. */
  readonly d: number;
  /** Doubles are exact for both halves. */
  readonly fast: boolean;
  /**
   * Not fast, but the radix is a power of two and Q's varying part and S are one block each: the
   * halves are held as 32-bit words (`words` of them), and mod radix^m is a bit mask (#runWords).
   */
  readonly words: number;
  readonly limb16: boolean;
  /** Byte steps may use modExact (else the slower floating `%`). */
  readonly byteExact: boolean;
  /** radix^n <= 2^52: values may go through encryptNumbers. */
  readonly numbers: boolean;
  readonly mu: number;
  readonly mv: number;
  readonly muBig: bigint;
  readonly mvBig: bigint;
  /**
   * Offset of [i] inside the blocks that vary per round (the last `tailBlocks` of Q). Padding puts
   * [i] || NUM(B) at the end of Q, so both depend on b only, never on the tweak.
   */
  readonly iOffset: number;
  readonly tailBlocks: number;
  /** Tweak states seen recently, keyed by the tweak's bytes (a field has one tweak per class layout). */
  readonly tweaks: Map<string, TweakState>;
}

/** Everything about one (length, tweak) pair that does not depend on the values. */
interface TweakState {
  /** CBC-MAC state after P and the constant blocks of Q. */
  readonly prefix: Uint8Array;
  /** The varying blocks of Q with [i] = 0 and NUM(B) = 0: tweak tail and zero padding. */
  readonly tail: Uint8Array;
  /** Fast and word paths: for each round i, prefix XOR tail with [i] set (one block each), as 32-bit words. */
  readonly roundBase: Int32Array;
}

/** Tweak states kept per length; beyond this the cache restarts (recomputing one costs a few AES blocks). */
const MAX_TWEAK_STATES = 256;

/**
 * x mod m for integers with x + m <= 2^53, given inverse = 1 / m, without the floating `%` (a slow
 * library call in V8) or a division. floor(x * inverse) is off by at most one either way (its
 * relative error is about 2^-52 and the quotient is below 2^53 / m), and q * m <= x + m stays exact,
 * so one correction step gives the exact remainder.
 */
function modExact(x: number, m: number, inverse: number): number {
  const r = x - Math.floor(x * inverse) * m;
  return r < 0 ? r + m : r >= m ? r - m : r;
}

/** Writes x (an integer below 2^45) as its last `b` big-endian bytes XORed into out[..end]. */
function xorBigEndian(x: number, out: Uint8Array, end: number, b: number): void {
  const high = Math.floor(x / TWO_32);
  let low = x - high * TWO_32;
  let k = end;
  const stop = end - b;
  for (let t = 0; t < 4 && k > stop; t++, k--) {
    out[k] ^= low & 255;
    low >>>= 8;
  }
  for (let h = high; k > stop; k--) {
    out[k] ^= h & 255;
    h >>>= 8;
  }
}

/**
 * Writes x (an integer below 2^45) as numerals out[from..to) in radix, most significant first.
 * `shift` is log2(radix) for a power-of-two radix (radix 2 carries every mixed-class value), else 0.
 */
function writeNumerals(x: number, radix: number, inverse: number, shift: number, out: Uint16Array, from: number, to: number): void {
  let k = to - 1;
  if (shift > 0) {
    // Power of two: digits are bit fields; the part above 2^32 goes through doubles first.
    const mask = radix - 1;
    const high = Math.floor(x / TWO_32);
    let low = x - high * TWO_32;
    let bits = 32;
    while (k >= from && bits >= shift) {
      out[k--] = low & mask;
      low >>>= shift;
      bits -= shift;
    }
    if (k < from) return;
    // Combine the leftover low bits with the high word (below 2^13) and go on with shifts.
    let rest = (high << bits) | low;
    for (; k >= from; k--) {
      out[k] = rest & mask;
      rest >>>= shift;
    }
    return;
  }
  for (; k >= from; k--) {
    // As in modExact, the quotient is off by at most one: x + radix <= 2^53 keeps it exact.
    let q = Math.floor(x * inverse);
    let digit = x - q * radix;
    if (digit < 0) {
      digit += radix;
      q--;
    } else if (digit >= radix) {
      digit -= radix;
      q++;
    }
    out[k] = digit;
    x = q;
  }
}

function byteLengthOf(x: bigint): number {
  let bytes = 0;
  while (x > 0n) {
    x >>= 8n;
    bytes++;
  }
  return bytes;
}

export class FF1 {
  readonly radix: number;
  readonly minLength: number;
  readonly maxLength = FF1_MAX_LENGTH;
  readonly #ecb: Cipher;
  readonly #radixBig: bigint;
  readonly #plans = new Map<number, LengthPlan>();
  // Scratch reused across calls: halves as doubles and the AES input blocks.
  #a = new Float64Array(1);
  #b = new Float64Array(1);
  #blocks = Buffer.alloc(0);
  #blockWords = new Int32Array(0);

  constructor(key: Uint8Array, radix: number) {
    if (!(key instanceof Uint8Array) || (key.length !== 16 && key.length !== 24 && key.length !== 32)) {
      throw new Error(ff1Errors.key);
    }
    if (!Number.isInteger(radix) || radix < 2 || radix > 65536) throw new Error(ff1Errors.radix);
    this.radix = radix;
    this.#radixBig = BigInt(radix);
    this.minLength = ff1MinLength(radix);
    this.#ecb = createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
    this.#ecb.setAutoPadding(false);
  }

  encrypt(numerals: ArrayLike<number>, tweak: Uint8Array): Uint16Array {
    return this.#single(numerals, tweak, false);
  }

  decrypt(numerals: ArrayLike<number>, tweak: Uint8Array): Uint16Array {
    return this.#single(numerals, tweak, true);
  }

  /**
   * Encrypts many values, under one tweak or one tweak per value; values may differ in length. All
   * are checked first. Values of one length share each Feistel round's AES call whatever their tweak.
   */
  encryptBatch(values: readonly ArrayLike<number>[], tweak: Uint8Array | readonly Uint8Array[]): Uint16Array[] {
    return this.#batch(values, tweak, false);
  }

  decryptBatch(values: readonly ArrayLike<number>[], tweak: Uint8Array | readonly Uint8Array[]): Uint16Array[] {
    return this.#batch(values, tweak, true);
  }

  /**
   * Encrypts values packed in one array, in place: value k is numerals[starts[k], starts[k] +
   * lengths[k]) under tweaks[k]. Only the values listed in `which` (default: all) are touched, which
   * lets a caller cycle-walk just the values that need another pass. The packed form exists for
   * throughput: no per-value arrays are allocated. All selected values are checked before any changes.
   */
  encryptPacked(numerals: Uint16Array, starts: ArrayLike<number>, lengths: ArrayLike<number>, tweaks: readonly Uint8Array[], which?: readonly number[]): void {
    this.#packed(numerals, starts, lengths, tweaks, which, false);
  }

  decryptPacked(numerals: Uint16Array, starts: ArrayLike<number>, lengths: ArrayLike<number>, tweaks: readonly Uint8Array[], which?: readonly number[]): void {
    this.#packed(numerals, starts, lengths, tweaks, which, true);
  }

  /**
   * Encrypts values given as integers, in place: values[k] is NUM_radix(X) of a numeral string X of
   * lengths[k] numerals (leading zeros count), under tweaks[k]; the result is NUM_radix of FF1's
   * output. Needs radix^length <= 2^52 (see numbersFit). Saves callers that hold a value as a
   * number (a mixed-radix rank) from spelling it out as numerals and back; `which` as in encryptPacked.
   */
  encryptNumbers(values: Float64Array, lengths: ArrayLike<number>, tweaks: readonly Uint8Array[], which?: readonly number[]): void {
    this.#numbers(values, lengths, tweaks, which, false);
  }

  decryptNumbers(values: Float64Array, lengths: ArrayLike<number>, tweaks: readonly Uint8Array[], which?: readonly number[]): void {
    this.#numbers(values, lengths, tweaks, which, true);
  }

  /** Whether values of this many numerals can go through encryptNumbers. */
  numbersFit(length: number): boolean {
    // Repeated products are exact up to 2^53 (Math.pow is not promised to be).
    let domain = 1;
    for (let i = 0; i < length; i++) if ((domain *= this.radix) > MAX_NUMBER_DOMAIN) return false;
    return true;
  }

  /** Why a value cannot be processed (one of ff1Errors), or undefined; lets callers pre-filter batches. */
  problemWith(numerals: ArrayLike<number>): string | undefined {
    return this.#problemAt(numerals, 0, numerals.length);
  }

  #problemAt(numerals: ArrayLike<number>, start: number, n: number): string | undefined {
    if (n < this.minLength) return ff1Errors.tooShort;
    if (n > FF1_MAX_LENGTH) return ff1Errors.tooLong;
    const radix = this.radix;
    for (let i = start, end = start + n; i < end; i++) {
      const x = numerals[i];
      if (x >>> 0 !== x || x >= radix) return ff1Errors.numeral;
    }
    return undefined;
  }

  #checkNumerals(numerals: ArrayLike<number>, index?: number): void {
    const problem = this.problemWith(numerals);
    if (problem !== undefined) throw new Error(index === undefined ? problem : `${problem} (value ${index})`);
  }

  #checkTweak(tweak: Uint8Array): void {
    if (!(tweak instanceof Uint8Array)) throw new Error(ff1Errors.tweak);
  }

  #single(numerals: ArrayLike<number>, tweak: Uint8Array, decrypt: boolean): Uint16Array {
    this.#checkTweak(tweak);
    this.#checkNumerals(numerals);
    const out = Uint16Array.from(numerals);
    this.#runGroup(out, [0], [0], [tweak], out.length, decrypt);
    return out;
  }

  /** The array API over the packed one: values are copied in (after checking) and sliced out. */
  #batch(values: readonly ArrayLike<number>[], tweak: Uint8Array | readonly Uint8Array[], decrypt: boolean): Uint16Array[] {
    let tweaks: readonly Uint8Array[];
    if (tweak instanceof Uint8Array) {
      tweaks = new Array<Uint8Array>(values.length).fill(tweak);
    } else {
      if (!Array.isArray(tweak) || tweak.length !== values.length) throw new Error(ff1Errors.tweak);
      tweaks = tweak;
    }
    const starts = new Array<number>(values.length);
    const lengths = new Array<number>(values.length);
    let total = 0;
    for (let i = 0; i < values.length; i++) {
      this.#checkNumerals(values[i], i);
      starts[i] = total;
      lengths[i] = values[i].length;
      total += values[i].length;
    }
    const packed = new Uint16Array(total);
    for (let i = 0; i < values.length; i++) packed.set(values[i], starts[i]);
    this.#packed(packed, starts, lengths, tweaks, undefined, decrypt);
    const out = new Array<Uint16Array>(values.length);
    for (let i = 0; i < values.length; i++) out[i] = packed.slice(starts[i], starts[i] + lengths[i]);
    packed.fill(0);
    return out;
  }

  #packed(
    numerals: Uint16Array,
    starts: ArrayLike<number>,
    lengths: ArrayLike<number>,
    tweaks: readonly Uint8Array[],
    which: readonly number[] | undefined,
    decrypt: boolean,
  ): void {
    const count = which === undefined ? lengths.length : which.length;
    if (starts.length !== lengths.length || tweaks.length !== lengths.length) throw new Error(ff1Errors.tweak);
    // Check everything first, so a bad value leaves the whole batch untouched; group by length.
    const byLength = new Map<number, number[]>();
    for (let j = 0; j < count; j++) {
      const k = which === undefined ? j : which[j];
      this.#checkTweak(tweaks[k]);
      const n = lengths[k];
      const start = starts[k];
      if (!(Number.isInteger(start) && Number.isInteger(n) && start >= 0 && start + n <= numerals.length)) {
        throw new Error(`${ff1Errors.packed} (value ${k})`);
      }
      const problem = this.#problemAt(numerals, start, n);
      if (problem !== undefined) throw new Error(`${problem} (value ${k})`);
      const group = byLength.get(n);
      if (group === undefined) byLength.set(n, [k]);
      else group.push(k);
    }
    for (const [n, indices] of byLength) {
      for (let from = 0; from < indices.length; from += CHUNK) {
        const chunk = indices.length <= CHUNK ? indices : indices.slice(from, from + CHUNK);
        this.#runGroup(numerals, starts, chunk, tweaks, n, decrypt);
      }
    }
  }

  #numbers(values: Float64Array, lengths: ArrayLike<number>, tweaks: readonly Uint8Array[], which: readonly number[] | undefined, decrypt: boolean): void {
    const count = which === undefined ? lengths.length : which.length;
    if (tweaks.length !== lengths.length || values.length !== lengths.length) throw new Error(ff1Errors.tweak);
    const byLength = new Map<number, number[]>();
    for (let j = 0; j < count; j++) {
      const k = which === undefined ? j : which[j];
      this.#checkTweak(tweaks[k]);
      const n = lengths[k];
      if (!(Number.isInteger(n) && n >= this.minLength)) throw new Error(`${ff1Errors.tooShort} (value ${k})`);
      // radix >= 2, so more than 52 numerals never fit; checked before a plan is made for n.
      const plan = n <= 52 ? this.#planFor(n) : undefined;
      if (plan === undefined || !plan.numbers) throw new Error(`${ff1Errors.tooLong} (value ${k})`);
      // mu * mv = radix^n exactly (both come from BigInt powers and the product is below 2^53).
      const x = values[k];
      if (!(x >= 0 && x < plan.mu * plan.mv && Math.floor(x) === x)) throw new Error(`${ff1Errors.numeral} (value ${k})`);
      const group = byLength.get(n);
      if (group === undefined) byLength.set(n, [k]);
      else group.push(k);
    }
    for (const [n, indices] of byLength) {
      const plan = this.#planFor(n);
      if (!plan.fast) throw new Error('FF1: internal layout error');
      for (let from = 0; from < indices.length; from += CHUNK) {
        const chunk = indices.length <= CHUNK ? indices : indices.slice(from, from + CHUNK);
        this.#runNumbers(plan, values, chunk, this.#statesFor(plan, chunk, tweaks), decrypt);
      }
    }
  }

  /** Runs FF1 in place on the checked values `indices`, all of length n, each under its tweak. */
  #runGroup(numerals: Uint16Array, starts: ArrayLike<number>, indices: readonly number[], tweaks: readonly Uint8Array[], n: number, decrypt: boolean): void {
    const plan = this.#planFor(n);
    const states = this.#statesFor(plan, indices, tweaks);
    if (plan.fast) this.#runFast(plan, numerals, starts, indices, states, decrypt);
    else if (plan.words > 0) this.#runWords(plan, numerals, starts, indices, states, decrypt);
    else this.#runBig(plan, numerals, starts, indices, states, decrypt);
  }

  #planFor(n: number): LengthPlan {
    let plan = this.#plans.get(n);
    if (plan === undefined) {
      plan = this.#newPlan(n);
      this.#plans.set(n, plan);
    }
    return plan;
  }

  /**
   * The tweak state of each value. Tweaks are resolved once per distinct object in this call (the
   * caller cannot change them while we run) and cached across calls by their bytes, never by object
   * identity, so a caller reusing a mutated array still gets the right state.
   */
  #statesFor(plan: LengthPlan, indices: readonly number[], tweaks: readonly Uint8Array[]): TweakState[] {
    const states = new Array<TweakState>(indices.length);
    let lastTweak: Uint8Array | undefined;
    let lastState: TweakState | undefined;
    let seen: Map<Uint8Array, TweakState> | undefined;
    for (let j = 0; j < indices.length; j++) {
      const tweak = tweaks[indices[j]];
      if (tweak !== lastTweak) {
        if (lastTweak !== undefined) (seen ??= new Map()).set(lastTweak, lastState as TweakState);
        lastState = seen?.get(tweak) ?? this.#stateFor(plan, tweak);
        lastTweak = tweak;
      }
      states[j] = lastState as TweakState;
    }
    return states;
  }

  #stateFor(plan: LengthPlan, tweak: Uint8Array): TweakState {
    const id = Buffer.from(tweak.buffer, tweak.byteOffset, tweak.length).toString('latin1');
    let state = plan.tweaks.get(id);
    if (state === undefined) {
      state = this.#newTweakState(plan, tweak);
      if (plan.tweaks.size >= MAX_TWEAK_STATES) plan.tweaks.clear();
      plan.tweaks.set(id, state);
    }
    return state;
  }

  #newPlan(n: number): LengthPlan {
    const u = n >> 1;
    const v = n - u;
    const muBig = this.#radixBig ** BigInt(u);
    const mvBig = this.#radixBig ** BigInt(v);
    // b = ceil(ceil(v * log2(radix)) / 8) is exactly the byte length of radix^v - 1.
    const b = byteLengthOf(mvBig - 1n);
    const d = 4 * Math.ceil(b / 4) + 4;
    const mv = Number(mvBig);
    const fast = mvBig <= BigInt(FAST_DOMAIN_LIMIT);
    // Q = T || [0]pad || [i]1 || NUM(B)b with |Q| a multiple of 16: [i] sits 1 + b bytes before the end.
    const iOffset = (((15 - b) % 16) + 16) % 16;
    const bits = 31 - Math.clz32(this.radix);
    const powerOfTwo = this.radix === 2 ** bits;
    return {
      n,
      u,
      v,
      b,
      d,
      fast,
      // d <= 16 (so b <= 12, halves of at most 96 bits): one block of Q varies, S is R alone.
      words: !fast && powerOfTwo && d <= 16 ? Math.ceil((v * bits) / 32) : 0,
      limb16: mv <= LIMB16_DOMAIN_LIMIT,
      byteExact: mv <= BYTE_STEP_LIMIT,
      numbers: muBig * mvBig <= BigInt(MAX_NUMBER_DOMAIN),
      mu: Number(muBig),
      mv,
      muBig,
      mvBig,
      iOffset,
      tailBlocks: (iOffset + 1 + b) / 16,
      tweaks: new Map(),
    };
  }

  /**
   * PRF(P || Q) is a CBC-MAC; everything before [i] in Q depends only on the tweak, so its chain
   * state is computed once per tweak and each round then needs only the varying last block(s).
   */
  #newTweakState(plan: LengthPlan, tweak: Uint8Array): TweakState {
    const t = tweak.length;
    const { n, u, b } = plan;
    const radix = this.radix;
    const pad = (((-t - b - 1) % 16) + 16) % 16;
    const qLength = t + pad + 1 + b;
    const q = new Uint8Array(qLength);
    q.set(tweak, 0);
    const iPos = t + pad;
    const firstVarying = Math.floor(iPos / 16);
    // P = [1]1 [2]1 [1]1 [radix]3 [10]1 [u mod 256]1 [n]4 [t]4
    const p = Buffer.from([
      1, 2, 1, (radix >>> 16) & 0xff, (radix >>> 8) & 0xff, radix & 0xff, 10, u & 0xff,
      (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff,
      (t >>> 24) & 0xff, (t >>> 16) & 0xff, (t >>> 8) & 0xff, t & 0xff,
    ]);
    let state: Uint8Array = this.#ecb.update(p);
    for (let blk = 0; blk < firstVarying; blk++) {
      const x = Buffer.allocUnsafe(16);
      for (let k = 0; k < 16; k++) x[k] = state[k] ^ q[blk * 16 + k];
      state = this.#ecb.update(x);
    }
    const prefix = new Uint8Array(state);
    const tail = q.slice(firstVarying * 16);
    const iOffset = iPos - firstVarying * 16;
    if (iOffset !== plan.iOffset || tail.length !== plan.tailBlocks * 16) throw new Error('FF1: internal layout error');
    let roundBase = new Int32Array(0);
    if (plan.fast || plan.words > 0) {
      // Fast and word paths: b <= 12, so the varying part is exactly one block.
      roundBase = new Int32Array(40);
      const bytes = new Uint8Array(roundBase.buffer);
      for (let i = 0; i < 10; i++) {
        for (let k = 0; k < 16; k++) bytes[i * 16 + k] = prefix[k] ^ tail[k];
        bytes[i * 16 + iOffset] ^= i;
      }
    }
    return { prefix, tail, roundBase };
  }

  #scratch(count: number): void {
    if (this.#a.length < count) {
      this.#a = new Float64Array(count);
      this.#b = new Float64Array(count);
    }
    if (this.#blocks.length < count * 16) {
      // Own ArrayBuffer at offset 0, so the 32-bit view below is aligned.
      const memory = new ArrayBuffer(count * 16);
      this.#blocks = Buffer.from(memory);
      this.#blockWords = new Int32Array(memory);
    }
  }

  /** Both halves below 2^45: numerals become doubles, each round is one AES call for all values. */
  #runFast(plan: LengthPlan, numerals: Uint16Array, starts: ArrayLike<number>, indices: readonly number[], states: readonly TweakState[], decrypt: boolean): void {
    const count = indices.length;
    this.#scratch(count);
    const A = this.#a;
    const B = this.#b;
    const { u, n } = plan;
    const radix = this.radix;
    for (let j = 0; j < count; j++) {
      const s = starts[indices[j]];
      let a = 0;
      for (let k = s, end = s + u; k < end; k++) a = a * radix + numerals[k];
      let bb = 0;
      for (let k = s + u, end = s + n; k < end; k++) bb = bb * radix + numerals[k];
      A[j] = a;
      B[j] = bb;
    }
    this.#rounds(plan, count, states, decrypt);
    const invRadix = 1 / radix;
    const shift = (radix & (radix - 1)) === 0 ? 31 - Math.clz32(radix) : 0;
    for (let j = 0; j < count; j++) {
      const s = starts[indices[j]];
      writeNumerals(A[j], radix, invRadix, shift, numerals, s, s + u);
      writeNumerals(B[j], radix, invRadix, shift, numerals, s + u, s + n);
    }
    A.fill(0, 0, count);
    B.fill(0, 0, count);
  }

  /**
   * values[indices[*]] are NUM_radix of numeral strings of one length n with radix^n <= 2^52: the
   * halves are value / radix^v and value mod radix^v, exact in doubles, and no numeral is touched.
   */
  #runNumbers(plan: LengthPlan, values: Float64Array, indices: readonly number[], states: readonly TweakState[], decrypt: boolean): void {
    const count = indices.length;
    this.#scratch(count);
    const A = this.#a;
    const B = this.#b;
    const { mv } = plan;
    const invMv = 1 / mv;
    for (let j = 0; j < count; j++) {
      // value + mv < 2^53, so modExact's argument holds and the quotient is exact.
      const x = values[indices[j]];
      const low = modExact(x, mv, invMv);
      A[j] = (x - low) / mv;
      B[j] = low;
    }
    this.#rounds(plan, count, states, decrypt);
    for (let j = 0; j < count; j++) values[indices[j]] = A[j] * mv + B[j];
    A.fill(0, 0, count);
    B.fill(0, 0, count);
  }

  /** The ten Feistel rounds over the halves in this.#a / this.#b[0, count). */
  #rounds(plan: LengthPlan, count: number, states: readonly TweakState[], decrypt: boolean): void {
    const A = this.#a;
    const B = this.#b;
    const blocks = this.#blocks;
    const words = this.#blockWords;
    const { b, d, mu, mv, limb16, byteExact } = plan;
    // Encrypt feeds B to the PRF and adds to A; decrypt feeds A and subtracts from B, rounds reversed.
    // Each round's result goes into `other` and the two arrays then swap roles, instead of moving
    // every value; after the 10 (an even number of) rounds A and B are back in their own arrays.
    let fed = decrypt ? A : B;
    let other = decrypt ? B : A;
    const firstBytes = d < 6 ? d : 6;
    let oneState = true;
    for (let j = 1; j < count && oneState; j++) oneState = states[j] === states[0];
    for (let r = 0; r < 10; r++) {
      const i = decrypt ? 9 - r : r;
      const m = i % 2 === 0 ? mu : mv;
      const invM = 1 / m;
      const r4 = i * 4;
      if (oneState) {
        // The usual case (one tweak per field and length): the round's base block is a constant.
        const roundBase = states[0].roundBase;
        const w0 = roundBase[r4];
        const w1 = roundBase[r4 + 1];
        const w2 = roundBase[r4 + 2];
        const w3 = roundBase[r4 + 3];
        for (let j = 0, w = 0; j < count; j++, w += 4) {
          words[w] = w0;
          words[w + 1] = w1;
          words[w + 2] = w2;
          words[w + 3] = w3;
          xorBigEndian(fed[j], blocks, w * 4 + 15, b);
        }
      } else {
        for (let j = 0, w = 0; j < count; j++, w += 4) {
          copyRoundBase(states[j].roundBase, r4, words, w);
          xorBigEndian(fed[j], blocks, w * 4 + 15, b);
        }
      }
      const out = this.#ecb.update(blocks.subarray(0, count * 16));
      for (let j = 0; j < count; j++) {
        const off = j * 16;
        // y mod m by Horner: the first 6 bytes at once (< 2^48), then 16- or 8-bit limbs.
        let y = 0;
        for (let k = 0; k < firstBytes; k++) y = y * 256 + out[off + k];
        y = modExact(y, m, invM);
        if (limb16) {
          for (let k = firstBytes; k < d; k += 2) y = modExact(y * 65536 + ((out[off + k] << 8) | out[off + k + 1]), m, invM);
        } else if (byteExact) {
          for (let k = firstBytes; k < d; k++) y = modExact(y * 256 + out[off + k], m, invM);
        } else {
          for (let k = firstBytes; k < d; k++) y = (y * 256 + out[off + k]) % m;
        }
        let c: number;
        if (decrypt) {
          c = other[j] - y;
          if (c < 0) c += m;
        } else {
          c = other[j] + y;
          if (c >= m) c -= m;
        }
        other[j] = c;
      }
      const swap = fed;
      fed = other;
      other = swap;
      out.fill(0);
    }
    blocks.fill(0, 0, count * 16);
  }

  /**
   * A power-of-two radix 2^s whose halves are too large for doubles but fit in 96 bits (IPv6
   * addresses: 32 hex digits, two 64-bit halves): no BigInt. A half is `words` 32-bit words, least
   * significant first; NUM_radix is its bits, radix^m is 2^(s*m), so y mod radix^m is the low s*m
   * bits of S and the Feistel sum is a word addition with carry, masked. Same results as #runBig
   * bit for bit (test/crypto/ff1.test.ts compares both with @noble/ciphers).
   */
  #runWords(plan: LengthPlan, numerals: Uint16Array, starts: ArrayLike<number>, indices: readonly number[], states: readonly TweakState[], decrypt: boolean): void {
    const count = indices.length;
    this.#scratch(count);
    const blocks = this.#blocks;
    const words = this.#blockWords;
    const { u, v, n, b, d, words: W } = plan;
    const s = 31 - Math.clz32(this.radix);
    const A = new Uint32Array(count * W);
    const B = new Uint32Array(count * W);
    for (let j = 0; j < count; j++) {
      const at = starts[indices[j]];
      readBits(numerals, at, at + u, s, A, j * W);
      readBits(numerals, at + u, at + n, s, B, j * W);
    }
    let fed = decrypt ? A : B;
    let other = decrypt ? B : A;
    for (let r = 0; r < 10; r++) {
      const i = decrypt ? 9 - r : r;
      const bits = s * (i % 2 === 0 ? u : v);
      const r4 = i * 4;
      for (let j = 0, w = 0; j < count; j++, w += 4) {
        copyRoundBase(states[j].roundBase, r4, words, w);
        // NUM(fed) as b big-endian bytes ending the block.
        const end = w * 4 + 15;
        for (let k = 0; k < b; k++) blocks[end - k] ^= (fed[j * W + (k >>> 2)] >>> ((k & 3) * 8)) & 255;
      }
      const out = this.#ecb.update(blocks.subarray(0, count * 16));
      for (let j = 0; j < count; j++) {
        const last = j * 16 + d - 1;
        let carry = 0;
        for (let w = 0; w < W; w++) {
          const low = w * 32;
          if (low >= bits) {
            other[j * W + w] = 0;
            continue;
          }
          // Word w of S (bytes from its end), masked to the round's bits.
          const k = last - 4 * w;
          let y = (out[k] | (out[k - 1] << 8) | (out[k - 2] << 16) | (out[k - 3] << 24)) >>> 0;
          const mask = bits - low >= 32 ? 0xffffffff : 2 ** (bits - low) - 1;
          y = (y & mask) >>> 0;
          let c: number;
          if (decrypt) {
            c = other[j * W + w] - y - carry;
            carry = c < 0 ? 1 : 0;
            if (c < 0) c += TWO_32;
          } else {
            c = other[j * W + w] + y + carry;
            carry = c >= TWO_32 ? 1 : 0;
            if (c >= TWO_32) c -= TWO_32;
          }
          other[j * W + w] = (c & mask) >>> 0;
        }
      }
      const swap = fed;
      fed = other;
      other = swap;
      out.fill(0);
    }
    for (let j = 0; j < count; j++) {
      const at = starts[indices[j]];
      writeBits(A, j * W, s, numerals, at, at + u);
      writeBits(B, j * W, s, numerals, at + u, at + n);
    }
    blocks.fill(0, 0, count * 16);
    A.fill(0);
    B.fill(0);
  }

  /** Halves too large for doubles: BigInt arithmetic, AES still batched per chained block. */
  #runBig(plan: LengthPlan, numerals: Uint16Array, starts: ArrayLike<number>, indices: readonly number[], states: readonly TweakState[], decrypt: boolean): void {
    const count = indices.length;
    const { u, n, b, d, muBig, mvBig, iOffset, tailBlocks } = plan;
    const radix = this.radix;
    const A = new Array<bigint>(count);
    const B = new Array<bigint>(count);
    for (let j = 0; j < count; j++) {
      const s = starts[indices[j]];
      A[j] = numRadix(numerals, s, s + u, radix);
      B[j] = numRadix(numerals, s + u, s + n, radix);
    }
    const fed = decrypt ? A : B;
    const other = decrypt ? B : A;
    const tailLength = tailBlocks * 16;
    const qTails = Buffer.alloc(count * tailLength);
    const blocks = Buffer.alloc(count * 16);
    const extraBlocks = Math.ceil(d / 16) - 1;
    const extra = Buffer.alloc(count * 16 * Math.max(extraBlocks, 0));
    const s = Buffer.alloc(d);
    for (let r = 0; r < 10; r++) {
      const i = decrypt ? 9 - r : r;
      const m = i % 2 === 0 ? muBig : mvBig;
      for (let j = 0; j < count; j++) {
        const off = j * tailLength;
        qTails.set(states[j].tail, off);
        qTails[off + iOffset] = i;
        writeBigEndian(fed[j], qTails, off + tailLength - b, b);
      }
      // CBC-MAC over the varying blocks, one AES call per block position for all values.
      let state: Buffer | undefined;
      for (let blk = 0; blk < tailBlocks; blk++) {
        for (let j = 0; j < count; j++) {
          const qOff = j * tailLength + blk * 16;
          const off = j * 16;
          const prefix = states[j].prefix;
          for (let k = 0; k < 16; k++) blocks[off + k] = (state === undefined ? prefix[k] : state[off + k]) ^ qTails[qOff + k];
        }
        state = this.#ecb.update(blocks);
      }
      const R = state as Buffer;
      if (extraBlocks > 0) {
        // S = R || CIPH(R xor [1]16) || CIPH(R xor [2]16) ...
        for (let j = 0; j < count; j++) {
          for (let e = 1; e <= extraBlocks; e++) {
            const off = (j * extraBlocks + e - 1) * 16;
            R.copy(extra, off, j * 16, j * 16 + 16);
            extra[off + 15] ^= e & 0xff;
            extra[off + 14] ^= (e >>> 8) & 0xff;
          }
        }
      }
      const extraOut = extraBlocks > 0 ? this.#ecb.update(extra) : undefined;
      for (let j = 0; j < count; j++) {
        R.copy(s, 0, j * 16, j * 16 + Math.min(16, d));
        if (extraOut !== undefined) {
          extraOut.copy(s, 16, j * extraBlocks * 16, j * extraBlocks * 16 + (d - 16));
        }
        const y = BigInt('0x' + s.toString('hex'));
        let c = decrypt ? (other[j] - y) % m : (other[j] + y) % m;
        if (c < 0n) c += m;
        other[j] = fed[j];
        fed[j] = c;
      }
      R.fill(0);
      extraOut?.fill(0);
    }
    for (let j = 0; j < count; j++) {
      const s = starts[indices[j]];
      strRadix(A[j], numerals, s, s + u, radix);
      strRadix(B[j], numerals, s + u, s + n, radix);
    }
    qTails.fill(0);
    blocks.fill(0);
    extra.fill(0);
    s.fill(0);
  }
}

/** Round i's base block (roundBase[4i..4i+4), as 32-bit words) into words[w..w+4). */
function copyRoundBase(roundBase: Int32Array, r4: number, words: Int32Array, w: number): void {
  words[w] = roundBase[r4];
  words[w + 1] = roundBase[r4 + 1];
  words[w + 2] = roundBase[r4 + 2];
  words[w + 3] = roundBase[r4 + 3];
}

/** NUM_2^s(x[from..to)) as 32-bit words at out[at..], least significant first (out is zeroed). */
function readBits(x: ArrayLike<number>, from: number, to: number, s: number, out: Uint32Array, at: number): void {
  for (let i = to - 1, bit = 0; i >= from; i--, bit += s) {
    const w = at + (bit >>> 5);
    const off = bit & 31;
    out[w] |= x[i] << off;
    if (off + s > 32) out[w + 1] |= x[i] >>> (32 - off);
  }
}

/** STR_2^s of the words at words[at..] into out[from..to), most significant numeral first. */
function writeBits(words: Uint32Array, at: number, s: number, out: Uint16Array, from: number, to: number): void {
  const mask = 2 ** s - 1;
  for (let i = to - 1, bit = 0; i >= from; i--, bit += s) {
    const w = at + (bit >>> 5);
    const off = bit & 31;
    let digit = words[w] >>> off;
    if (off + s > 32) digit |= words[w + 1] << (32 - off);
    out[i] = digit & mask;
  }
}

/** Largest k with radix^k <= 2^53, so k numerals make one exact double. */
function digitsPerDouble(radix: number): number {
  let k = 1;
  while (Math.pow(radix, k + 1) <= 2 ** 53) k++;
  return k;
}

/** NUM_radix(x[from..to)) as a BigInt, grouping numerals into doubles to cut BigInt steps. */
function numRadix(x: ArrayLike<number>, from: number, to: number, radix: number): bigint {
  const k = digitsPerDouble(radix);
  let acc = 0n;
  for (let i = from; i < to; i += k) {
    const end = Math.min(i + k, to);
    let chunk = 0;
    for (let j = i; j < end; j++) chunk = chunk * radix + x[j];
    acc = acc * BigInt(radix) ** BigInt(end - i) + BigInt(chunk);
  }
  return acc;
}

/** STR_radix of c into out[from..to), most significant numeral first. */
function strRadix(c: bigint, out: Uint16Array, from: number, to: number, radix: number): void {
  const k = digitsPerDouble(radix);
  const chunkBase = BigInt(radix) ** BigInt(k);
  let pos = to;
  while (pos > from) {
    let chunk = Number(c % chunkBase);
    c /= chunkBase;
    for (let j = 0; j < k && pos > from; j++) {
      const digit = chunk % radix;
      out[--pos] = digit;
      chunk = (chunk - digit) / radix;
    }
  }
}

/** Writes x as `length` big-endian bytes at out[offset..]. */
function writeBigEndian(x: bigint, out: Uint8Array, offset: number, length: number): void {
  if (length === 0) return;
  const hex = x.toString(16).padStart(length * 2, '0');
  for (let i = 0; i < length; i++) out[offset + i] = parseInt(hex.substr(i * 2, 2), 16);
}
