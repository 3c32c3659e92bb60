// Anonymise by keyed hash: HMAC-SHA-256 of the value's text under the field's 'hmac' key, encoded
// and optionally truncated (never below 64 bits). Stable for a key version and scope, irreversible
// without the key. Non-string values carry a type tag, so `42` and `"42"` hash apart.

import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { scalarText } from '../mask/masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface HashOptions {
  readonly encoding: 'hex' | 'base64url';
  /** Characters of the encoded digest kept; undefined keeps all (64 hex / 43 base64url). */
  readonly length: number | undefined;
}

const FULL_LENGTH = { hex: 64, base64url: 43 } as const;
/**
 * Shortest output: 64 bits (16 hex, 11 base64url characters = 66 bits). Below that a truncated
 * hash collides too easily to stay a join key (2^16 values for a 50 % chance at 32 bits), and an
 * attacker can grind inputs to a chosen hash.
 */
const MIN_LENGTH = { hex: 16, base64url: 11 } as const;

/**
 * What goes before a non-string value's text: 0xFF, which no UTF-8 text contains, then its JSON
 * type. Strings are hashed as their bare UTF-8 bytes (so their hashes stayed what they were), and
 * no string can produce a tagged input: the encoding is injective across types.
 */
const TYPE_TAG = { number: Buffer.of(0xff, 0x6e), boolean: Buffer.of(0xff, 0x62), null: Buffer.of(0xff, 0x30) } as const;

// Derived keys are usually cached by the keyring, so their bytes' identity is a stable cache key.
const keyObjects = new WeakMap<Uint8Array, KeyObject>();

function hmacKey(bytes: Uint8Array): KeyObject {
  let key = keyObjects.get(bytes);
  if (key === undefined) {
    key = createSecretKey(bytes);
    keyObjects.set(bytes, key);
  }
  return key;
}

export const hashTechnique: Technique<HashOptions> = {
  id: 'hash',
  jobType: 'Anonymise',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['method', 'encoding', 'length'], { name: 'method', value: 'hash' });
    const encoding = reader.oneOf('encoding', ['hex', 'base64url'], 'hex');
    const length = reader.has('length')
      ? reader.integer('length', { min: MIN_LENGTH[encoding], max: FULL_LENGTH[encoding], required: true })
      : undefined;
    return { encoding, length };
  },

  compile(options): CompiledTechnique {
    const keep = options.length ?? FULL_LENGTH[options.encoding];
    return {
      bind(ctx) {
        const key = hmacKey(ctx.keys.active('hmac').key);
        return {
          forward(value: Scalar): Scalar {
            const mac = createHmac('sha256', key);
            if (typeof value !== 'string') mac.update(value === null ? TYPE_TAG.null : TYPE_TAG[typeof value as 'number' | 'boolean']);
            const digest = mac.update(scalarText(value), 'utf8').digest(options.encoding);
            return keep === digest.length ? digest : digest.slice(0, keep);
          },
        };
      },
      explain: () => `hash(hmac-sha256, encoding=${options.encoding}, length=${keep})`,
    };
  },
};
