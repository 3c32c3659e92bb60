// A keyed permutation of the integers [0, size): FF1 in radix 2 over enough bits for `size` (at
// least 20, SP 800-38G's minimum domain of 10^6), cycle-walked down to [0, size) and, optionally,
// to the ranks an extra test accepts. The input is always inside, so the walk ends; with
// size >= 2^(bits-1) it takes under one extra step on average (docs/detection.md gives the figures
// per kind). A detected value whose valid forms can be counted (an SSN, a NANP number) is ranked
// onto [0, size) and permuted here: its pseudonym is valid by construction.

import type { FF1 } from '../../../crypto/ff1.ts';
import { ValueError } from '../../technique.ts';
import { walkSteps } from './walk-steps.ts';

/** A walk this long means the input was outside the set: a bug, never bad luck (2^-100 at worst). */
const MAX_WALK = 10_000;
const MIN_BITS = 20;

export class RankCipher {
  readonly bits: number;
  readonly #value = new Float64Array(1);
  readonly #lengths: number[];

  constructor(
    private readonly ff1: FF1,
    readonly size: number,
    private readonly accept: (rank: number) => boolean = () => true,
  ) {
    if (ff1.radix !== 2 || !(size >= 2 && size <= 2 ** 52)) throw new Error('rank cipher needs radix 2 and a size in [2, 2^52]');
    this.bits = Math.max(MIN_BITS, Math.ceil(Math.log2(size)));
    this.#lengths = [this.bits];
  }

  /** The rank's image (or preimage, `decrypt`) under the permutation of the accepted ranks of [0, size). */
  permute(rank: number, tweak: Uint8Array, decrypt: boolean): number {
    const value = this.#value;
    value[0] = rank;
    const tweaks = [tweak];
    for (let steps = 0; ; steps++) {
      if (decrypt) this.ff1.decryptNumbers(value, this.#lengths, tweaks);
      else this.ff1.encryptNumbers(value, this.#lengths, tweaks);
      const out = value[0];
      if (out < this.size && this.accept(out)) return out;
      if (steps >= MAX_WALK) throw new ValueError('FPE_DOMAIN_ERROR');
      walkSteps.count++;
    }
  }

  /**
   * permute for many ranks at once, in place (one AES call per Feistel round for all of them, the
   * walk batched too): ranks[k] becomes its image, steps[k] gains the extra steps it took (what
   * permute counts in walkSteps, which this leaves alone). A rank still outside after MAX_WALK
   * steps (a bug) becomes NaN.
   */
  permuteMany(ranks: Float64Array, tweak: Uint8Array, decrypt: boolean, steps: Int32Array): void {
    const count = ranks.length;
    if (count === 0) return;
    const lengths = new Int32Array(count).fill(this.bits);
    const tweaks = new Array<Uint8Array>(count).fill(tweak);
    let which: number[] | undefined;
    for (let step = 0; ; step++) {
      if (decrypt) this.ff1.decryptNumbers(ranks, lengths, tweaks, which);
      else this.ff1.encryptNumbers(ranks, lengths, tweaks, which);
      const still: number[] = [];
      const n = which === undefined ? count : which.length;
      for (let j = 0; j < n; j++) {
        const k = which === undefined ? j : which[j];
        const out = ranks[k];
        if (!(out < this.size && this.accept(out))) still.push(k);
      }
      if (still.length === 0) return;
      if (step >= MAX_WALK) {
        for (const k of still) ranks[k] = NaN;
        return;
      }
      for (const k of still) steps[k]++;
      which = still;
    }
  }
}
