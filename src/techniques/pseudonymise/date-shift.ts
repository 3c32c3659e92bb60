// Pseudonymise, date format: a keyed shift of the date by up to ±maxDays days (never 0), written
// back in the same textual form. The shift comes from the field's key and scope, not from the
// value, so Reconstruct shifts back exactly and intervals between dates of one scope are kept.

import { createHmac } from 'node:crypto';
import type { Scalar } from '../../core/types.ts';
import { civilDate, dayNumber, isValidDate, parseDateText } from '../date-text.ts';
import { OptionReader } from '../option-reader.ts';
import { ValueError, type BindContext, type CompiledTechnique, type Technique } from '../technique.ts';

export interface DateShiftOptions {
  readonly maxDays: number;
  readonly dayFirst: boolean;
}

/** A shift in [-maxDays, -1] ∪ [1, maxDays], uniform from 48 bits of HMAC(key, scope). */
function shiftFor(ctx: BindContext, maxDays: number): number {
  const mac = createHmac('sha256', ctx.keys.active('date-shift').key).update('dpg date-shift\u0000').update(ctx.keys.scope).digest();
  const draw = mac.readUIntBE(0, 6) % (2 * maxDays);
  return draw < maxDays ? draw - maxDays : draw - maxDays + 1;
}

function shifter(days: number, dayFirst: boolean): (value: Scalar) => Scalar {
  return (value) => {
    const date = typeof value === 'string' ? parseDateText(value, dayFirst) : undefined;
    if (date === undefined) throw new ValueError('NOT_A_DATE');
    // `1/2/1985` shifted to `15/12/1984` could not be told apart from `01/02/1985` on the way back.
    if (!date.padded) throw new ValueError('UNSUPPORTED_DATE_FORMAT');
    const moved = civilDate(dayNumber(date) + days);
    if (!isValidDate(moved.year, moved.month, moved.day)) throw new ValueError('DATE_OUT_OF_RANGE');
    return date.format(moved);
  };
}

export const dateShiftTechnique: Technique<DateShiftOptions> = {
  id: 'date-shift',
  jobType: 'Pseudonymise',
  reversible: true,
  removesField: false,

  validate(raw) {
    const reader = new OptionReader(raw, ['format', 'maxDays', 'dayFirst'], { name: 'format', value: 'date' });
    return { maxDays: reader.integer('maxDays', { min: 1, max: 36500, default: 365 }), dayFirst: reader.boolean('dayFirst', true) };
  },

  compile(options): CompiledTechnique {
    return {
      bind(ctx) {
        const days = shiftFor(ctx, options.maxDays);
        return { forward: shifter(days, options.dayFirst), inverse: shifter(-days, options.dayFirst) };
      },
      explain: () => `date-shift(maxDays=${options.maxDays}, dayFirst=${options.dayFirst})`,
    };
  },
};
