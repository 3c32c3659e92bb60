// Mask, plain style: replaces characters with a mask character, keeping the first/last N and the
// separators, optionally only digits, or only what a regular expression's capture groups match.

import type { Scalar } from '../../core/types.ts';
import { OptionReader } from '../option-reader.ts';
import { compileMasker, maskablePredicate, scalarText, type MaskableSet } from './masker.ts';
import { TechniqueOptionError, type CompiledTechnique, type Technique } from '../technique.ts';

export interface MaskOptions {
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly maskChar: string;
  readonly set: MaskableSet;
  /** Regex-guided masking: only what the capture groups match is masked. */
  readonly pattern: RegExp | undefined;
  /** When a pattern finds no match: mask the whole value (fail closed) or keep it. */
  readonly onNoMatch: 'mask' | 'keep';
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
      ['style', 'keepFirst', 'keepLast', 'maskChar', 'keepSeparators', 'digitsOnly', 'pattern', 'flags', 'onNoMatch'],
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
    };
  },

  compile(options): CompiledTechnique {
    const maskAll = compileMasker({ set: options.set, keepFirst: options.keepFirst, keepLast: options.keepLast, maskChar: options.maskChar });
    const transform = options.pattern === undefined ? maskAll : compilePatternMask(options, maskAll);
    const forward = (value: Scalar): Scalar => transform(typeof value === 'string' ? value : scalarText(value));
    const bound = { forward };
    return {
      bind: () => bound,
      explain: () => {
        const parts = [`keepFirst=${options.keepFirst}`, `keepLast=${options.keepLast}`, `maskChar=${options.maskChar}`, `chars=${options.set}`];
        if (options.pattern !== undefined) parts.push(`pattern=/${options.pattern.source}/`, `onNoMatch=${options.onNoMatch}`);
        return `mask(${parts.join(', ')})`;
      },
    };
  },
};

/** Masks the maskable characters inside every capture group of every match of the pattern. */
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
      for (let g = 1; g < indices.length; g++) {
        const span = indices[g];
        if (span === undefined) continue;
        marks ??= new Uint8Array(value.length);
        marks.fill(1, span[0], span[1]);
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
