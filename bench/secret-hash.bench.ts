// Client-secret checks: a known client (its stored hash), an unknown one (spendVerificationTime)
// and a malformed stored hash, timed in the same run. The test (test/identity/secret-hash.test.ts)
// counts the scrypt runs and their parameters; this measures that equal work takes equal time.
// Sequential checks on the libuv pool, ~10 s.

import { hashSecret, spendVerificationTime, verifySecret } from '../src/identity/secret-hash.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);

async function msPerCheck(check: () => Promise<unknown>): Promise<number> {
  await check(); // warm-up
  const start = performance.now();
  for (let i = 0; i < ROUNDS; i++) await check();
  return (performance.now() - start) / ROUNDS;
}

const stored = hashSecret('known');
const known = await msPerCheck(() => verifySecret('guess', stored));
const unknown = await msPerCheck(() => spendVerificationTime('guess'));
const malformed = await msPerCheck(() => verifySecret('guess', 'plain-text-secret'));
console.log(`secret checks (scrypt N=2^15, r=8, p=1), ${ROUNDS} rounds each`);
console.log(`  known client     ${known.toFixed(1)} ms per check`);
console.log(`  unknown client   ${unknown.toFixed(1)} ms per check (${(unknown / known).toFixed(2)}× known)`);
console.log(`  malformed hash   ${malformed.toFixed(1)} ms per check (${(malformed / known).toFixed(2)}× known)`);
