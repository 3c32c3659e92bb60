// RFC 5297 AES-SIV: deterministic authenticated encryption (S2V over AES-CMAC, then AES-CTR),
// on node:crypto AES. Output is the synthetic IV followed by the ciphertext.

import { createCipheriv, timingSafeEqual } from 'node:crypto';

const BLOCK = 16;
/** RFC 5297 §7: S2V takes at most 127 vectors (associated data components plus the plaintext). */
const MAX_ASSOCIATED_DATA = 126;
const ZERO_BLOCK = Buffer.alloc(BLOCK);

const AUTH_FAILED = 'authentication failed';

function checkKey(key: Uint8Array): void {
  if (!(key instanceof Uint8Array) || (key.length !== 32 && key.length !== 48 && key.length !== 64)) {
    throw new Error('AES-SIV key must be 32, 48 or 64 bytes');
  }
}

function checkAssociatedData(associatedData: readonly Uint8Array[]): void {
  if (!Array.isArray(associatedData) || associatedData.length > MAX_ASSOCIATED_DATA) {
    throw new Error('AES-SIV takes at most 126 associated data components');
  }
  for (const ad of associatedData) {
    if (!(ad instanceof Uint8Array)) throw new Error('AES-SIV associated data must be Uint8Arrays');
  }
}

/** Doubling in GF(2^128) with the RFC's polynomial (x^128 + x^7 + x^2 + x + 1), in place. */
function dbl(block: Buffer): Buffer {
  const carry = block[0] >>> 7;
  for (let i = 0; i < BLOCK - 1; i++) block[i] = ((block[i] << 1) | (block[i + 1] >>> 7)) & 0xff;
  block[BLOCK - 1] = ((block[BLOCK - 1] << 1) & 0xff) ^ (carry * 0x87);
  return block;
}

/** AES-CMAC (RFC 4493) with precomputed subkeys; one CBC pass per message. */
class Cmac {
  readonly #algorithm: string;
  readonly #key: Uint8Array;
  readonly #k1: Buffer;
  readonly #k2: Buffer;

  constructor(key: Uint8Array) {
    this.#algorithm = `aes-${key.length * 8}-cbc`;
    this.#key = key;
    const ecb = createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
    ecb.setAutoPadding(false);
    this.#k1 = dbl(ecb.update(ZERO_BLOCK));
    this.#k2 = dbl(Buffer.from(this.#k1));
  }

  mac(message: Uint8Array): Buffer {
    const complete = message.length > 0 && message.length % BLOCK === 0;
    const padded = Buffer.alloc(complete ? message.length : (Math.floor(message.length / BLOCK) + 1) * BLOCK);
    padded.set(message);
    if (!complete) padded[message.length] = 0x80;
    const last = padded.length - BLOCK;
    const subkey = complete ? this.#k1 : this.#k2;
    for (let i = 0; i < BLOCK; i++) padded[last + i] ^= subkey[i];
    const cbc = createCipheriv(this.#algorithm, this.#key, ZERO_BLOCK);
    cbc.setAutoPadding(false);
    const out = cbc.update(padded);
    padded.fill(0);
    return Buffer.from(out.subarray(out.length - BLOCK));
  }
}

/** S2V (RFC 5297 §2.4) over the associated data components and the plaintext. */
function s2v(cmac: Cmac, associatedData: readonly Uint8Array[], plaintext: Uint8Array): Buffer {
  let d = cmac.mac(ZERO_BLOCK);
  for (const ad of associatedData) {
    const m = cmac.mac(ad);
    dbl(d);
    for (let i = 0; i < BLOCK; i++) d[i] ^= m[i];
  }
  let t: Buffer;
  if (plaintext.length >= BLOCK) {
    t = Buffer.from(plaintext);
    const off = t.length - BLOCK;
    for (let i = 0; i < BLOCK; i++) t[off + i] ^= d[i];
  } else {
    t = dbl(d);
    for (let i = 0; i < plaintext.length; i++) t[i] ^= plaintext[i];
    t[plaintext.length] ^= 0x80;
  }
  const v = cmac.mac(t);
  t.fill(0);
  return v;
}

/** AES-CTR from the synthetic IV with bits 31 and 63 cleared (RFC 5297 §2.6). */
function ctr(key: Uint8Array, v: Uint8Array, input: Uint8Array): Buffer {
  const q = Buffer.from(v);
  q[8] &= 0x7f;
  q[12] &= 0x7f;
  const cipher = createCipheriv(`aes-${key.length * 8}-ctr`, key, q);
  return Buffer.concat([cipher.update(input), cipher.final()]);
}

/** Seals plaintext deterministically: returns V (16 bytes) || C. */
export function sivEncrypt(key: Uint8Array, plaintext: Uint8Array, associatedData: readonly Uint8Array[]): Uint8Array {
  checkKey(key);
  checkAssociatedData(associatedData);
  const half = key.length / 2;
  const v = s2v(new Cmac(key.subarray(0, half)), associatedData, plaintext);
  const c = ctr(key.subarray(half), v, plaintext);
  const out = new Uint8Array(BLOCK + c.length);
  out.set(v, 0);
  out.set(c, BLOCK);
  c.fill(0);
  return out;
}

/** Opens V || C; throws Error('authentication failed') when anything was altered. */
export function sivDecrypt(key: Uint8Array, sealed: Uint8Array, associatedData: readonly Uint8Array[]): Uint8Array {
  checkKey(key);
  checkAssociatedData(associatedData);
  if (!(sealed instanceof Uint8Array) || sealed.length < BLOCK) throw new Error(AUTH_FAILED);
  const half = key.length / 2;
  const v = sealed.subarray(0, BLOCK);
  const plaintext = ctr(key.subarray(half), v, sealed.subarray(BLOCK));
  const expected = s2v(new Cmac(key.subarray(0, half)), associatedData, plaintext);
  if (!timingSafeEqual(expected, v)) {
    plaintext.fill(0);
    throw new Error(AUTH_FAILED);
  }
  const out = new Uint8Array(plaintext);
  plaintext.fill(0);
  return out;
}
