// The registry: selection by job type and selector, strict options for every technique, and every
// cell of the default manifest table (DESIGN §12) expressible with the expected behaviour.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bindTechnique, ctxOf, fakeKeys } from './fake-keys.ts';
import { techniqueFor, techniques } from '../../src/techniques/registry.ts';
import { isLuhnValid } from '../../src/techniques/pseudonymise/card.ts';
import { isValidIban } from '../../src/techniques/pseudonymise/iban.ts';
import { civilDate, dayNumber, parseDateText } from '../../src/techniques/date-text.ts';
import { TechniqueOptionError } from '../../src/techniques/technique.ts';
import { FORWARD_JOB_TYPES, type ForwardJobType, type Scalar } from '../../src/core/types.ts';

describe('registry', () => {
  it('ids are unique and match the map keys', () => {
    assert.equal(techniques.size, 20);
    for (const [id, t] of techniques) assert.equal(t.id, id);
  });

  it('picks by job type and selector, with documented defaults', () => {
    const picks: [ForwardJobType, Record<string, unknown>, string][] = [
      ['Mask', {}, 'mask'],
      ['Mask', { style: 'plain' }, 'mask'],
      ['Mask', { style: 'Email' }, 'mask-email'],
      ['Mask', { style: 'initials' }, 'mask-initials'],
      ['Anonymise', {}, 'redact'],
      ['Anonymise', { method: 'hash' }, 'hash'],
      ['Anonymise', { method: 'generalise-date' }, 'generalise-date'],
      ['Anonymise', { method: 'generalise-number', width: 10 }, 'generalise-number'],
      ['Anonymise', { method: 'generalise-prefix', keep: 2 }, 'generalise-prefix'],
      ['Anonymise', { method: 'nullify' }, 'nullify'],
      ['Pseudonymise', {}, 'fpe-text'],
      ['Pseudonymise', { format: 'digits' }, 'fpe-digits'],
      ['Pseudonymise', { format: 'card' }, 'fpe-card'],
      ['Pseudonymise', { format: 'email' }, 'fpe-email'],
      ['Pseudonymise', { format: 'phone' }, 'fpe-phone'],
      ['Pseudonymise', { format: 'iban' }, 'fpe-iban'],
      ['Pseudonymise', { format: 'name' }, 'fpe-name'],
      ['Pseudonymise', { format: 'date' }, 'date-shift'],
      ['Pseudonymise', { format: 'ip' }, 'fpe-ip'],
      ['Encrypt', {}, 'encrypt'],
      ['Encrypt', { mode: 'siv' }, 'encrypt'],
      ['Restrict', {}, 'restrict'],
    ];
    for (const [jobType, options, id] of picks) {
      const t = techniqueFor(jobType, options);
      assert.equal(t.id, id, `${jobType} ${JSON.stringify(options)}`);
      assert.equal(t.jobType, jobType);
      t.validate(options);
    }
  });

  it('unknown selector values are option errors naming the selector', () => {
    const bad: [ForwardJobType, Record<string, unknown>, string][] = [
      ['Mask', { style: 'fancy' }, 'style'],
      ['Anonymise', { method: 'shuffle' }, 'method'],
      ['Pseudonymise', { format: 'ssn' }, 'format'],
      ['Encrypt', { mode: 'cbc' }, 'mode'],
      ['Pseudonymise', { format: 3 }, 'format'],
    ];
    for (const [jobType, options, path] of bad) {
      assert.throws(() => techniqueFor(jobType, options), (err: unknown) => err instanceof TechniqueOptionError && err.path === path);
    }
  });

  it('every technique rejects an unknown option name, and options that are not a mapping', () => {
    for (const t of techniques.values()) {
      assert.throws(() => t.validate({ definitelyNotAnOption: 1 }), TechniqueOptionError, t.id);
      assert.throws(() => t.validate([] as unknown as Record<string, unknown>), TechniqueOptionError, t.id);
    }
  });

  it('Restrict removes the field and leaves values alone; only it removes', () => {
    const restrict = techniqueFor('Restrict', {});
    assert.equal(restrict.removesField, true);
    assert.equal(restrict.compile(restrict.validate({}), { manifest: 'm', field: 'f' }).bind(ctxOf()).forward('x'), 'x');
    for (const t of techniques.values()) if (t.id !== 'restrict') assert.equal(t.removesField, false);
  });

  it('reversible techniques have inverses; the others do not', () => {
    for (const t of techniques.values()) {
      const bound = t.compile(t.validate(t.id === 'generalise-number' ? { width: 10 } : t.id === 'generalise-prefix' ? { keep: 1 } : {}), {
        manifest: 'm',
        field: 'f',
      }).bind(ctxOf());
      assert.equal(typeof bound.inverse === 'function', t.reversible, t.id);
    }
  });

  it('explain() never contains key material', () => {
    const keys = fakeKeys();
    for (const jobType of FORWARD_JOB_TYPES) {
      const t = techniqueFor(jobType, {});
      const compiled = t.compile(t.validate({}), { manifest: 'm', field: 'f' });
      compiled.bind(ctxOf(keys));
      const text = compiled.explain();
      for (const purpose of ['ff1', 'hmac', 'aead-gcm']) assert.ok(!text.includes(Buffer.from(keys.active(purpose).key).toString('hex')));
      assert.match(text, /^[a-z0-9-]+\(/);
    }
  });
});

describe('DESIGN §12: the default manifest table', () => {
  // [field, job type, options, input, check of the output]
  const cells: [string, ForwardJobType, Record<string, unknown>, Scalar, (out: Scalar) => boolean][] = [
    ['name', 'Mask', { style: 'initials' }, 'John Smith', (o) => o === 'J*** S****'],
    ['name', 'Anonymise', {}, 'John Smith', (o) => o === 'REDACTED'],
    ['name', 'Pseudonymise', { format: 'name' }, 'John Smith', (o) => /^[A-Z][a-z]{3} [A-Z][a-z]{4}$/.test(o as string)],
    ['name', 'Encrypt', {}, 'John Smith', (o) => /^enc:v1:gcm:/.test(o as string)],
    ['email', 'Mask', { style: 'email' }, 'john.smith@example.com', (o) => o === 'j***@example.com'],
    ['email', 'Anonymise', { method: 'hash' }, 'john.smith@example.com', (o) => /^[0-9a-f]{64}$/.test(o as string)],
    ['email', 'Pseudonymise', { format: 'email' }, 'john.smith@example.com', (o) => /^[a-z]{4}\.[a-z]{5}@example\.com$/.test(o as string)],
    ['email', 'Encrypt', {}, 'john.smith@example.com', (o) => /^enc:v1:/.test(o as string)],
    ['phone', 'Mask', { keepLast: 4, digitsOnly: true }, '+1 (555) 123-4567', (o) => o === '+* (***) ***-4567'],
    ['phone', 'Pseudonymise', { format: 'phone' }, '+1 (555) 123-4567', (o) => /^\+\d \(\d{3}\) \d{3}-\d{4}$/.test(o as string)],
    ['cardNumber', 'Mask', { keepLast: 4, digitsOnly: true }, '4111-1111-1111-1111', (o) => o === '****-****-****-1111'],
    [
      'cardNumber',
      'Pseudonymise',
      { format: 'card' },
      '4111-1111-1111-1111',
      (o) => /^\d{4}-\d{4}-\d{4}-1111$/.test(o as string) && isLuhnValid(o as string) && o !== '4111-1111-1111-1111',
    ],
    ['cardNumber', 'Encrypt', {}, '4111111111111111', (o) => /^enc:v1:/.test(o as string)],
    ['ssn', 'Mask', { keepLast: 4, digitsOnly: true }, '123-45-6789', (o) => o === '***-**-6789'],
    ['ssn', 'Pseudonymise', { format: 'digits' }, '123-45-6789', (o) => /^\d{3}-\d{2}-\d{4}$/.test(o as string)],
    ['ssn', 'Encrypt', {}, '123-45-6789', (o) => /^enc:v1:/.test(o as string)],
    ['iban', 'Mask', { keepLast: 4, keepSeparators: false }, 'DE89370400440532013000', (o) => o === '******************3000'],
    ['iban', 'Pseudonymise', { format: 'iban' }, 'DE89 3704 0044 0532 0130 00', (o) => (o as string).startsWith('DE') && isValidIban(o as string)],
    ['iban', 'Encrypt', {}, 'DE89370400440532013000', (o) => /^enc:v1:/.test(o as string)],
    ['dateOfBirth', 'Anonymise', { method: 'generalise-date', to: 'year' }, '1985-04-12', (o) => o === '1985'],
    ['dateOfBirth', 'Pseudonymise', { format: 'date', maxDays: 365 }, '1985-04-12', (o) => /^\d{4}-\d{2}-\d{2}$/.test(o as string)],
    ['salary', 'Anonymise', { method: 'generalise-number', width: 10000 }, 54321, (o) => o === '50000-59999'],
    ['ipAddress', 'Pseudonymise', { format: 'ip' }, '192.0.2.10', (o) => /^\d{1,3}(\.\d{1,3}){3}$/.test(o as string) && o !== '192.0.2.10'],
    ['ipAddress', 'Pseudonymise', { format: 'ip' }, '2001:db8::1', (o) => /^[0-9a-f:]+$/.test(o as string) && o !== '2001:db8::1'],
  ];
  for (const [field, jobType, options, input, check] of cells) {
    it(`${field} / ${jobType}`, () => {
      const bound = bindTechnique(jobType, options);
      const out = bound.forward(input);
      assert.ok(check(out), `unexpected ${String(out)}`);
      if (bound.inverse) assert.equal(bound.inverse(out), input);
    });
  }
  it('ssn and salary / Restrict: removed', () => {
    assert.equal(techniqueFor('Restrict', {}).removesField, true);
  });
});

describe('date-text', () => {
  it('day numbers agree with Date.UTC and invert, 0001-01-01 to 9999-12-31', () => {
    for (let days = dayNumber({ year: 1, month: 1, day: 1 }); days <= dayNumber({ year: 9999, month: 12, day: 31 }); days += 997) {
      const date = civilDate(days);
      assert.equal(dayNumber(date), days);
      const viaDate = new Date(days * 86_400_000);
      assert.deepEqual([viaDate.getUTCFullYear(), viaDate.getUTCMonth() + 1, viaDate.getUTCDate()], [date.year, date.month, date.day]);
    }
  });

  it('rewrites a date in the form it was read', () => {
    const moved = { year: 2001, month: 2, day: 3 };
    const forms: [string, string][] = [
      ['1985-04-12', '2001-02-03'],
      ['1985-04-12T01:02:03.5-05:30', '2001-02-03T01:02:03.5-05:30'],
      ['1985/04/12', '2001/02/03'],
      ['12.04.1985', '03.02.2001'],
      ['12-04-1985', '03-02-2001'],
      ['19850412', '20010203'],
      ['0099-01-01', '2001-02-03'],
    ];
    for (const [input, expected] of forms) assert.equal(parseDateText(input, true)?.format(moved), expected, input);
    assert.equal(parseDateText('2023-02-29', true), undefined);
    assert.equal(parseDateText('1985-04-12T25:00', true), undefined);
    assert.equal(parseDateText('12/04/85', true), undefined);
  });
});
