// Strings of any code points, lone surrogate halves included: what fast-check's
// `fc.string({ unit: 'binary' })` generates, without its cost. Building that arbitrary maps every
// one of the 1,114,112 code points back to its index once per process (1.7 s of CPU), and the
// short run in `npm test` would pay it each time.

import fc from 'fast-check';

export function anyCodePoints(maxLength: number): fc.Arbitrary<string> {
  return fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength }).map((cps) => String.fromCodePoint(...cps));
}
