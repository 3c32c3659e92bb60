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
// With 16-bit limbs the Horner step needs M * 65536 <= 2^53.
const LIMB16_DOMAIN_LIMIT = 2 ** 37;
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
  readonly limb16: boolean;
  readonly mu: number;
  readonly mv: number;
  readonly muBig: bigint;
  readonly mvBig: bigint;
  /** Offset of [i] inside the blocks that vary per round (the last `tailBlocks` of Q). */
  iOffset: number;
  tailBlocks: number;
  /** Tweak-dependent state for the last tweak seen (tweaks are nearly always constant per field). */
  tweak: Uint8Array | undefined;
  /** CBC-MAC state after P and the constant blocks of Q. */
  prefix: Uint8Array;
  /** The varying blocks of Q with [i] = 0 and NUM(B) = 0: tweak tail and zero padding. */
  tail: Uint8Array;
  /** Fast path: for each round i, prefix XOR tail with [i] set (one block each), as 32-bit words. */
  roundBase: Int32Array;
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
    this.#checkTweak(tweak);
    this.#checkNumerals(numerals);
    return this.#run([numerals], [0], tweak, false)[0];
  }

  decrypt(numerals: ArrayLike<number>, tweak: Uint8Array): Uint16Array {
    this.#checkTweak(tweak);
    this.#checkNumerals(numerals);
    return this.#run([numerals], [0], tweak, true)[0];
  }

  /** Encrypts many values under one tweak; values may differ in length. All are checked first. */
  encryptBatch(values: readonly ArrayLike<number>[], tweak: Uint8Array): Uint16Array[] {
    return this.#batch(values, tweak, false);
  }

  decryptBatch(values: readonly ArrayLike<number>[], tweak: Uint8Array): Uint16Array[] {
    return this.#batch(values, tweak, true);
  }

  /** Why a value cannot be processed (one of ff1Errors), or undefined; lets callers pre-filter batches. */
  problemWith(numerals: ArrayLike<number>): string | undefined {
    const n = numerals.length;
    if (n < this.minLength) return ff1Errors.tooShort;
    if (n > FF1_MAX_LENGTH) return ff1Errors.tooLong;
    const radix = this.radix;
    for (let i = 0; i < n; i++) {
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

  #batch(values: readonly ArrayLike<number>[], tweak: Uint8Array, decrypt: boolean): Uint16Array[] {
    this.#checkTweak(tweak);
    const byLength = new Map<number, number[]>();
    for (let i = 0; i < values.length; i++) {
      this.#checkNumerals(values[i], i);
      const n = values[i].length;
      const group = byLength.get(n);
      if (group === undefined) byLength.set(n, [i]);
      else group.push(i);
    }
    const out = new Array<Uint16Array>(values.length);
    for (const indices of byLength.values()) {
      for (let start = 0; start < indices.length; start += CHUNK) {
        const chunk = indices.length <= CHUNK ? indices : indices.slice(start, start + CHUNK);
        const results = this.#run(values, chunk, tweak, decrypt);
        for (let j = 0; j < chunk.length; j++) out[chunk[j]] = results[j];
      }
    }
    return out;
  }

  /** Runs FF1 on values[indices[*]], which are checked and all of the same length. */
  #run(values: readonly ArrayLike<number>[], indices: readonly number[], tweak: Uint8Array, decrypt: boolean): Uint16Array[] {
    const plan = this.#planFor(values[indices[0]].length, tweak);
    return plan.fast
      ? this.#runFast(plan, values, indices, decrypt)
      : this.#runBig(plan, values, indices, decrypt);
  }

  #planFor(n: number, tweak: Uint8Array): LengthPlan {
    let plan = this.#plans.get(n);
    if (plan === undefined) {
      plan = this.#newPlan(n);
      this.#plans.set(n, plan);
    }
    if (plan.tweak === undefined || !sameBytes(plan.tweak, tweak)) this.#setTweak(plan, tweak);
    return plan;
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
    return {
      n,
      u,
      v,
      b,
      d,
      fast,
      limb16: mv <= LIMB16_DOMAIN_LIMIT,
      mu: Number(muBig),
      mv,
      muBig,
      mvBig,
      iOffset: 0,
      tailBlocks: 0,
      tweak: undefined,
      prefix: new Uint8Array(16),
      tail: new Uint8Array(0),
      roundBase: new Int32Array(0),
    };
  }

  /**
   * PRF(P || Q) is a CBC-MAC; everything before [i] in Q depends only on the tweak, so its chain
   * state is computed once per tweak and each round then needs only the varying last block(s).
   */
  #setTweak(plan: LengthPlan, tweak: Uint8Array): void {
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
    let roundBase = new Int32Array(0);
    if (plan.fast) {
      // Fast path: b <= 6, so the varying part is exactly one block.
      roundBase = new Int32Array(40);
      const bytes = new Uint8Array(roundBase.buffer);
      for (let i = 0; i < 10; i++) {
        for (let k = 0; k < 16; k++) bytes[i * 16 + k] = prefix[k] ^ tail[k];
        bytes[i * 16 + iOffset] ^= i;
      }
    }
    plan.tweak = new Uint8Array(tweak);
    plan.prefix = prefix;
    plan.tail = tail;
    plan.iOffset = iOffset;
    plan.tailBlocks = tail.length / 16;
    plan.roundBase = roundBase;
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
  #runFast(plan: LengthPlan, values: readonly ArrayLike<number>[], indices: readonly number[], decrypt: boolean): Uint16Array[] {
    const count = indices.length;
    this.#scratch(count);
    const A = this.#a;
    const B = this.#b;
    const blocks = this.#blocks;
    const words = this.#blockWords;
    const { u, n, b, d, mu, mv, roundBase, limb16 } = plan;
    const radix = this.radix;
    for (let j = 0; j < count; j++) {
      const x = values[indices[j]];
      let a = 0;
      for (let k = 0; k < u; k++) a = a * radix + x[k];
      let bb = 0;
      for (let k = u; k < n; k++) bb = bb * radix + x[k];
      A[j] = a;
      B[j] = bb;
    }
    // Encrypt feeds B to the PRF and adds to A; decrypt feeds A and subtracts from B, rounds reversed.
    const fed = decrypt ? A : B;
    const other = decrypt ? B : A;
    const firstBytes = d < 6 ? d : 6;
    for (let r = 0; r < 10; r++) {
      const i = decrypt ? 9 - r : r;
      const m = i % 2 === 0 ? mu : mv;
      const w0 = roundBase[i * 4];
      const w1 = roundBase[i * 4 + 1];
      const w2 = roundBase[i * 4 + 2];
      const w3 = roundBase[i * 4 + 3];
      for (let j = 0; j < count; j++) {
        const off = j * 16;
        const w = j * 4;
        words[w] = w0;
        words[w + 1] = w1;
        words[w + 2] = w2;
        words[w + 3] = w3;
        let x = fed[j];
        for (let k = off + 15, end = off + 15 - b; k > end; k--) {
          const byte = x % 256;
          blocks[k] ^= byte;
          x = (x - byte) / 256;
        }
      }
      const out = this.#ecb.update(blocks.subarray(0, count * 16));
      for (let j = 0; j < count; j++) {
        const off = j * 16;
        // y mod m by Horner: the first 6 bytes at once (< 2^48), then 16- or 8-bit limbs.
        let y = 0;
        for (let k = 0; k < firstBytes; k++) y = y * 256 + out[off + k];
        y %= m;
        if (limb16) {
          for (let k = firstBytes; k < d; k += 2) y = (y * 65536 + ((out[off + k] << 8) | out[off + k + 1])) % m;
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
        other[j] = fed[j];
        fed[j] = c;
      }
      out.fill(0);
    }
    const results = new Array<Uint16Array>(count);
    for (let j = 0; j < count; j++) {
      const y = new Uint16Array(n);
      let a = A[j];
      for (let k = u - 1; k >= 0; k--) {
        const digit = a % radix;
        y[k] = digit;
        a = (a - digit) / radix;
      }
      let bb = B[j];
      for (let k = n - 1; k >= u; k--) {
        const digit = bb % radix;
        y[k] = digit;
        bb = (bb - digit) / radix;
      }
      results[j] = y;
    }
    A.fill(0, 0, count);
    B.fill(0, 0, count);
    blocks.fill(0, 0, count * 16);
    return results;
  }

  /** Halves too large for doubles: BigInt arithmetic, AES still batched per chained block. */
  #runBig(plan: LengthPlan, values: readonly ArrayLike<number>[], indices: readonly number[], decrypt: boolean): Uint16Array[] {
    const count = indices.length;
    const { u, n, b, d, muBig, mvBig, prefix, tail, iOffset, tailBlocks } = plan;
    const radix = this.radix;
    const A = new Array<bigint>(count);
    const B = new Array<bigint>(count);
    for (let j = 0; j < count; j++) {
      const x = values[indices[j]];
      A[j] = numRadix(x, 0, u, radix);
      B[j] = numRadix(x, u, n, radix);
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
        qTails.set(tail, off);
        qTails[off + iOffset] = i;
        writeBigEndian(fed[j], qTails, off + tailLength - b, b);
      }
      // CBC-MAC over the varying blocks, one AES call per block position for all values.
      let state: Buffer | undefined;
      for (let blk = 0; blk < tailBlocks; blk++) {
        for (let j = 0; j < count; j++) {
          const qOff = j * tailLength + blk * 16;
          const off = j * 16;
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
    const results = new Array<Uint16Array>(count);
    for (let j = 0; j < count; j++) {
      const y = new Uint16Array(n);
      strRadix(A[j], y, 0, u, radix);
      strRadix(B[j], y, u, n, radix);
      results[j] = y;
    }
    qTails.fill(0);
    blocks.fill(0);
    extra.fill(0);
    s.fill(0);
    return results;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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
