// Mask, plain style: replaces characters with a mask character, keeping the first/last N and the
// separators, optionally only digits, or only what a regular expression's capture groups match.
// Whatever the options, at least half of the maskable characters are hidden (masker.ts).

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { compileMasker, maskablePredicate, scalarText, SHORT_MASK_POLICIES, TOO_SHORT_TO_MASK, type MaskableSet, type ShortMaskPolicy } from './masker.ts';
import { TechniqueOptionError, ValueError, type CompiledTechnique, type Technique } from '../technique.ts';

export interface MaskOptions {
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly maskChar: string;
  readonly set: MaskableSet;
  /** Regex-guided masking: only what the capture groups match is masked. */
  readonly pattern: RegExp | undefined;
  /** When a pattern finds no match: mask the whole value (fail closed) or keep it. */
  readonly onNoMatch: 'mask' | 'keep';
  /** When the options would leave more than half of the maskable characters visible. */
  readonly shortValues: ShortMaskPolicy;
}

const MAX_KEEP = 1_000_000;
const PATTERN_FLAGS = /^[ims]*$/;

function readMaskableSet(reader: OptionReader): MaskableSet {
  const digitsOnly = reader.boolean('digitsOnly', false);
  const keepSeparators = reader.boolean('keepSeparators', true);
  if (digitsOnly && !keepSeparators) {
    throw new TechniqueOptionError('digitsOnly keeps every non-digit; it cannot be combined with keepSeparators: false', 'keepSeparators');
  }
  return digitsOnly ? 'digits' : keepSeparators ? 'alphanumeric' : 'all';
}

function readPattern(reader: OptionReader): RegExp | undefined {
  if (!reader.has('pattern')) {
    if (reader.has('flags')) throw new TechniqueOptionError('flags needs a pattern', 'flags');
    if (reader.has('onNoMatch')) throw new TechniqueOptionError('onNoMatch needs a pattern', 'onNoMatch');
    return undefined;
  }
  const source = reader.string('pattern', { required: true, nonEmpty: true });
  const flags = reader.string('flags', { default: '' });
  if (!PATTERN_FLAGS.test(flags)) throw new TechniqueOptionError('flags may only contain i, m and s', 'flags');
  let re: RegExp;
  try {
    re = new RegExp(source, `${flags}gdu`);
  } catch {
    throw new TechniqueOptionError('pattern is not a valid regular expression', 'pattern');
  }
  // Counting groups: an alternation with the empty string always matches, exposing every group.
  const groups = (new RegExp(`${source}|`, 'u').exec('')?.length ?? 1) - 1;
  if (groups < 1) throw new TechniqueOptionError('pattern needs a capture group marking what to mask', 'pattern');
  return re;
}

export const maskTechnique: Technique<MaskOptions> = {
  id: 'mask',
  jobType: 'Mask',
  reversible: false,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(
      raw,
      ['style', 'keepFirst', 'keepLast', 'maskChar', 'keepSeparators', 'digitsOnly', 'pattern', 'flags', 'onNoMatch', 'shortValues'],
      { name: 'style', value: 'plain' },
    );
    const pattern = readPattern(reader);
    if (pattern !== undefined && (reader.has('keepFirst') || reader.has('keepLast'))) {
      throw new TechniqueOptionError('keepFirst/keepLast do not apply with a pattern', reader.has('keepFirst') ? 'keepFirst' : 'keepLast');
    }
    return {
      keepFirst: reader.integer('keepFirst', { min: 0, max: MAX_KEEP, default: 0 }),
      keepLast: reader.integer('keepLast', { min: 0, max: MAX_KEEP, default: 0 }),
      maskChar: reader.character('maskChar', '*'),
      set: readMaskableSet(reader),
      pattern,
      onNoMatch: pattern === undefined ? 'mask' : reader.oneOf('onNoMatch', ['mask', 'keep'], 'mask'),
      shortValues: reader.oneOf('shortValues', SHORT_MASK_POLICIES, 'mask-more'),
    };
  },

  compile(options): CompiledTechnique {
    const maskAll = compileMasker({
      set: options.set,
      keepFirst: options.keepFirst,
      keepLast: options.keepLast,
      maskChar: options.maskChar,
      shortValues: options.shortValues,
    });
    const transform = options.pattern === undefined ? maskAll : compilePatternMask(options, maskAll);
    const forward = (value: Scalar): Scalar => transform(typeof value === 'string' ? value : scalarText(value));
    const bound = { forward };
    return {
      bind: () => bound,
      explain: () => {
        const parts = [`keepFirst=${options.keepFirst}`, `keepLast=${options.keepLast}`, `maskChar=${options.maskChar}`, `chars=${options.set}`];
        if (options.pattern !== undefined) parts.push(`pattern=/${options.pattern.source}/`, `onNoMatch=${options.onNoMatch}`);
        parts.push(`shortValues=${options.shortValues}`);
        return `mask(${parts.join(', ')})`;
      },
    };
  },
};

/**
 * Masks the maskable characters inside every capture group of every match of the pattern. Within
 * each match at least half of the maskable characters must end up masked: otherwise the whole
 * match is masked (`mask-more`) or the value fails (`reject`), as for keepFirst/keepLast.
 */
function compilePatternMask(options: MaskOptions, maskAll: (value: string) => string): (value: string) => string {
  const pattern = options.pattern as RegExp;
  const isMaskable = maskablePredicate(options.set);
  return (value) => {
    let marks: Uint8Array | undefined;
    let matched = false;
    for (const match of value.matchAll(pattern)) {
      matched = true;
      const indices = match.indices;
      if (indices === undefined) continue;
      marks ??= new Uint8Array(value.length);
      for (let g = 1; g < indices.length; g++) {
        const span = indices[g];
        if (span === undefined) continue;
        marks.fill(1, span[0], span[1]);
      }
      const [from, to] = indices[0];
      let maskable = 0;
      let hidden = 0;
      for (let i = from; i < to; ) {
        const ch = String.fromCodePoint(value.codePointAt(i)!);
        if (isMaskable(ch)) {
          maskable++;
          hidden += marks[i];
        }
        i += ch.length;
      }
      if (hidden * 2 < maskable) {
        if (options.shortValues === 'reject') throw new ValueError(TOO_SHORT_TO_MASK);
        marks.fill(1, from, to);
      }
    }
    if (!matched) return options.onNoMatch === 'keep' ? value : maskAll(value);
    if (marks === undefined) return value;
    let out = '';
    let i = 0;
    for (const ch of value) {
      out += marks[i] === 1 && isMaskable(ch) ? options.maskChar : ch;
      i += ch.length;
    }
    return out;
  };
}
