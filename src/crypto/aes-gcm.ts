// AES-256-GCM randomised authenticated encryption: iv (12 bytes) || ciphertext || tag (16 bytes).

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const AUTH_FAILED = 'authentication failed';

function checkKey(key: Uint8Array): void {
  if (!(key instanceof Uint8Array) || key.length !== 32) throw new Error('AES-256-GCM key must be 32 bytes');
}

/** Seals plaintext under a fresh random 96-bit IV; aad is authenticated, not stored. */
export function gcmEncrypt(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = cipher.update(plaintext);
  const rest = cipher.final();
  const tag = cipher.getAuthTag();
  const out = new Uint8Array(IV_BYTES + body.length + rest.length + TAG_BYTES);
  out.set(iv, 0);
  out.set(body, IV_BYTES);
  out.set(rest, IV_BYTES + body.length);
  out.set(tag, out.length - TAG_BYTES);
  body.fill(0);
  return out;
}

/** Opens iv || ciphertext || tag; throws Error('authentication failed') on any tampering or wrong aad/key. */
export function gcmDecrypt(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array {
  checkKey(key);
  if (!(sealed instanceof Uint8Array) || sealed.length < IV_BYTES + TAG_BYTES) throw new Error(AUTH_FAILED);
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  const body = decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES));
  try {
    const rest = decipher.final();
    const out = new Uint8Array(body.length + rest.length);
    out.set(body, 0);
    out.set(rest, body.length);
    return out;
  } catch (err) {
    throw new Error(AUTH_FAILED, { cause: err });
  } finally {
    body.fill(0);
  }
}
