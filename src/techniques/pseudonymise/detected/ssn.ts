// Detected SSNs: the nine digits ranked among the numbers the SSA rules allow (area 001-899 but
// 666, group 01-99, serial 0001-9999: 898 x 99 x 9,999 = 888,981,102 values), permuted by a rank
// cipher of 30 bits (expected 0.21 extra steps: 2^30 / 888,981,102 - 1) and written back in the
// same places. The two numbers known from advertising are walked past, as detection refuses them.

import type { FF1 } from '../../../crypto/ff1.ts';
import { isSsnDigits } from '../../../detect/ssn.ts';
import { ValueError } from '../../technique.ts';
import { RankCipher } from './rank-cipher.ts';
import { digitsOf, withDigits, type DetectedTweaks } from './digit-text.ts';

const AREAS = 898;
const GROUPS = 99;
const SERIALS = 9999;
const SIZE = AREAS * GROUPS * SERIALS;

function digitsOfRank(rank: number): Uint16Array {
  const serial = (rank % SERIALS) + 1;
  const rest = Math.floor(rank / SERIALS);
  const group = (rest % GROUPS) + 1;
  const areaIndex = Math.floor(rest / GROUPS);
  const area = areaIndex + (areaIndex >= 665 ? 2 : 1);
  const text = String(area).padStart(3, '0') + String(group).padStart(2, '0') + String(serial).padStart(4, '0');
  return digitsOf(text);
}

function rankOf(d: ArrayLike<number>): number {
  const area = d[0] * 100 + d[1] * 10 + d[2];
  const group = d[3] * 10 + d[4];
  const serial = d[5] * 1000 + d[6] * 100 + d[7] * 10 + d[8];
  const areaIndex = area - (area > 666 ? 2 : 1);
  return (areaIndex * GROUPS + group - 1) * SERIALS + serial - 1;
}

/** Ranks of an SSN detection refuses although the ranges allow it (078-05-1120, 219-09-9999). */
const ADVERTISED = new Set([rankOf(digitsOf('078051120')), rankOf(digitsOf('219099999'))]);

export class SsnScheme {
  readonly #cipher: RankCipher;
  readonly #tweak: Uint8Array;

  constructor(ff1Radix2: FF1, tweaks: DetectedTweaks) {
    this.#cipher = new RankCipher(ff1Radix2, SIZE, (rank) => !ADVERTISED.has(rank));
    this.#tweak = tweaks.get('ssn');
  }

  step(value: string, decrypt: boolean): string {
    return withDigits(value, digitsOfRank(this.#cipher.permute(checkedRank(value), this.#tweak, decrypt)));
  }

  /** step for many values, the rank cipher run once for all (see KindScheme.many); undefined where step throws. */
  stepMany(values: readonly string[], decrypt: boolean, steps: Int32Array): (string | undefined)[] {
    const out = new Array<string | undefined>(values.length);
    const index: number[] = [];
    const ranks: number[] = [];
    for (let k = 0; k < values.length; k++) {
      try {
        ranks.push(checkedRank(values[k]));
        index.push(k);
      } catch (err) {
        if (!(err instanceof ValueError)) throw err;
      }
    }
    const permuted = Float64Array.from(ranks);
    const taken = new Int32Array(permuted.length);
    this.#cipher.permuteMany(permuted, this.#tweak, decrypt, taken);
    for (let j = 0; j < index.length; j++) {
      const k = index[j];
      if (Number.isNaN(permuted[j])) continue;
      out[k] = withDigits(values[k], digitsOfRank(permuted[j]));
      steps[k] += taken[j];
    }
    return out;
  }
}

function checkedRank(value: string): number {
  const digits = digitsOf(value);
  if (digits.length !== 9 || !isSsnDigits(String.fromCharCode(...digits.map((d) => d + 48)))) throw new ValueError('NOT_AN_SSN');
  return rankOf(digits);
}
