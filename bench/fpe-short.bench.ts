// Pseudonymise throughput of short values (the short-value scheme: FF1 radix 2 over >= 2^20 and
// cycle walking into the short set) next to long values of the same format in the same run (the
// in-place FF1 every value took before), one value at a time and batched. Bounded to ~30 s.

import type { Scalar } from '../src/core/types.ts';
import type { BoundTechnique } from '../src/techniques/technique.ts';
import { bindTechnique, ctxOf, fakeKeys } from '../test/techniques/fake-keys.ts';
import { timeLoop } from './timing.ts';

const DURATION_MS = Number(process.env.BENCH_MS ?? 1500);

/** Binds a Pseudonymise format the way the manifest loader and the engine do. */
function bind(format: string): BoundTechnique {
  return bindTechnique('Pseudonymise', { format }, ctxOf(fakeKeys('tp=1;du=1')));
}

let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 10)).join('');
const letters = (n: number) => Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(rand() * 26))).join('');
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);

const CASES: [string, string, () => Scalar, () => Scalar][] = [
  // format, label, long value (in place, the same-run baseline), short value
  ['phone', 'phone: 10 digits vs 4', () => `${digits(3)}-555-${digits(4)}`, () => digits(4)],
  ['name', 'name: 9 letters vs 2+2', () => `${cap(letters(4))} ${cap(letters(5))}`, () => `${cap(letters(2))} ${cap(letters(2))}`],
  ['email', 'email: local 9 vs 4', () => `${letters(4)}.${letters(5)}@example.com`, () => `${letters(4)}@example.com`],
];

const N = 4096;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(10);
process.stdout.write('Pseudonymise, long values (in-place FF1, baseline) vs short values (short-value scheme), values/s\n');
process.stdout.write(`  ${'case'.padEnd(26)} ${'long 1-by-1'.padStart(10)} ${'short 1-by-1'.padStart(12)} ${'ratio'.padStart(6)} ${'long batch'.padStart(10)} ${'short batch'.padStart(11)} ${'ratio'.padStart(6)}\n`);
for (const [format, label, long, short] of CASES) {
  const bound = bind(format);
  const longValues = Array.from({ length: N }, long);
  const shortValues = Array.from({ length: N }, short);
  let i = 0;
  const longSingle = timeLoop(() => bound.forward(longValues[i++ % N]!), DURATION_MS, 2000).perSecond;
  const shortSingle = timeLoop(() => bound.forward(shortValues[i++ % N]!), DURATION_MS, 2000).perSecond;
  const longBatch = timeLoop(() => bound.forwardBatch!(longValues), DURATION_MS, 2).perSecond * N;
  const shortBatch = timeLoop(() => bound.forwardBatch!(shortValues), DURATION_MS, 2).perSecond * N;
  process.stdout.write(
    `  ${label.padEnd(26)} ${fmt(longSingle)} ${fmt(shortSingle).padStart(12)} ${(shortSingle / longSingle).toFixed(2).padStart(5)}x ${fmt(longBatch)} ${fmt(shortBatch).padStart(11)} ${(shortBatch / longBatch).toFixed(2).padStart(5)}x\n`,
  );
}
