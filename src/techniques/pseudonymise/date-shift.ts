// Pseudonymise, date format: a keyed shift of the date by up to ±maxDays days (never 0), written
// back in the same textual form. The shift comes from the field's key and scope, not from the
// value, so Reconstruct shifts back exactly and intervals between dates of one scope are kept —
// and one known (date, pseudonym) pair gives the shift of every date of the field and scope.
// `shift: per-value` trades that for a keyed permutation of the days inside fixed windows of
// maxDays + 1 days: each date moves on its own, by at most maxDays, intervals are not kept.

import { createCipheriv, createHmac } from 'node:crypto';
import type { Scalar } from '../../core/types.ts';
import { civilDate, dayNumber, isValidDate, parseDateText } from '../date-text.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type BindContext, type CompiledTechnique, type Technique } from '../technique.ts';

export interface DateShiftOptions {
  readonly maxDays: number;
  readonly dayFirst: boolean;
  /** `per-field`: one offset per field and scope; `per-value`: a keyed permutation within windows. */
  readonly shift: 'per-field' | 'per-value';
}

/** A shift in [-maxDays, -1] ∪ [1, maxDays], uniform from 48 bits of HMAC(key, scope). */
function shiftFor(ctx: BindContext, maxDays: number): number {
  const mac = createHmac('sha256', ctx.keys.active('date-shift').key).update('dpg date-shift\u0000').update(ctx.keys.scope).digest();
  const draw = mac.readUIntBE(0, 6) % (2 * maxDays);
  return draw < maxDays ? draw - maxDays : draw - maxDays + 1;
}

function shifter(move: (day: number) => number, dayFirst: boolean): (value: Scalar) => Scalar {
  return (value) => {
    const date = typeof value === 'string' ? parseDateText(value, dayFirst) : undefined;
    if (date === undefined) throw new ValueError('NOT_A_DATE');
    // `1/2/1985` shifted to `15/12/1984` could not be told apart from `01/02/1985` on the way back.
    if (!date.padded) throw new ValueError('UNSUPPORTED_DATE_FORMAT');
    const moved = civilDate(move(dayNumber(date)));
    if (!isValidDate(moved.year, moved.month, moved.day)) throw new ValueError('DATE_OUT_OF_RANGE');
    return date.format(moved);
  };
}

/**
 * Days of one field's permutation kept in memory (8 bytes each: forward and inverse), so at most
 * 2 MiB per field and scope whatever maxDays: 716 windows of a year, 7 of a century.
 */
const MAX_CACHED_DAYS = 262_144;

/**
 * A keyed permutation of day numbers that keeps every day inside its window [k·width, (k+1)·width):
 * the days of a window sorted by a 64-bit AES tag of (window, day). Sorting by independent random
 * tags gives a uniformly random permutation, so a day's new place says nothing about another's.
 */
class WindowedDayPermutation {
  readonly #key: Uint8Array;
  readonly #windows = new Map<number, { readonly forward: Int32Array; readonly inverse: Int32Array }>();

  constructor(
    key: Uint8Array,
    private readonly width: number,
  ) {
    this.#key = key;
  }

  forward(day: number): number {
    return this.#move(day, 'forward');
  }

  inverse(day: number): number {
    return this.#move(day, 'inverse');
  }

  #move(day: number, direction: 'forward' | 'inverse'): number {
    const window = Math.floor(day / this.width);
    const start = window * this.width;
    return start + this.#window(window)[direction][day - start];
  }

  #window(window: number): { readonly forward: Int32Array; readonly inverse: Int32Array } {
    let cached = this.#windows.get(window);
    if (cached !== undefined) return cached;
    const width = this.width;
    // One AES-256-ECB call tags the whole window: block i = 'dpgday' || window (int32) || i (uint32) || 0.
    const blocks = Buffer.alloc(width * 16);
    for (let i = 0; i < width; i++) {
      blocks.write('dpgday', i * 16, 'latin1');
      blocks.writeInt32BE(window, i * 16 + 6);
      blocks.writeUInt32BE(i, i * 16 + 10);
    }
    const ecb = createCipheriv('aes-256-ecb', this.#key, null);
    ecb.setAutoPadding(false);
    const tags = Buffer.concat([ecb.update(blocks), ecb.final()]);
    const order = Array.from({ length: width }, (_, i) => i);
    const hi = (i: number) => tags.readUInt32BE(i * 16);
    const lo = (i: number) => tags.readUInt32BE(i * 16 + 4);
    order.sort((a, b) => hi(a) - hi(b) || lo(a) - lo(b) || a - b);
    const forward = new Int32Array(width);
    const inverse = new Int32Array(width);
    for (let rank = 0; rank < width; rank++) {
      forward[order[rank]] = rank;
      inverse[rank] = order[rank];
    }
    cached = { forward, inverse };
    if ((this.#windows.size + 1) * width > MAX_CACHED_DAYS && this.#windows.size > 0) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(window, cached);
    return cached;
  }
}

// Permutations per derived key (the keyring hands out the same bytes for the same derivation).
const permutations = new WeakMap<Uint8Array, Map<number, WindowedDayPermutation>>();

function permutationFor(key: Uint8Array, width: number): WindowedDayPermutation {
  let byWidth = permutations.get(key);
  if (byWidth === undefined) permutations.set(key, (byWidth = new Map()));
  let permutation = byWidth.get(width);
  if (permutation === undefined) byWidth.set(width, (permutation = new WindowedDayPermutation(key, width)));
  return permutation;
}

export const dateShiftTechnique: Technique<DateShiftOptions> = {
  id: 'date-shift',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'maxDays', 'dayFirst', 'shift'], { name: 'format', value: 'date' });
    return {
      maxDays: reader.integer('maxDays', { min: 1, max: 36500, default: 365 }),
      dayFirst: reader.boolean('dayFirst', true),
      shift: reader.oneOf('shift', ['per-field', 'per-value'], 'per-field'),
    };
  },

  compile(options): CompiledTechnique {
    return {
      bind(ctx) {
        if (options.shift === 'per-value') {
          // Its own key purpose: nothing links the permutation to the per-field offsets.
          const permutation = permutationFor(ctx.keys.active('date-permute').key, options.maxDays + 1);
          return {
            forward: shifter((day) => permutation.forward(day), options.dayFirst),
            inverse: shifter((day) => permutation.inverse(day), options.dayFirst),
          };
        }
        const days = shiftFor(ctx, options.maxDays);
        return { forward: shifter((day) => day + days, options.dayFirst), inverse: shifter((day) => day - days, options.dayFirst) };
      },
      explain: () => `date-shift(maxDays=${options.maxDays}, dayFirst=${options.dayFirst}, shift=${options.shift})`,
    };
  },
};
