// The self-describing ciphertext string `enc:v1:<mode>:<kid>:<version>:<base64url>` used by Encrypt
// and by the FF1 short-value fallback. The plaintext carries the value's JSON type, so opening a
// token restores the exact original value; anything malformed or tampered is INVALID_CIPHERTEXT.

import { hkdfSync } from 'node:crypto';
import { gcmDecrypt, gcmEncrypt } from '../../crypto/aes-gcm.ts';
import { sivDecrypt, sivEncrypt } from '../../crypto/aes-siv.ts';
import type { Scalar } from '../../core/types.ts';
import { ValueError, type FieldKeys, type KeyMaterial } from '../technique.ts';

export const TOKEN_PREFIX = 'enc:v1:';
export type AeadMode = 'gcm' | 'siv';
export const INVALID_CIPHERTEXT = 'INVALID_CIPHERTEXT';

// Type tags: the first plaintext byte says how to read the rest.
const TAG_STRING = 0x73; // 's' UTF-8 text
const TAG_UTF16 = 0x53; // 'S' UTF-16LE text: strings with lone surrogates, which UTF-8 cannot carry
const TAG_NUMBER = 0x6e; // 'n' shortest round-trip decimal text
const TAG_TRUE = 0x74;
const TAG_FALSE = 0x66;
const TAG_NULL = 0x7a;

const LONE_SURROGATE = /\p{Cs}/u;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function tagged(tag: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(body.length + 1);
  out[0] = tag;
  out.set(body, 1);
  return out;
}

export function encodePlaintext(value: Scalar): Uint8Array {
  if (typeof value === 'string') {
    if (!LONE_SURROGATE.test(value)) return tagged(TAG_STRING, utf8.encode(value));
    const body = new Uint8Array(value.length * 2);
    for (let i = 0; i < value.length; i++) {
      const unit = value.charCodeAt(i);
      body[2 * i] = unit & 0xff;
      body[2 * i + 1] = unit >>> 8;
    }
    return tagged(TAG_UTF16, body);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ValueError('UNSUPPORTED_VALUE_TYPE');
    return tagged(TAG_NUMBER, utf8.encode(Object.is(value, -0) ? '-0' : String(value)));
  }
  if (typeof value === 'boolean') return Uint8Array.of(value ? TAG_TRUE : TAG_FALSE);
  return Uint8Array.of(TAG_NULL);
}

export function decodePlaintext(bytes: Uint8Array): Scalar {
  const body = bytes.subarray(1);
  try {
    switch (bytes[0]) {
      case TAG_STRING:
        return strictUtf8.decode(body);
      case TAG_UTF16: {
        if (body.length % 2 !== 0) break;
        let text = '';
        for (let i = 0; i < body.length; i += 2) text += String.fromCharCode(body[i] | (body[i + 1] << 8));
        return text;
      }
      case TAG_NUMBER: {
        const n = Number(strictUtf8.decode(body));
        if (body.length > 0 && Number.isFinite(n)) return n;
        break;
      }
      case TAG_TRUE:
      case TAG_FALSE:
      case TAG_NULL:
        if (body.length !== 0) break;
        return bytes[0] === TAG_NULL ? null : bytes[0] === TAG_TRUE;
    }
  } catch {
    // A decoding failure after authentication means a bug or a foreign token: same answer.
  }
  throw new ValueError(INVALID_CIPHERTEXT);
}

export interface ParsedToken {
  readonly mode: AeadMode;
  readonly kid: string;
  readonly version: number;
  readonly sealed: Uint8Array;
}

const VERSION_TEXT = /^(?:0|[1-9]\d{0,8})$/;
const BASE64URL_TEXT = /^[A-Za-z0-9_-]+$/;

/** Splits a token into its parts; undefined when it is not one. The kid may itself contain ':'. */
export function parseToken(text: string): ParsedToken | undefined {
  if (!text.startsWith(TOKEN_PREFIX)) return undefined;
  const modeEnd = text.indexOf(':', TOKEN_PREFIX.length);
  const dataStart = text.lastIndexOf(':') + 1;
  const versionStart = text.lastIndexOf(':', dataStart - 2) + 1;
  if (modeEnd < 0 || versionStart <= modeEnd + 1) return undefined;
  const mode = text.slice(TOKEN_PREFIX.length, modeEnd);
  const kid = text.slice(modeEnd + 1, versionStart - 1);
  const versionText = text.slice(versionStart, dataStart - 1);
  const data = text.slice(dataStart);
  if ((mode !== 'gcm' && mode !== 'siv') || kid.length === 0) return undefined;
  if (!VERSION_TEXT.test(versionText) || !BASE64URL_TEXT.test(data)) return undefined;
  const sealed = Buffer.from(data, 'base64url');
  // Only the canonical encoding is a token: otherwise unused trailing bits would give one
  // ciphertext many spellings (and a one-character edit could still decrypt).
  if (sealed.toString('base64url') !== data) return undefined;
  return { mode, kid, version: Number(versionText), sealed };
}

export function formatToken(mode: AeadMode, key: KeyMaterial, sealed: Uint8Array): string {
  return `${TOKEN_PREFIX}${mode}:${key.kid}:${key.version}:${Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength).toString('base64url')}`;
}

/** The error detail's sentence for a token that names a key of this keyring but fails authentication. */
function wrongKeyHint(key: KeyMaterial): string {
  return (
    `a value was not encrypted with this keyring's key "${key.kid}" v${key.version} (or was altered, or moved from another field or scope): ` +
    'if the keyring is the cause, compare its fingerprint with the one of the gateway that encrypted it (dpg validate, the dpg_keyring_info metric; docs/keys.md)'
  );
}

// AES-SIV wants two AES-256 keys (64 bytes); the keyring derives 32. HKDF-Expand stretches them,
// once per derived key.
const sivKeys = new WeakMap<Uint8Array, Uint8Array>();

function sivKeyOf(key: Uint8Array): Uint8Array {
  let stretched = sivKeys.get(key);
  if (stretched === undefined) {
    stretched = new Uint8Array(hkdfSync('sha256', key, new Uint8Array(0), 'dpg aes-siv-512', 64));
    sivKeys.set(key, stretched);
  }
  return stretched;
}

/**
 * Seals and opens tokens for one field and scope. Each mode has its own key purpose
 * (`<purpose>-gcm`, `<purpose>-siv`); the scope is the associated data, so a token moved to another
 * field, partner or usage does not open.
 */
export class TokenSealer {
  private readonly scope: Uint8Array;
  private readonly sivAd: Uint8Array[];

  constructor(
    private readonly keys: FieldKeys,
    private readonly purpose: string,
  ) {
    this.scope = keys.scope;
    this.sivAd = [keys.scope];
  }

  seal(value: Scalar, mode: AeadMode): string {
    const key = this.keys.active(`${this.purpose}-${mode}`);
    const plaintext = encodePlaintext(value);
    const sealed = mode === 'siv' ? sivEncrypt(sivKeyOf(key.key), plaintext, this.sivAd) : gcmEncrypt(key.key, plaintext, this.scope);
    return formatToken(mode, key, sealed);
  }

  /** Opens a token; ValueError INVALID_CIPHERTEXT (or the keyring's unknown-key reason) otherwise. */
  open(text: string): Scalar {
    const token = parseToken(text);
    if (token === undefined) throw new ValueError(INVALID_CIPHERTEXT);
    let key: KeyMaterial;
    try {
      key = this.keys.version(`${this.purpose}-${token.mode}`, token.kid, token.version);
    } catch (err) {
      if (err instanceof ValueError) throw err;
      throw new ValueError('UNKNOWN_KEY_VERSION');
    }
    let plaintext: Uint8Array;
    try {
      plaintext =
        token.mode === 'siv' ? sivDecrypt(sivKeyOf(key.key), token.sealed, this.sivAd) : gcmDecrypt(key.key, token.sealed, this.scope);
    } catch {
      // A well-formed token naming a key this keyring holds that does not authenticate: most often
      // another keyring with the same key id (a replica or restore with different keys).
      throw new ValueError(INVALID_CIPHERTEXT, wrongKeyHint(key));
    }
    if (plaintext.length === 0) throw new ValueError(INVALID_CIPHERTEXT);
    return decodePlaintext(plaintext);
  }
}
