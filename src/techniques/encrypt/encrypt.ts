// Encrypt / Decrypt: authenticated encryption of the whole value into a self-describing token
// (`enc:v1:<mode>:<kid>:<version>:<base64url>`, see ciphertext-token.ts). Mode gcm is randomised
// AES-256-GCM; mode siv is deterministic AES-SIV (equal values, equal tokens) for joins and lookups.

import type { Scalar } from '../../core/types.ts';
import { INVALID_CIPHERTEXT, TokenSealer, type AeadMode } from './ciphertext-token.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type CompiledTechnique, type Technique } from '../technique.ts';

export interface EncryptOptions {
  readonly mode: AeadMode;
}

/** Key purposes are `aead-gcm` and `aead-siv`: the two modes never share a key. */
const PURPOSE = 'aead';

export const encryptTechnique: Technique<EncryptOptions> = {
  id: 'encrypt',
  jobType: 'Encrypt',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['mode']);
    return { mode: reader.oneOf('mode', ['gcm', 'siv'], 'gcm') };
  },

  compile(options): CompiledTechnique {
    return {
      bind(ctx) {
        const sealer = new TokenSealer(ctx.keys, PURPOSE);
        return {
          forward: (value: Scalar): Scalar => sealer.seal(value, options.mode),
          // Decrypt follows the token, not the rule: tokens sealed before a change of mode still open.
          inverse: (value: Scalar): Scalar => {
            if (typeof value !== 'string') throw new ValueError(INVALID_CIPHERTEXT);
            return sealer.open(value);
          },
        };
      },
      explain: () => `encrypt(mode=${options.mode === 'gcm' ? 'aes-256-gcm' : 'aes-siv'})`,
    };
  },
};
