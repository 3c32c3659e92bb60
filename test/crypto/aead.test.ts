// AES-SIV (RFC 5297 vectors, equality with @noble/ciphers) and AES-256-GCM round trips and tamper checks.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { aessiv } from '@noble/ciphers/aes.js';
import { sivDecrypt, sivEncrypt } from '../../src/crypto/aes-siv.ts';
import { gcmDecrypt, gcmEncrypt } from '../../src/crypto/aes-gcm.ts';

interface SivCase {
  name: string;
  key: string;
  associatedData: string[];
  plaintext: string;
  output: string;
}

const vectors = JSON.parse(
  readFileSync(new URL('../vectors/aes-siv-rfc5297.json', import.meta.url), 'utf8'),
) as { cases: SivCase[] };

const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const bytes = (n: number): Uint8Array => new Uint8Array(randomBytes(n));

describe('AES-SIV', () => {
  for (const c of vectors.cases) {
    it(`RFC 5297 ${c.name}`, () => {
      const key = hex(c.key);
      const ad = c.associatedData.map(hex);
      const sealed = sivEncrypt(key, hex(c.plaintext), ad);
      assert.equal(toHex(sealed), c.output);
      assert.equal(toHex(sivDecrypt(key, sealed, ad)), c.plaintext);
    });
  }

  it('RFC 5297 A.2 (several associated data components, nonce as the last one)', () => {
    const key = hex('7f7e7d7c7b7a79787776757473727170404142434445464748494a4b4c4d4e4f');
    const ad = [
      hex('00112233445566778899aabbccddeeffdeaddadadeaddadaffeeddccbbaa99887766554433221100'),
      hex('102030405060708090a0'),
      hex('09f911029d74e35bd84156c5635688c0'),
    ];
    const plaintext = hex('7468697320697320736f6d6520706c61696e7465787420746f20656e6372797074207573696e67205349562d414553');
    const sealed = sivEncrypt(key, plaintext, ad);
    assert.equal(
      toHex(sealed),
      '7bdb6e3b432667eb06f4d14bff2fbd0fcb900f2fddbe404326601965c889bf17dba77ceb094fa663b7a3f748ba8af829ea64ad544a272e9c485b62a3fd5c0d',
    );
    assert.deepEqual(sivDecrypt(key, sealed, ad), plaintext);
  });

  it('equals @noble/ciphers aessiv for random keys, lengths and associated data', () => {
    for (let iter = 0; iter < 300; iter++) {
      const key = bytes([32, 48, 64][iter % 3]);
      const plaintext = bytes(iter % 70);
      const ad = Array.from({ length: iter % 4 }, (_, i) => bytes((iter * 7 + i * 13) % 40));
      const sealed = sivEncrypt(key, plaintext, ad);
      assert.equal(toHex(sealed), toHex(aessiv(key, ...ad).encrypt(plaintext)), `iteration ${iter}`);
      assert.deepEqual(sivDecrypt(key, sealed, ad), plaintext);
    }
  });

  it('is deterministic and separates associated data', () => {
    const key = bytes(64);
    const p = new TextEncoder().encode('4111111111111111');
    assert.deepEqual(sivEncrypt(key, p, [hex('01')]), sivEncrypt(key, p, [hex('01')]));
    assert.notDeepEqual(sivEncrypt(key, p, [hex('01')]), sivEncrypt(key, p, [hex('02')]));
    assert.notDeepEqual(sivEncrypt(key, p, [hex('0102')]), sivEncrypt(key, p, [hex('01'), hex('02')]));
  });

  it('fails authentication on any tampering, wrong key or wrong associated data', () => {
    const key = bytes(32);
    const ad = [hex('aa')];
    const sealed = sivEncrypt(key, new TextEncoder().encode('secret value'), ad);
    for (let i = 0; i < sealed.length; i++) {
      const bad = new Uint8Array(sealed);
      bad[i] ^= 1;
      assert.throws(() => sivDecrypt(key, bad, ad), { message: 'authentication failed' });
    }
    assert.throws(() => sivDecrypt(bytes(32), sealed, ad), { message: 'authentication failed' });
    assert.throws(() => sivDecrypt(key, sealed, [hex('ab')]), { message: 'authentication failed' });
    assert.throws(() => sivDecrypt(key, sealed, []), { message: 'authentication failed' });
    assert.throws(() => sivDecrypt(key, sealed.subarray(0, 15), ad), { message: 'authentication failed' });
    assert.throws(() => sivDecrypt(key, sealed.subarray(0, sealed.length - 1), ad), { message: 'authentication failed' });
  });

  it('handles the empty plaintext and rejects bad keys', () => {
    const key = bytes(48);
    const sealed = sivEncrypt(key, new Uint8Array(0), []);
    assert.equal(sealed.length, 16);
    assert.deepEqual(sivDecrypt(key, sealed, []), new Uint8Array(0));
    assert.throws(() => sivEncrypt(bytes(16), new Uint8Array(1), []), /key must be 32, 48 or 64 bytes/);
    assert.throws(() => sivEncrypt(key, new Uint8Array(1), new Array(127).fill(new Uint8Array(0))), /at most 126/);
  });
});

describe('AES-256-GCM', () => {
  it('round-trips with a fresh iv each time', () => {
    const key = bytes(32);
    const aad = hex('0102');
    for (const n of [0, 1, 15, 16, 17, 1000]) {
      const p = bytes(n);
      const a = gcmEncrypt(key, p, aad);
      const b = gcmEncrypt(key, p, aad);
      assert.equal(a.length, 12 + n + 16);
      assert.notDeepEqual(a.subarray(0, 12), b.subarray(0, 12));
      assert.deepEqual(gcmDecrypt(key, a, aad), p);
      assert.deepEqual(gcmDecrypt(key, b, aad), p);
    }
  });

  it('fails authentication on tampering, wrong aad, wrong key or truncation', () => {
    const key = bytes(32);
    const aad = hex('0102');
    const sealed = gcmEncrypt(key, new TextEncoder().encode('secret value'), aad);
    for (let i = 0; i < sealed.length; i++) {
      const bad = new Uint8Array(sealed);
      bad[i] ^= 0x80;
      assert.throws(() => gcmDecrypt(key, bad, aad), { message: 'authentication failed' });
    }
    assert.throws(() => gcmDecrypt(key, sealed, hex('0103')), { message: 'authentication failed' });
    assert.throws(() => gcmDecrypt(bytes(32), sealed, aad), { message: 'authentication failed' });
    assert.throws(() => gcmDecrypt(key, sealed.subarray(0, 27), aad), { message: 'authentication failed' });
    assert.throws(() => gcmDecrypt(key, sealed.subarray(0, sealed.length - 1), aad), { message: 'authentication failed' });
  });

  it('rejects keys that are not 32 bytes', () => {
    assert.throws(() => gcmEncrypt(bytes(16), new Uint8Array(1), new Uint8Array(0)), /32 bytes/);
    assert.throws(() => gcmDecrypt(bytes(24), new Uint8Array(40), new Uint8Array(0)), /32 bytes/);
  });
});
