// Mask, email style: keeps the first character of the local part and the domain, hiding the rest
// (`j***@example.com`); with preserve_string_length the local part keeps its length. At most half
// of the local part's characters stay visible (the domain is not masked by this style).

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { compileMasker, MaskRuns, scalarText, SHORT_MASK_POLICIES, visibleAtMost, type ShortMaskPolicy } from './masker.ts';
import type { CompiledTechnique, Technique } from '../technique.ts';

export interface MaskEmailOptions {
  readonly maskChar: string;
  /** Characters of the local part kept (default 1); at least one character is always hidden. */
  readonly keepFirst: number;
  /** Mask characters written when preserve_string_length is off: a fixed count hides the length. */
  readonly maskLength: number;
  /** When keepFirst would leave more than half of the local part visible. */
  readonly shortValues: ShortMaskPolicy;
}

export const maskEmailTechnique: Technique<MaskEmailOptions> = {
  id: 'mask-email',
  jobType: 'Mask',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['style', 'maskChar', 'keepFirst', 'maskLength', 'shortValues'], { name: 'style', value: 'email' });
    return {
      maskChar: reader.character('maskChar', '*'),
      keepFirst: reader.integer('keepFirst', { min: 0, max: 64, default: 1 }),
      maskLength: reader.integer('maskLength', { min: 1, max: 64, default: 3 }),
      shortValues: reader.oneOf('shortValues', SHORT_MASK_POLICIES, 'mask-more'),
    };
  },

  compile(options): CompiledTechnique {
    const runs = new MaskRuns(options.maskChar);
    // Not an address: every letter and digit is masked rather than guessing at a shape (fail closed).
    const maskWhole = compileMasker({ set: 'alphanumeric', keepFirst: 0, keepLast: 0, maskChar: options.maskChar });
    const build = (preserveLength: boolean) => (value: Scalar): Scalar => {
      const text = scalarText(value);
      const at = text.lastIndexOf('@');
      if (at <= 0 || at === text.length - 1) return maskWhole(text);
      if (!hasSurrogate(text, at)) {
        // One UTF-16 unit per character (nearly every address): slice instead of splitting.
        const kept = visibleAtMost(at, options.keepFirst, options.shortValues);
        return text.slice(0, kept) + runs.of(preserveLength ? at - kept : options.maskLength) + text.slice(at);
      }
      const local = Array.from(text.slice(0, at));
      const kept = visibleAtMost(local.length, options.keepFirst, options.shortValues);
      const hidden = preserveLength ? local.length - kept : options.maskLength;
      return local.slice(0, kept).join('') + runs.of(hidden) + text.slice(at);
    };
    const fixed = { forward: build(false) };
    const preserving = { forward: build(true) };
    return {
      bind: (ctx) => (ctx.preserveStringLength ? preserving : fixed),
      explain: () =>
        `mask-email(keepFirst=${options.keepFirst}, maskChar=${options.maskChar}, maskLength=${options.maskLength}, shortValues=${options.shortValues})`,
    };
  },
};

/** Whether text[0..end) holds a surrogate (a character written with two UTF-16 units). */
function hasSurrogate(text: string, end: number): boolean {
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) return true;
  }
  return false;
}
