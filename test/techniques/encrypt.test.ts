// Encrypt / Decrypt: exact round trips of every JSON scalar, the token format, determinism of siv,
// key rotation, and INVALID_CIPHERTEXT for anything malformed, tampered or moved to another scope.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { techniqueFor } from '../../src/techniques/registry.ts';
import { decodePlaintext, encodePlaintext, parseToken } from '../../src/techniques/encrypt/ciphertext-token.ts';
import { TechniqueOptionError } from '../../src/techniques/technique.ts';
import type { Scalar } from '../../src/core/types.ts';

const TOKEN = /^enc:v1:(gcm|siv):test-key:1:[A-Za-z0-9_-]+$/;
const anyUnitString = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 30 });
const scalars: fc.Arbitrary<Scalar> = fc.oneof(
  fc.string(),
  anyUnitString,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);

describe('Encrypt', () => {
  for (const mode of ['gcm', 'siv'] as const) {
    it(`${mode}: every scalar round-trips exactly, type included (property)`, () => {
      const bound = bindTechnique('Encrypt', { mode });
      fc.assert(
        fc.property(scalars, (value) => {
          const token = bound.forward(value) as string;
          assert.match(token, TOKEN);
          assert.equal(parseToken(token)?.mode, mode);
          assert.ok(Object.is(bound.inverse!(token), value));
        }),
        { numRuns: 1500, seed: 7 },
      );
    });
  }

  it('gcm is randomised, siv deterministic and scope-bound', () => {
    const gcm = bindTechnique('Encrypt', {});
    assert.notEqual(gcm.forward('same'), gcm.forward('same'));
    const siv = bindTechnique('Encrypt', { mode: 'siv' });
    assert.equal(siv.forward('same'), siv.forward('same'));
    const other = bindTechnique('Encrypt', { mode: 'siv' }, ctxOf(fakeKeys('tp=9;du=9')));
    assert.notEqual(other.forward('same'), siv.forward('same'));
  });

  it('a token from another scope, or tampered, does not open', () => {
    const bound = bindTechnique('Encrypt', {});
    const other = bindTechnique('Encrypt', {}, ctxOf(fakeKeys('tp=9;du=9')));
    const token = bound.forward('secret value') as string;
    assert.equal(reasonOf(() => other.inverse!(token)), 'INVALID_CIPHERTEXT');
    const data = token.slice(token.lastIndexOf(':') + 1);
    for (let i = 0; i < data.length; i += 3) {
      const flipped = data.slice(0, i) + (data[i] === 'A' ? 'B' : 'A') + data.slice(i + 1);
      const tampered = token.slice(0, token.lastIndexOf(':') + 1) + flipped;
      if (tampered === token) continue;
      assert.equal(reasonOf(() => bound.inverse!(tampered)), 'INVALID_CIPHERTEXT');
    }
    assert.equal(reasonOf(() => bound.inverse!(token.replace(':gcm:', ':siv:'))), 'INVALID_CIPHERTEXT');
    assert.equal(reasonOf(() => bound.inverse!(token.slice(0, -4))), 'INVALID_CIPHERTEXT');
  });

  it('malformed input is INVALID_CIPHERTEXT and never echoed', () => {
    const bound = bindTechnique('Encrypt', {});
    const garbage: Scalar[] = [
      'plain text',
      '',
      'enc:v1:',
      'enc:v1:gcm:test-key:1:',
      'enc:v1:xts:test-key:1:AAAA',
      'enc:v1:gcm::1:AAAA',
      'enc:v1:gcm:test-key:one:AAAA',
      'enc:v1:gcm:test-key:1:AA==',
      'enc:v2:gcm:test-key:1:AAAA',
      42,
      null,
      true,
    ];
    for (const value of garbage) {
      try {
        bound.inverse!(value);
        assert.fail('expected an error');
      } catch (err) {
        assert.equal((err as Error).message, 'INVALID_CIPHERTEXT', JSON.stringify(value));
      }
    }
  });

  it('an unknown key version is reported as such', () => {
    const bound = bindTechnique('Encrypt', {});
    const token = bound.forward('x') as string;
    assert.equal(reasonOf(() => bound.inverse!(token.replace(':test-key:1:', ':test-key:9:'))), 'UNKNOWN_KEY_VERSION');
    assert.equal(reasonOf(() => bound.inverse!(token.replace(':test-key:1:', ':other:1:'))), 'UNKNOWN_KEY_VERSION');
  });

  it('after rotation new tokens name the new version and old tokens still open', () => {
    const before = bindTechnique('Encrypt', { mode: 'siv' }, ctxOf(fakeKeys('tp=1;du=1', 1)));
    const after = bindTechnique('Encrypt', { mode: 'siv' }, ctxOf(fakeKeys('tp=1;du=1', 2)));
    const old = before.forward('card 4111') as string;
    const fresh = after.forward('card 4111') as string;
    assert.match(fresh, /^enc:v1:siv:test-key:2:/);
    assert.equal(after.inverse!(old), 'card 4111');
    assert.equal(before.inverse!(fresh), 'card 4111');
  });

  it('Decrypt follows the token: a gcm token opens under a siv rule', () => {
    const gcm = bindTechnique('Encrypt', { mode: 'gcm' });
    const siv = bindTechnique('Encrypt', { mode: 'siv' });
    assert.equal(siv.inverse!(gcm.forward('x')), 'x');
  });

  it('tokens cannot be moved between Encrypt and the FF1 fallback (separate keys)', () => {
    const enc = bindTechnique('Encrypt', { mode: 'siv' });
    const fpe = bindTechnique('Pseudonymise', { format: 'digits', shortValues: 'encrypt' });
    assert.equal(reasonOf(() => fpe.inverse!(enc.forward('123'))), 'INVALID_CIPHERTEXT');
    assert.equal(reasonOf(() => enc.inverse!(fpe.forward('123'))), 'INVALID_CIPHERTEXT');
  });

  it('plaintext encoding is exact for -0 and lone surrogates', () => {
    for (const v of [-0, 0, 1e-300, 'a\ud800b', '\udfff', '', 'ü']) assert.ok(Object.is(decodePlaintext(encodePlaintext(v)), v));
  });

  it('rejects unknown modes and options', () => {
    for (const options of [{ mode: 'ecb' }, { mode: 'gcm', kid: 'x' }, { mode: 1 }]) {
      assert.throws(() => techniqueFor('Encrypt', options).validate(options), TechniqueOptionError);
    }
  });
});
