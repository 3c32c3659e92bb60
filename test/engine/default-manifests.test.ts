// Every cell of DESIGN §12: the default manifests `customer` and `card-masking` are a contract.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();

const customer = {
  name: 'Jane Doe',
  email: 'jane.doe@example.com',
  phone: '+1 415-555-0100',
  cardNumber: '4111 1111 1111 1111',
  ssn: '123-45-6789',
  iban: 'DE89370400440532013000',
  dateOfBirth: '1985-04-12',
  salary: 52000,
  note: 'left alone',
};

function run(jobType: JobType, data: unknown, context: Partial<RequestContext> = {}, manifest = 'customer'): Record<string, unknown> {
  const copy = structuredClone(data);
  return engine.protectDocument(job(manifest, jobType, context), copy).dataSet as Record<string, unknown>;
}

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function ibanValid(iban: string): boolean {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rem = 0;
  for (const ch of moved) {
    const v = /[0-9]/.test(ch) ? ch : String(ch.charCodeAt(0) - 55);
    for (const d of v) rem = (rem * 10 + Number(d)) % 97;
  }
  return rem === 1;
}

const shape = (s: string) => s.replace(/[A-Z]/g, 'A').replace(/[a-z]/g, 'a').replace(/[0-9]/g, '9');

describe('manifest customer (DESIGN §12)', () => {
  it('Mask: each field as the table says; fields without a Mask rule untouched', () => {
    const out = run('Mask', customer);
    assert.equal(out.name, 'J*** D**');
    assert.equal(out.email, 'j***@example.com');
    assert.equal(out.phone, '+* ***-***-0100');
    assert.equal(out.cardNumber, '**** **** **** 1111');
    assert.equal(out.ssn, '***-**-6789');
    assert.equal(out.iban, '******************3000');
    assert.equal(out.dateOfBirth, customer.dateOfBirth);
    assert.equal(out.salary, customer.salary);
    assert.equal(out.note, 'left alone');
  });

  it('Anonymise: nothing personal left in clear (REDACTED, keyed hashes, year of birth, salary range)', () => {
    const a = run('Anonymise', customer);
    const b = run('Anonymise', customer);
    for (const k of ['name', 'phone', 'ssn', 'iban'] as const) assert.equal(a[k], 'REDACTED', `${k} redacted`);
    for (const k of ['email', 'cardNumber'] as const) {
      assert.match(String(a[k]), /^[0-9a-f]{64}$/, `${k} is a keyed hash`);
      assert.equal(a[k], b[k], `${k}: keyed hash is stable`);
    }
    assert.notEqual(a.email, a.cardNumber);
    assert.equal(String(a.dateOfBirth), '1985');
    assert.equal(a.salary, '50000-59999');
    assert.equal(a.note, 'left alone');
    for (const k of ['name', 'email', 'phone', 'cardNumber', 'ssn', 'iban', 'dateOfBirth'] as const) {
      assert.notEqual(a[k], customer[k], `${k} not in clear`);
    }
  });

  it('Pseudonymise: realistic, valid formats; Reconstruct gives back the exact original', () => {
    const p = run('Pseudonymise', customer);
    assert.notEqual(p.name, customer.name);
    assert.equal(shape(String(p.name)), shape(customer.name), 'name keeps case, spaces and length');
    assert.match(String(p.email), /^[^@\s]+@example\.com$/);
    assert.notEqual(p.email, customer.email);
    assert.notEqual(p.phone, customer.phone);
    assert.equal(shape(String(p.phone)), shape(customer.phone), '+ and separators kept');
    const card = String(p.cardNumber);
    assert.notEqual(card, customer.cardNumber);
    assert.equal(card.length, customer.cardNumber.length);
    assert.ok(card.endsWith('1111'));
    assert.ok(luhnValid(card.replace(/\D/g, '')), 'card stays Luhn-valid');
    assert.equal(shape(String(p.ssn)), shape(customer.ssn));
    assert.notEqual(p.ssn, customer.ssn);
    const iban = String(p.iban);
    assert.ok(iban.startsWith('DE'));
    assert.notEqual(iban, customer.iban);
    assert.ok(ibanValid(iban), 'IBAN check digits valid');
    const dob = String(p.dateOfBirth);
    assert.match(dob, /^\d{4}-\d{2}-\d{2}$/);
    const shift = Math.abs(Date.parse(dob) - Date.parse(customer.dateOfBirth)) / 86_400_000;
    assert.ok(shift <= 365, `shift ${shift} days within ±365`);
    assert.equal(p.salary, customer.salary, 'salary is Keep for Pseudonymise');

    const back = run('Reconstruct', p);
    assert.deepEqual(back, customer);
  });

  it('Pseudonymise across borders removes the ssn instead', () => {
    const p = run('Pseudonymise', customer, { countryCode: 'US', dataOwningCountryCode: 'DE' });
    assert.ok(!('ssn' in p));
    const same = run('Pseudonymise', customer, { countryCode: 'DE', dataOwningCountryCode: 'DE' });
    assert.ok('ssn' in same);
    assert.notEqual(same.ssn, customer.ssn);
  });

  it('Encrypt: every personal field (phone and date of birth too) becomes a self-describing token; Decrypt restores', () => {
    const e = run('Encrypt', customer);
    for (const k of ['name', 'email', 'phone', 'cardNumber', 'ssn', 'iban', 'dateOfBirth'] as const) {
      assert.match(String(e[k]), /^enc:v1:/, `${k} encrypted`);
      assert.ok(!String(e[k]).includes(String(customer[k])));
    }
    assert.equal(e.salary, customer.salary, 'salary is Keep for Encrypt (Anonymise generalises it, Restrict removes it)');
    assert.deepEqual(run('Decrypt', e), customer);
  });

  it('Mask: dateOfBirth and salary are Keep (in clear on purpose), every other personal field masked', () => {
    const m = run('Mask', customer);
    for (const k of ['name', 'email', 'phone', 'cardNumber', 'ssn', 'iban'] as const) assert.notEqual(m[k], customer[k]);
    assert.equal(m.dateOfBirth, customer.dateOfBirth);
    assert.equal(m.salary, customer.salary);
  });

  it('loads without gap warnings (strict: true) and detects every kind in unclaimed fields', () => {
    const m = engine.manifest('customer')!;
    assert.deepEqual(m.warnings, []);
    assert.deepEqual([...m.detection!.byKind.keys()].sort(), ['card', 'email', 'iban', 'ipAddress', 'phone', 'ssn']);
  });

  it('unclaimed fields: a `cc` key and a `notes` text are protected by content under every job type', () => {
    const doc = {
      cc: '5500 0000 0000 0004',
      notes: 'card 4111 1111 1111 1111, call 415-555-0132, mail jonathan@example.org, from 192.0.2.10',
      orderId: '4111111111111112',
      invoice: '1234567812345670',
    };
    const m = run('Mask', doc);
    assert.equal(m.cc, '**** **** **** 0004');
    assert.equal(m.notes, 'card **** **** **** 1111, call ***-***-0132, mail j***@example.org, from ***.*.*.**');
    assert.equal(m.orderId, doc.orderId, 'a number failing Luhn is not a card');
    assert.equal(m.invoice, doc.invoice, 'a Luhn-valid number without a card issuer prefix is not a card');
    const a = run('Anonymise', doc);
    assert.match(String(a.cc), /^[0-9a-f]{64}$/);
    assert.match(String(a.notes), /^card [0-9a-f]{64}, call REDACTED, mail [0-9a-f]{64}, from REDACTED$/);
    const named = run('Anonymise', { cardNumber: '4111 1111 1111 1111' });
    assert.ok(String(a.notes).includes(String(named.cardNumber)), 'a detected card hashes like the cardNumber field');
    for (const [forward, reverse] of [['Pseudonymise', 'Reconstruct'], ['Encrypt', 'Decrypt']] as const) {
      const p = run(forward, doc);
      assert.notEqual(p.cc, doc.cc);
      assert.ok(!String(p.notes).includes('4111 1111 1111 1111') && !String(p.notes).includes('415-555-0132'), `${forward} notes`);
      assert.ok(String(p.notes).startsWith('card '), 'the words of the text are kept');
      assert.deepEqual(run(reverse, p), doc, `${reverse} restores`);
    }
    const r = run('Restrict', { notes: 'ssn 123-45-6789 on file' });
    assert.equal(r.notes, 'ssn  on file', 'Restrict removes a detected ssn span');
  });

  it('Restrict removes ssn and salary only', () => {
    const r = run('Restrict', customer);
    assert.ok(!('ssn' in r));
    assert.ok(!('salary' in r));
    const { ssn: _s, salary: _p, ...rest } = customer;
    assert.deepEqual(r, rest);
  });

  it('matches names case-insensitively, ignoring _ and -, at any depth', () => {
    const out = run('Mask', { customers: [{ CARD_NUMBER: '4111111111111111', 'card-number': '5500000000000004' }], nested: { deep: { cardnumber: '4000000000000002' } } });
    const c = (out.customers as Record<string, string>[])[0]!;
    assert.equal(c.CARD_NUMBER, '************1111');
    assert.equal(c['card-number'], '************0004');
    assert.equal(((out.nested as Record<string, Record<string, string>>).deep!).cardnumber, '************0002');
  });
});

describe('manifest card-masking (DESIGN §12)', () => {
  it('masks card numbers to the last four', () => {
    const out = run('Mask', { cardNumber: '4111-1111-1111-1234', name: 'Jane' }, {}, 'card-masking');
    assert.deepEqual(out, { cardNumber: '****-****-****-1234', name: 'Jane' });
  });

  for (const jobType of ['Anonymise', 'Pseudonymise', 'Restrict', 'Encrypt', 'Decrypt', 'Reconstruct'] as const) {
    it(`${jobType} fails with JOB_TYPE_NOT_DEFINED`, () => {
      assert.throws(
        () => run(jobType, { cardNumber: '4111111111111111' }, {}, 'card-masking'),
        (err: unknown) => err instanceof DpgError && err.code === 'JOB_TYPE_NOT_DEFINED' && err.status === 422,
      );
    });
  }
});
