// Mask throughput (keepLast 4 on 16-digit card numbers) on one core, next to a do-nothing baseline
// running the same loop over the same strings. Also the spaced card form and, for scale, the FF1
// card pseudonym (one value at a time and batched). Bounded to well under a minute.

import { randomInt } from 'node:crypto';
import type { Scalar } from '../src/core/types.ts';
import type { BoundTechnique } from '../src/techniques/technique.ts';
import { bindTechnique, ctxOf, fakeKeys } from '../test/techniques/fake-keys.ts';

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000);
const GOAL = 5_000_000;

function luhnCard(): string {
  let body = '4';
  for (let i = 0; i < 14; i++) body += String(randomInt(10));
  for (let check = 0; check < 10; check++) {
    const card = body + check;
    let sum = 0;
    for (let i = 0; i < 16; i++) {
      const d = card.charCodeAt(i) - 48;
      sum += (15 - i) % 2 === 1 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d;
    }
    if (sum % 10 === 0) return card;
  }
  throw new Error('unreachable');
}

const cards = Array.from({ length: 65_536 }, luhnCard);
const spaced = cards.map((c) => c.replace(/(\d{4})(?=\d)/g, '$1 '));

function bind(jobType: 'Mask' | 'Pseudonymise', options: Record<string, unknown>): BoundTechnique {
  return bindTechnique(jobType, options, ctxOf(fakeKeys('tp=1;du=1')));
}

let sink = 0;

/** Values per second of `fn` over the pool, for about DURATION_MS after a warm-up; `chunk` values per clock read. */
function rate(pool: readonly string[], fn: (v: Scalar) => Scalar, chunk = 100_000): number {
  const mask = pool.length - 1;
  for (let i = 0; i < 2 * chunk; i++) sink += (fn(pool[i & mask]) as string).length;
  let done = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < chunk; i++) sink += (fn(pool[(done + i) & mask]) as string).length;
    done += chunk;
    elapsed = performance.now() - start;
  } while (elapsed < DURATION_MS);
  return done / (elapsed / 1000);
}

function batchRate(pool: readonly string[], bound: BoundTechnique, size: number, ms: number): number {
  let done = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    const offset = done % (pool.length - size);
    sink += bound.forwardBatch!(pool.slice(offset, offset + size)).length;
    done += size;
    elapsed = performance.now() - start;
  } while (elapsed < ms);
  return done / (elapsed / 1000);
}

const fmt = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M values/s` : `${(n / 1e3).toFixed(1)}k values/s`);

const mask = bind('Mask', { keepLast: 4 });
const copy = (v: Scalar): Scalar => v;
const baseline = rate(cards, copy);
const masked = rate(cards, mask.forward);
const maskedSpaced = rate(spaced, mask.forward);
const card = bind('Pseudonymise', { format: 'card' });
const fpeSingle = rate(cards, card.forward, 500);
const fpeBatch = batchRate(cards, card, 4096, DURATION_MS);

console.log(`mask keepLast 4, 16-digit cards, one core (${DURATION_MS} ms each)`);
console.log(`  baseline (copy through the same loop)  ${fmt(baseline)}`);
console.log(`  mask '4111111111111111'                ${fmt(masked)}  (${((masked / baseline) * 100).toFixed(0)}% of baseline, goal ${fmt(GOAL)}: ${masked >= GOAL ? 'met' : 'NOT met'})`);
console.log(`  mask '4111 1111 1111 1111'             ${fmt(maskedSpaced)}`);
console.log(`  pseudonymise card (FF1), one by one    ${fmt(fpeSingle)}`);
console.log(`  pseudonymise card (FF1), batch 4096    ${fmt(fpeBatch)}`);
if (sink === 42) console.log('');
