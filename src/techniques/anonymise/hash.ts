// Anonymise by keyed hash: HMAC-SHA-256 of the value's text under the field's 'hmac' key, encoded
// and optionally truncated. Stable for a key version and scope, irreversible without the key.

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
/** Below this a truncated hash collides too easily to stay a useful join key. */
const MIN_LENGTH = 8;

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
      ? reader.integer('length', { min: MIN_LENGTH, max: FULL_LENGTH[encoding], required: true })
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
            const digest = createHmac('sha256', key).update(scalarText(value), 'utf8').digest(options.encoding);
            return keep === digest.length ? digest : digest.slice(0, keep);
          },
        };
      },
      explain: () => `hash(hmac-sha256, encoding=${options.encoding}, length=${keep})`,
    };
  },
};
