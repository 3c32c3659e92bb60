// Anonymise methods: redact, keyed hash, generalise (date, number, prefix), nullify.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { techniqueFor } from '../../src/techniques/registry.ts';
import { TechniqueOptionError } from '../../src/techniques/technique.ts';
import type { Scalar } from '../../src/core/types.ts';

const preserving = ctxOf(fakeKeys(), true);

const cases: [string, Record<string, unknown>, Scalar, Scalar, boolean?][] = [
  ['redact default', {}, 'Jane Doe', 'REDACTED'],
  ['redact null', { method: 'redact' }, null, 'REDACTED'],
  ['redact number', { method: 'redact' }, 42, 'REDACTED'],
  ['redact custom text', { method: 'redact', text: '[gone]' }, 'x', '[gone]'],
  ['redact preserve pads', { method: 'redact' }, 'Jane Marie Doe', 'REDACTED******', true],
  ['redact preserve truncates', { method: 'redact' }, 'Jane', 'REDA', true],
  ['redact preserve counts characters', { method: 'redact', maskChar: '-' }, 'Zoë Ångström', 'REDACTED----', true],
  ['date to year', { method: 'generalise-date' }, '1985-04-12', '1985'],
  ['date to month', { method: 'generalise-date', to: 'month' }, '1985-04-12', '1985-04'],
  ['datetime to year', { method: 'generalise-date' }, '1985-04-12T23:59:59.123+02:00', '1985'],
  ['DD/MM/YYYY', { method: 'generalise-date', to: 'month' }, '12/04/1985', '1985-04'],
  ['MM/DD/YYYY', { method: 'generalise-date', to: 'month', dayFirst: false }, '04/12/1985', '1985-04'],
  ['D.M.YYYY', { method: 'generalise-date', to: 'month' }, '1.2.1985', '1985-02'],
  ['YYYY/MM/DD', { method: 'generalise-date', to: 'month' }, '1985/04/12', '1985-04'],
  ['YYYYMMDD', { method: 'generalise-date' }, '19850412', '1985'],
  ['leap day', { method: 'generalise-date', to: 'month' }, '2024-02-29', '2024-02'],
  ['number bucket', { method: 'generalise-number', width: 10000 }, 54321, '50000-59999'],
  ['number bucket edge', { method: 'generalise-number', width: 10000 }, 60000, '60000-69999'],
  ['numeric string', { method: 'generalise-number', width: 10 }, ' 57.5 ', '50-59'],
  ['negative number', { method: 'generalise-number', width: 10 }, -5, '-10--1'],
  ['prefix drop', { method: 'generalise-prefix', keep: 3 }, 'SW1A 1AA', 'SW1'],
  ['prefix mask', { method: 'generalise-prefix', keep: 3, rest: 'mask' }, 'SW1A 1AA', 'SW1* ***'],
  ['prefix drop, preserve', { method: 'generalise-prefix', keep: 3 }, 'SW1A 1AA', 'SW1*****', true],
  ['prefix of number', { method: 'generalise-prefix', keep: 2 }, 75008, '75'],
  ['nullify', { method: 'nullify' }, 'anything', null],
];

const failures: [string, Record<string, unknown>, Scalar, string][] = [
  ['not a date', { method: 'generalise-date' }, 'yesterday', 'NOT_A_DATE'],
  ['impossible date', { method: 'generalise-date' }, '2023-02-29', 'NOT_A_DATE'],
  ['month 13', { method: 'generalise-date' }, '2023-13-01', 'NOT_A_DATE'],
  ['number as date', { method: 'generalise-date' }, 19850412, 'NOT_A_DATE'],
  ['not a number', { method: 'generalise-number', width: 10 }, 'ten', 'NOT_A_NUMBER'],
  ['boolean as number', { method: 'generalise-number', width: 10 }, true, 'NOT_A_NUMBER'],
  ['null as number', { method: 'generalise-number', width: 10 }, null, 'NOT_A_NUMBER'],
];

describe('Anonymise', () => {
  for (const [name, options, input, expected, preserve] of cases) {
    it(name, () => assert.equal(bindTechnique('Anonymise', options, preserve ? preserving : undefined).forward(input), expected));
  }
  for (const [name, options, input, reason] of failures) {
    it(`${name} → ${reason}`, () => assert.equal(reasonOf(() => bindTechnique('Anonymise', options).forward(input)), reason));
  }

  it('hash is HMAC-SHA-256 under the field hmac key, hex by default', () => {
    const keys = fakeKeys();
    const expected = createHmac('sha256', keys.active('hmac').key).update('jane@example.com').digest('hex');
    assert.equal(bindTechnique('Anonymise', { method: 'hash' }, ctxOf(keys)).forward('jane@example.com'), expected);
  });

  it('hash tags the JSON type of non-strings: 42, "42", true, "true", null and "" all differ', () => {
    const bound = bindTechnique('Anonymise', { method: 'hash' });
    const outs = [42, '42', true, 'true', null, '', false, 'false'].map((v) => bound.forward(v));
    assert.equal(new Set(outs).size, outs.length);
    // Strings hash as their bare UTF-8 (join keys computed before the tag still match).
    const keys = fakeKeys();
    const tagged = createHmac('sha256', keys.active('hmac').key).update(Buffer.of(0xff, 0x6e)).update('42').digest('hex');
    assert.equal(bindTechnique('Anonymise', { method: 'hash' }, ctxOf(keys)).forward(42), tagged);
  });

  it('hash encodings and truncation', () => {
    const b64 = bindTechnique('Anonymise', { method: 'hash', encoding: 'base64url', length: 12 }).forward('x') as string;
    assert.match(b64, /^[A-Za-z0-9_-]{12}$/);
    const full = bindTechnique('Anonymise', { method: 'hash', encoding: 'base64url' }).forward('x') as string;
    assert.equal(full.length, 43);
    assert.ok(full.startsWith(b64));
  });

  it('hash is stable within a scope and unlinkable across scopes (property)', () => {
    const a = bindTechnique('Anonymise', { method: 'hash' }, ctxOf(fakeKeys('tp=1;du=1')));
    const a2 = bindTechnique('Anonymise', { method: 'hash' }, ctxOf(fakeKeys('tp=1;du=1')));
    const b = bindTechnique('Anonymise', { method: 'hash' }, ctxOf(fakeKeys('tp=2;du=1')));
    fc.assert(
      fc.property(fc.string(), (s) => {
        assert.equal(a.forward(s), a2.forward(s));
        assert.notEqual(a.forward(s), b.forward(s));
      }),
      { numRuns: 1000 },
    );
  });

  it('generalise-date agrees with Date for every day over four centuries (property)', () => {
    const year = bindTechnique('Anonymise', { method: 'generalise-date', to: 'month' });
    fc.assert(
      fc.property(fc.date({ min: new Date('1800-01-01T00:00:00Z'), max: new Date('2199-12-31T00:00:00Z'), noInvalidDate: true }), (d) => {
        const iso = d.toISOString();
        assert.equal(year.forward(iso.slice(0, 10)), iso.slice(0, 7));
        assert.equal(year.forward(`${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}`), iso.slice(0, 7));
      }),
      { numRuns: 2000 },
    );
  });

  it('generalise-number buckets contain the value (property)', () => {
    const bound = bindTechnique('Anonymise', { method: 'generalise-number', width: 250 });
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), (n) => {
        const m = /^(-?\d+)-(-?\d+)$/.exec(bound.forward(n) as string);
        assert.ok(m);
        assert.ok(Number(m[1]) <= n && n <= Number(m[2]) && Number(m[2]) - Number(m[1]) === 249);
      }),
      { numRuns: 2000 },
    );
  });

  const badOptions: Record<string, unknown>[] = [
    { method: 'scramble' },
    { method: 'redact', text: 5 },
    { method: 'redact', keepLast: 4 },
    { method: 'hash', encoding: 'base32' },
    { method: 'hash', length: 4 },
    { method: 'hash', length: 15 }, // 60 bits: truncation keeps at least 64
    { method: 'hash', encoding: 'base64url', length: 10 },
    { method: 'hash', length: 65 },
    { method: 'hash', encoding: 'base64url', length: 44 },
    { method: 'generalise-date', to: 'day' },
    { method: 'generalise-number' },
    { method: 'generalise-number', width: 0 },
    { method: 'generalise-number', width: 2.5 },
    { method: 'generalise-prefix' },
    { method: 'generalise-prefix', keep: 2, rest: 'hide' },
    { method: 'nullify', text: 'x' },
    { method: 7 },
  ];
  for (const options of badOptions) {
    it(`rejects ${JSON.stringify(options)}`, () => {
      assert.throws(() => techniqueFor('Anonymise', options).validate(options), TechniqueOptionError);
    });
  }
});
