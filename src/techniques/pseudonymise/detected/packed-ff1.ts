// FF1 over a batch of detected values' free digits at once (FF1.encryptPacked: one AES call per
// Feistel round for the whole batch). Each scheme says which digits of a plan are free; the result
// for plan j is `digitsOf(j)` of the returned packed array.

import type { FF1 } from '../../../crypto/ff1.ts';

export interface PackedPlan {
  /** How many digits FF1 changes. */
  readonly free: number;
  readonly tweak: Uint8Array;
}

export interface PackedResult {
  /** Plan j's digits after FF1, a view into one shared array. */
  digitsOf(j: number): Uint16Array;
}

/** Packs each plan's free digits (`write` copies them in at `at`), runs FF1 over all of them, and returns the views. */
export function ff1Packed(ff1: FF1, plans: readonly PackedPlan[], write: (packed: Uint16Array, j: number, at: number) => void, decrypt: boolean): PackedResult {
  const count = plans.length;
  const starts = new Int32Array(count);
  const lengths = new Int32Array(count);
  const tweaks = new Array<Uint8Array>(count);
  let total = 0;
  for (let j = 0; j < count; j++) {
    starts[j] = total;
    lengths[j] = plans[j].free;
    tweaks[j] = plans[j].tweak;
    total += plans[j].free;
  }
  const packed = new Uint16Array(total);
  for (let j = 0; j < count; j++) write(packed, j, starts[j]);
  if (decrypt) ff1.decryptPacked(packed, starts, lengths, tweaks);
  else ff1.encryptPacked(packed, starts, lengths, tweaks);
  return { digitsOf: (j) => packed.subarray(starts[j], starts[j] + lengths[j]) };
}
