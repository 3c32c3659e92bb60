// FF1 throughput on random 16-digit decimals with AES-256: @noble/ciphers (baseline, same run)
// against our single-value encrypt and our encryptBatch. Bounded to well under a minute.

import { randomBytes, randomInt } from 'node:crypto';
import { FF1 as nobleFF1 } from '@noble/ciphers/ff1.js';
import { FF1 } from '../src/crypto/ff1.ts';

const key = new Uint8Array(randomBytes(32));
const tweak = new Uint8Array(randomBytes(8));
const DIGITS = 16;

function randomValues(count: number): number[][] {
  return Array.from({ length: count }, () => Array.from({ length: DIGITS }, () => randomInt(10)));
}

/** Runs `fn` (which processes `perCall` values) repeatedly for about `ms`; returns values/s. */
function measure(perCall: number, ms: number, fn: () => void): number {
  fn(); // warm-up
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    fn();
    calls++;
    elapsed = performance.now() - start;
  } while (elapsed < ms);
  return (calls * perCall) / (elapsed / 1000);
}

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000);

const pool = randomValues(50_000);
let cursor = 0;
const next = (): number[] => pool[cursor++ % pool.length];

const noble = nobleFF1(10, key, tweak);
const nobleRate = measure(200, DURATION_MS, () => {
  for (let i = 0; i < 200; i++) noble.encrypt(next());
});

const ours = new FF1(key, 10);
const singleRate = measure(1000, DURATION_MS, () => {
  for (let i = 0; i < 1000; i++) ours.encrypt(next(), tweak);
});

const batch1k = pool.slice(0, 1000);
const batch1kRate = measure(1000, DURATION_MS, () => {
  ours.encryptBatch(batch1k, tweak);
});

const batch50kRate = measure(50_000, DURATION_MS, () => {
  ours.encryptBatch(pool, tweak);
});

const decryptInput = ours.encryptBatch(batch1k, tweak);
const decrypt1kRate = measure(1000, DURATION_MS, () => {
  ours.decryptBatch(decryptInput, tweak);
});

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(12);
const ratio = (n: number): string => `${(n / nobleRate).toFixed(1)}x`;
const rows: [string, number][] = [
  ['@noble/ciphers FF1 encrypt (baseline)', nobleRate],
  ['FF1.encrypt, one value per call', singleRate],
  ['FF1.encryptBatch, batches of 1,000', batch1kRate],
  ['FF1.encryptBatch, batches of 50,000', batch50kRate],
  ['FF1.decryptBatch, batches of 1,000', decrypt1kRate],
];
process.stdout.write(`FF1, AES-256, random ${DIGITS}-digit decimals (values/s, ratio to noble)\n`);
for (const [name, rate] of rows) process.stdout.write(`  ${name.padEnd(40)} ${fmt(rate)}  ${ratio(rate)}\n`);
const goal = batch1kRate / nobleRate >= 10 && batch50kRate / nobleRate >= 10;
process.stdout.write(`  goal (batch >= 10x noble): ${goal ? 'met' : 'NOT met'}\n`);
