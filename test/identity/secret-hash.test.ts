// Secret hashing: self-describing format, constant-time verification, malformed hashes never match.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashSecret, isSecretHash, spendVerificationTime, verifySecret } from '../../src/identity/secret-hash.ts';

test('hashSecret writes scrypt$N$r$p$salt$hash with a fresh salt each time', () => {
  const a = hashSecret('s3cret');
  const b = hashSecret('s3cret');
  assert.match(a, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, b);
  assert.ok(isSecretHash(a));
  assert.ok(!a.includes('s3cret'));
});

test('verifySecret accepts the secret and rejects anything else', async () => {
  const stored = hashSecret('correct horse');
  assert.equal(await verifySecret('correct horse', stored), true);
  assert.equal(await verifySecret('correct hors', stored), false);
  assert.equal(await verifySecret('', stored), false);
});

test('malformed or unsafe stored hashes never verify', async () => {
  const good = hashSecret('x');
  const parts = good.split('$');
  const bad = [
    '',
    'plain-text-secret',
    good.replace('scrypt', 'bcrypt'),
    [parts[0], '1000', ...parts.slice(2)].join('$'), // N not a power of two
    [parts[0], '2', ...parts.slice(2)].join('$'), // N too small
    [...parts.slice(0, 4), 'a', parts[5]].join('$'), // salt too short
    `${good}$extra`,
  ];
  for (const stored of bad) {
    assert.equal(isSecretHash(stored), false, stored);
    assert.equal(await verifySecret('x', stored), false, stored);
  }
});

test('an unknown client costs about as much as a known one', async () => {
  const stored = hashSecret('known');
  await verifySecret('warm-up', stored);
  await spendVerificationTime('warm-up');
  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    const start = performance.now();
    for (let i = 0; i < 3; i++) await fn();
    return performance.now() - start;
  };
  const known = await time(() => verifySecret('guess', stored));
  const unknown = await time(() => spendVerificationTime('guess'));
  // Same scrypt parameters: within a factor of three even on a noisy machine, never "instant".
  assert.ok(unknown > known / 3 && unknown < known * 3, `known ${known} ms, unknown ${unknown} ms`);
});
