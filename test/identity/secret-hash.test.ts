// Secret hashing: self-describing format, constant-time verification, malformed hashes never match.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashSecret, isSecretHash, scryptRuns, spendVerificationTime, verifySecret } from '../../src/identity/secret-hash.ts';

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

test('an unknown client costs as much as a known one: one scrypt of the same parameters', async () => {
  const stored = hashSecret('known');
  const old = hashSecret('old');
  // An entry of an older version (N=2^14): an unknown client spends that cost when asked to.
  const parts = old.split('$');
  const runs = async (fn: () => Promise<unknown>) => {
    scryptRuns.length = 0;
    await fn();
    return scryptRuns.splice(0);
  };
  const known = await runs(() => verifySecret('guess', stored));
  const unknown = await runs(() => spendVerificationTime('guess'));
  const malformed = await runs(() => verifySecret('guess', 'plain-text-secret'));
  assert.equal(known.length, 1);
  assert.deepEqual(unknown, known);
  assert.deepEqual(malformed, known);
  assert.deepEqual(known[0], { N: 32768, r: 8, p: 1, keylen: 32 });
  const like = await runs(() => spendVerificationTime('guess', [parts[0], '16384', ...parts.slice(2)].join('$')));
  assert.deepEqual(like, [{ N: 16384, r: 8, p: 1, keylen: 32 }]);
});
