// FF1: NIST samples, equality with @noble/ciphers and a spec-literal reference, batches, constraints.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createCipheriv } from 'node:crypto';
import { FF1 as nobleFF1 } from '@noble/ciphers/ff1.js';
import { FF1, FF1_MAX_LENGTH, ff1DomainSize, ff1Errors, ff1MinLength } from '../../src/crypto/ff1.ts';
import { rng } from '../helpers/rng.ts';

interface NistCase {
  sample: number;
  key: string;
  radix: number;
  tweak: string;
  plaintext: string;
  ciphertext: string;
}

const vectors = JSON.parse(
  readFileSync(new URL('../vectors/ff1-nist-sp800-38g.json', import.meta.url), 'utf8'),
) as { cases: NistCase[] };

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const toNumerals = (s: string): number[] => [...s].map((c) => ALPHABET.indexOf(c));
const toText = (x: ArrayLike<number>): string => Array.from(x, (d) => ALPHABET[d]).join('');
const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));


function randomBytes(rand: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rand() * 256);
  return out;
}

function randomNumerals(rand: () => number, radix: number, n: number): number[] {
  return Array.from({ length: n }, () => Math.floor(rand() * radix));
}

/** SP 800-38G Algorithm 7 transcribed literally with BigInt (slow, obviously right). */
function referenceEncrypt(key: Uint8Array, radix: number, tweak: Uint8Array, x: number[]): number[] {
  const n = x.length;
  const u = Math.floor(n / 2);
  const v = n - u;
  const R = BigInt(radix);
  const num = (digits: number[]): bigint => digits.reduce((acc, d) => acc * R + BigInt(d), 0n);
  const str = (c: bigint, m: number): number[] => {
    const out = new Array<number>(m);
    for (let i = m - 1; i >= 0; i--) {
      out[i] = Number(c % R);
      c /= R;
    }
    return out;
  };
  let b = 0;
  for (let t = R ** BigInt(v) - 1n; t > 0n; t >>= 8n) b++;
  const d = 4 * Math.ceil(b / 4) + 4;
  const t = tweak.length;
  const P = Buffer.alloc(16);
  P.set([1, 2, 1, (radix >> 16) & 255, (radix >> 8) & 255, radix & 255, 10, u % 256]);
  P.writeUInt32BE(n, 8);
  P.writeUInt32BE(t, 12);
  const aes = (block: Buffer): Buffer => {
    const c = createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
    c.setAutoPadding(false);
    return c.update(block);
  };
  let A = x.slice(0, u);
  let B = x.slice(u);
  for (let i = 0; i < 10; i++) {
    const pad = (((-t - b - 1) % 16) + 16) % 16;
    const numB = num(B).toString(16).padStart(2 * b, '0');
    const Q = Buffer.concat([Buffer.from(tweak), Buffer.alloc(pad), Buffer.from([i]), Buffer.from(b ? numB : '', 'hex')]);
    const PQ = Buffer.concat([P, Q]);
    let y: Buffer = Buffer.alloc(16);
    for (let j = 0; j < PQ.length; j += 16) {
      const block = Buffer.alloc(16);
      for (let k = 0; k < 16; k++) block[k] = y[k] ^ PQ[j + k];
      y = aes(block);
    }
    let S = Buffer.from(y);
    for (let j = 1; S.length < d; j++) {
      const block = Buffer.from(y);
      const counter = Buffer.alloc(16);
      counter.writeUInt32BE(j, 12);
      for (let k = 0; k < 16; k++) block[k] ^= counter[k];
      S = Buffer.concat([S, aes(block)]);
    }
    const yNum = BigInt('0x' + S.subarray(0, d).toString('hex'));
    const m = i % 2 === 0 ? u : v;
    const c = (num(A) + yNum) % R ** BigInt(m);
    A = B;
    B = str(c, m);
  }
  return [...A, ...B];
}

describe('FF1 NIST SP 800-38G samples', () => {
  for (const c of vectors.cases) {
    it(`sample ${c.sample} (radix ${c.radix}, ${c.key.length * 4}-bit key)`, () => {
      const ff1 = new FF1(hex(c.key), c.radix);
      const tweak = hex(c.tweak);
      const ct = ff1.encrypt(toNumerals(c.plaintext), tweak);
      assert.equal(toText(ct), c.ciphertext);
      assert.equal(toText(ff1.decrypt(ct, tweak)), c.plaintext);
      assert.equal(toText(ff1.encryptBatch([toNumerals(c.plaintext)], tweak)[0]), c.ciphertext);
      assert.equal(toText(ff1.decryptBatch([ct], tweak)[0]), c.plaintext);
    });
  }
});

describe('FF1 equals @noble/ciphers on random inputs', () => {
  it('matches on 3,000 random (key, radix, length, tweak) and decrypts back', () => {
    const rand = rng(0x5eed);
    const radixes = [2, 3, 7, 8, 10, 16, 26, 36, 52, 62, 100, 255, 256, 1000, 4096, 65535];
    for (let iter = 0; iter < 3000; iter++) {
      const key = randomBytes(rand, [16, 24, 32][iter % 3]);
      const radix = rand() < 0.2 ? 2 + Math.floor(rand() * 65534) : radixes[Math.floor(rand() * radixes.length)];
      const min = ff1MinLength(radix);
      const long = rand() < 0.03;
      const n = min + Math.floor(rand() * (long ? 300 : 24));
      const tweak = randomBytes(rand, rand() < 0.1 ? Math.floor(rand() * 64) : Math.floor(rand() * 12));
      const x = randomNumerals(rand, radix, n);
      const ours = new FF1(key, radix);
      const ct = ours.encrypt(x, tweak);
      const expected = nobleFF1(radix, key, tweak).encrypt(x);
      assert.deepEqual(Array.from(ct), expected, `iteration ${iter}: radix ${radix}, length ${n}, tweak ${tweak.length}`);
      assert.deepEqual(Array.from(ours.decrypt(ct, tweak)), x, `iteration ${iter}: decrypt`);
    }
  });

  it('the reference transcription agrees with noble (so it can judge radix 65536)', () => {
    const rand = rng(7);
    for (let iter = 0; iter < 100; iter++) {
      const key = randomBytes(rand, 32);
      const radix = [10, 36, 65535][iter % 3];
      const x = randomNumerals(rand, radix, ff1MinLength(radix) + Math.floor(rand() * 30));
      const tweak = randomBytes(rand, Math.floor(rand() * 20));
      assert.deepEqual(referenceEncrypt(key, radix, tweak, x), nobleFF1(radix, key, tweak).encrypt(x));
    }
  });

  it('radix 65536 matches the reference and round-trips', () => {
    const rand = rng(65536);
    for (let iter = 0; iter < 200; iter++) {
      const key = randomBytes(rand, [16, 24, 32][iter % 3]);
      const x = randomNumerals(rand, 65536, 2 + Math.floor(rand() * 40));
      const tweak = randomBytes(rand, Math.floor(rand() * 20));
      const ff1 = new FF1(key, 65536);
      const ct = ff1.encrypt(Uint16Array.from(x), tweak);
      assert.deepEqual(Array.from(ct), referenceEncrypt(key, 65536, tweak, x));
      assert.deepEqual(Array.from(ff1.decrypt(ct, tweak)), x);
    }
  });
});

describe('FF1 with a power-of-two radix past the double path (32-bit words, no BigInt)', () => {
  // Halves over 2^45 and up to 96 bits (IPv6's 32 hex digits): every length of that band, each
  // side of it, one tweak and per-value tweaks, single and batched, judged by @noble/ciphers (and
  // the spec transcription for radix 65536, which noble does not take).
  it('equals the independent implementations on every length of the band and decrypts back', () => {
    const rand = rng(0x2f);
    for (const radix of [2, 4, 8, 16, 32, 256, 4096, 65536]) {
      const bits = Math.log2(radix);
      const lengths: number[] = [];
      for (let n = ff1MinLength(radix); Math.floor((n - 1) / 2 + 1) * bits <= 96 + 2 * bits && n <= 200; n++) if (Math.ceil(n / 2) * bits > 40) lengths.push(n);
      assert.ok(lengths.some((n) => Math.ceil(n / 2) * bits > 45 && Math.ceil(n / 2) * bits <= 96), `radix ${radix} reaches the band`);
      // Radix 2 and 4 have dozens of lengths in the band: both ends and the middle, both parities.
      const mid = lengths.length >> 1;
      for (const n of lengths.filter((_, k) => k < 2 || k >= lengths.length - 2 || k === mid || k === mid + 1)) {
        const key = randomBytes(rand, [16, 24, 32][n % 3]);
        const ff1 = new FF1(key, radix);
        const values = Array.from({ length: 4 }, () => randomNumerals(rand, radix, n));
        values.push(new Array<number>(n).fill(radix - 1), new Array<number>(n).fill(0));
        const tweaks = values.map(() => randomBytes(rand, Math.floor(rand() * 20)));
        const expected = values.map((x, k) => (radix === 65536 ? referenceEncrypt(key, radix, tweaks[k], x) : nobleFF1(radix, key, tweaks[k]).encrypt(x)));
        values.forEach((x, k) => assert.deepEqual(Array.from(ff1.encrypt(x, tweaks[k])), expected[k], `radix ${radix}, length ${n}`));
        const batch = ff1.encryptBatch(values, tweaks);
        assert.deepEqual(batch.map((x) => Array.from(x)), expected, `radix ${radix}, length ${n}, batched`);
        assert.deepEqual(ff1.decryptBatch(batch, tweaks).map((x) => Array.from(x)), values);
        const shared = ff1.encryptBatch(values, tweaks[0]);
        values.forEach((x, k) => assert.deepEqual(Array.from(shared[k]), Array.from(ff1.encrypt(x, tweaks[0]))));
      }
    }
  });
});

describe('FF1 batches', () => {
  it('encryptBatch equals one-by-one encrypt for mixed lengths and radix paths', () => {
    const rand = rng(99);
    for (const radix of [10, 36, 62, 2]) {
      const key = randomBytes(rand, 32);
      const tweak = randomBytes(rand, 9);
      const ff1 = new FF1(key, radix);
      const min = ff1MinLength(radix);
      const values = Array.from({ length: 500 }, () => randomNumerals(rand, radix, min + Math.floor(rand() * 40)));
      const batch = ff1.encryptBatch(values, tweak);
      assert.equal(batch.length, values.length);
      const single = new FF1(key, radix);
      for (let i = 0; i < values.length; i++) assert.deepEqual(batch[i], single.encrypt(values[i], tweak));
      const back = ff1.decryptBatch(batch, tweak);
      for (let i = 0; i < values.length; i++) assert.deepEqual(Array.from(back[i]), values[i]);
    }
  });

  it('handles an empty batch and batches larger than one AES chunk', () => {
    const ff1 = new FF1(new Uint8Array(16), 10);
    assert.deepEqual(ff1.encryptBatch([], new Uint8Array(0)), []);
    const rand = rng(3);
    const values = Array.from({ length: 70_000 }, () => randomNumerals(rand, 10, 16));
    const tweak = new Uint8Array([1, 2, 3]);
    const out = ff1.encryptBatch(values, tweak);
    for (const i of [0, 4095, 4096, 32_768, 69_999]) assert.deepEqual(out[i], ff1.encrypt(values[i], tweak));
  });

  it('switching tweaks gives each tweak its own result', () => {
    const ff1 = new FF1(new Uint8Array(32).fill(7), 10);
    const x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0];
    const t1 = new Uint8Array([1]);
    const t2 = new Uint8Array([2]);
    const a = ff1.encrypt(x, t1);
    const b = ff1.encrypt(x, t2);
    assert.notDeepEqual(a, b);
    assert.deepEqual(ff1.encrypt(x, t1), a);
    // A tweak mutated in place after use must not hit a stale cache.
    const t = new Uint8Array([1]);
    assert.deepEqual(ff1.encrypt(x, t), a);
    t[0] = 2;
    assert.deepEqual(ff1.encrypt(x, t), b);
  });

  it('per-value tweaks: a batch mixing tweaks, lengths and paths equals one-by-one', () => {
    const rand = rng(1234);
    for (const radix of [2, 4, 8, 10, 16, 26, 256, 3000]) {
      const key = randomBytes(rand, 32);
      const ff1 = new FF1(key, radix);
      const min = ff1MinLength(radix);
      const tweakPool = Array.from({ length: 6 }, (_, i) => randomBytes(rand, i * 7));
      const values = Array.from({ length: 400 }, () => randomNumerals(rand, radix, min + Math.floor(rand() * (rand() < 0.1 ? 120 : 20))));
      const tweaks = values.map(() => tweakPool[Math.floor(rand() * tweakPool.length)]);
      const batch = ff1.encryptBatch(values, tweaks);
      for (let i = 0; i < values.length; i++) assert.deepEqual(Array.from(batch[i]), nobleFF1(radix, key, tweaks[i]).encrypt(values[i]));
      const back = ff1.decryptBatch(batch, tweaks);
      for (let i = 0; i < values.length; i++) assert.deepEqual(Array.from(back[i]), values[i]);
    }
    assert.throws(() => new FF1(new Uint8Array(16), 10).encryptBatch([[1, 2, 3, 4, 5, 6]], []), { message: ff1Errors.tweak });
  });

  it('packed values are transformed in place, only those selected, all checked first', () => {
    const rand = rng(77);
    const ff1 = new FF1(randomBytes(rand, 16), 10);
    const values = [randomNumerals(rand, 10, 8), randomNumerals(rand, 10, 12), randomNumerals(rand, 10, 8)];
    const tweaks = [new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([1])];
    const packed = Uint16Array.from(values.flat());
    const starts = [0, 8, 20];
    const lengths = [8, 12, 8];
    ff1.encryptPacked(packed, starts, lengths, tweaks, [0, 2]);
    assert.deepEqual(Array.from(packed.subarray(0, 8)), Array.from(ff1.encrypt(values[0], tweaks[0])));
    assert.deepEqual(Array.from(packed.subarray(8, 20)), values[1]);
    assert.deepEqual(Array.from(packed.subarray(20, 28)), Array.from(ff1.encrypt(values[2], tweaks[2])));
    ff1.decryptPacked(packed, starts, lengths, tweaks);
    assert.deepEqual(Array.from(packed.subarray(0, 8)), values[0]);
    assert.deepEqual(Array.from(packed.subarray(8, 20)), Array.from(ff1.decrypt(values[1], tweaks[1])));
    const before = Array.from(packed);
    assert.throws(() => ff1.encryptPacked(packed, [0, 8, 25], lengths, tweaks), { message: `${ff1Errors.packed} (value 2)` });
    packed[27] = 11;
    assert.throws(() => ff1.encryptPacked(packed, starts, lengths, tweaks), { message: `${ff1Errors.numeral} (value 2)` });
    packed[27] = before[27];
    assert.deepEqual(Array.from(packed), before, 'a failed call changes nothing');
  });

  it('numbers: FF1 on NUM(X) equals FF1 on the numerals, in place and for selected values only', () => {
    const rand = rng(4321);
    for (const radix of [2, 3, 10, 26, 36, 1000, 65535]) {
      const key = randomBytes(rand, 16);
      const ff1 = new FF1(key, radix);
      const lengths: number[] = [];
      for (let n = ff1.minLength; ff1.numbersFit(n); n++) lengths.push(n);
      assert.ok(lengths.length > 0 && !ff1.numbersFit(lengths[lengths.length - 1] + 1));
      const strings = Array.from({ length: 300 }, () => randomNumerals(rand, radix, lengths[Math.floor(rand() * lengths.length)]));
      const num = (x: ArrayLike<number>) => Array.from(x).reduce((acc, d) => acc * radix + d, 0);
      const tweaks = strings.map((_, i) => new Uint8Array([i % 3, 7]));
      const values = Float64Array.from(strings, num);
      const which = strings.map((_, i) => i).filter((i) => i % 5 !== 0);
      ff1.encryptNumbers(values, strings.map((x) => x.length), tweaks, which);
      for (let i = 0; i < strings.length; i++) {
        assert.equal(values[i], i % 5 === 0 ? num(strings[i]) : num(ff1.encrypt(strings[i], tweaks[i])), `radix ${radix} value ${i}`);
      }
      ff1.decryptNumbers(values, strings.map((x) => x.length), tweaks, which);
      assert.deepEqual(Array.from(values), strings.map(num));
    }
    const ff1 = new FF1(new Uint8Array(16), 2);
    assert.throws(() => ff1.encryptNumbers(Float64Array.of(2 ** 20), [20], [new Uint8Array(0)]), { message: `${ff1Errors.numeral} (value 0)` });
    assert.throws(() => ff1.encryptNumbers(Float64Array.of(1), [53], [new Uint8Array(0)]), { message: `${ff1Errors.tooLong} (value 0)` });
  });

  it('the input is not modified', () => {
    const ff1 = new FF1(new Uint8Array(16), 10);
    const x = Uint16Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
    ff1.encrypt(x, new Uint8Array(0));
    assert.deepEqual(Array.from(x), [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
  });
});

describe('FF1 constraints', () => {
  const key = new Uint8Array(16);

  it('rejects bad keys and radixes', () => {
    assert.throws(() => new FF1(new Uint8Array(15), 10), { message: ff1Errors.key });
    assert.throws(() => new FF1(new Uint8Array(64), 10), { message: ff1Errors.key });
    for (const radix of [0, 1, 65537, 10.5, Number.NaN]) {
      assert.throws(() => new FF1(key, radix), { message: ff1Errors.radix });
    }
  });

  it('minimum length follows radix^minlen >= 1,000,000', () => {
    assert.equal(ff1MinLength(10), 6);
    assert.equal(ff1MinLength(2), 20);
    assert.equal(ff1MinLength(36), 4);
    assert.equal(ff1MinLength(1000), 2);
    assert.equal(ff1MinLength(65536), 2);
    assert.equal(ff1DomainSize(10, 6), 1_000_000);
    assert.equal(ff1DomainSize(65536, 200), Infinity);
    const ff1 = new FF1(key, 10);
    assert.throws(() => ff1.encrypt([9, 8, 7, 6, 5], new Uint8Array(0)), { message: ff1Errors.tooShort });
    assert.equal(ff1.encrypt([9, 8, 7, 6, 5, 4], new Uint8Array(0)).length, 6);
    assert.throws(() => new FF1(key, 2).encrypt(new Array(19).fill(1), new Uint8Array(0)), { message: ff1Errors.tooShort });
  });

  it('rejects too long values, bad numerals and bad tweaks without echoing numerals', () => {
    const ff1 = new FF1(key, 10);
    assert.throws(() => ff1.encrypt(new Array(FF1_MAX_LENGTH + 1).fill(3), new Uint8Array(0)), { message: ff1Errors.tooLong });
    for (const bad of [[1, 2, 3, 4, 5, 10], [1, 2, 3, 4, 5, -1], [1, 2, 3, 4, 5, 2.5], [1, 2, 3, 4, 5, Number.NaN]]) {
      assert.throws(() => ff1.encrypt(bad, new Uint8Array(0)), { message: ff1Errors.numeral });
      assert.throws(() => ff1.decrypt(bad, new Uint8Array(0)), { message: ff1Errors.numeral });
    }
    assert.throws(() => ff1.encrypt([1, 2, 3, 4, 5, 6], 'tweak' as unknown as Uint8Array), { message: ff1Errors.tweak });
  });

  it('a batch with one bad value fails whole, naming only its index', () => {
    const ff1 = new FF1(key, 10);
    const values = [[1, 2, 3, 4, 5, 6], [7, 7, 7, 7, 7, 7, 7], [4, 1, 5]];
    assert.throws(() => ff1.encryptBatch(values, new Uint8Array(0)), (err: Error) => {
      assert.equal(err.message, `${ff1Errors.tooShort} (value 2)`);
      assert.doesNotMatch(err.message, /415/);
      return true;
    });
    assert.equal(ff1.problemWith([4, 1, 5]), ff1Errors.tooShort);
    assert.equal(ff1.problemWith([1, 2, 3, 4, 5, 6]), undefined);
  });

  // Their speed is measured in bench/ff1.bench.ts: a clock here failed on a loaded machine.
  it('maximum-length values round-trip', () => {
    const rand = rng(11);
    for (const radix of [10, 65536]) {
      const ff1 = new FF1(randomBytes(rand, 32), radix);
      const x = randomNumerals(rand, radix, FF1_MAX_LENGTH);
      const tweak = randomBytes(rand, 40);
      const ct = ff1.encrypt(x, tweak);
      assert.equal(ct.length, FF1_MAX_LENGTH);
      assert.deepEqual(Array.from(ff1.decrypt(ct, tweak)), x);
    }
  });
});
