// DESIGN §12 as revised by issue 12, for short values through the default `customer` manifest:
// Mask never returns a short value unchanged, Pseudonymise gives every value of every FPE format
// a reversible pseudonym (preserveStringLength keeps the refusal), hashes tell types apart.
// (The rest of the table is test/engine/default-manifests.test.ts.)

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();

function run(jobType: JobType, data: unknown, context: Partial<RequestContext> = {}): Record<string, unknown> {
  return engine.protectDocument(job('customer', jobType, context), structuredClone(data)).dataSet as Record<string, unknown>;
}

describe('manifest customer, short values (issue 12)', () => {
  it('Mask: {"phone":"0100","ssn":"6789","cardNumber":"1111"} no longer comes back unchanged', () => {
    assert.deepEqual(run('Mask', { phone: '0100', ssn: '6789', cardNumber: '1111' }), { phone: '**00', ssn: '**89', cardNumber: '**11' });
    assert.deepEqual(run('Mask', { name: 'J', email: 'a@b.io', iban: 'NO93' }), { name: '*', email: '***@b.io', iban: '**93' });
    // Long values keep the masks of the table.
    assert.deepEqual(run('Mask', { phone: '+1 415-555-0100', ssn: '123-45-6789' }), { phone: '+* ***-***-0100', ssn: '***-**-6789' });
  });

  it('Pseudonymise: short names, emails, phones and SSNs get pseudonyms; Reconstruct is exact', () => {
    const short = { name: 'Li Wu', email: 'john@example.com', phone: '0100', ssn: '6789', cardNumber: '4111 1111 1111 1111' };
    const out = run('Pseudonymise', short);
    for (const field of ['name', 'email', 'phone', 'ssn'] as const) assert.notEqual(out[field], short[field], field);
    assert.match(String(out.name), /^[A-Z][a-z]* [A-Z][a-z]*$/);
    assert.match(String(out.email), /^[a-z0-9]{1,5}@example\.com$/);
    assert.match(String(out.phone), /^\d{1,5}$/);
    assert.deepEqual(run('Reconstruct', out), short);
  });

  it('Pseudonymise: card values too short to keep their last 4 and Luhn digit get pseudonyms too', () => {
    for (const cardNumber of ['1111', '12345', '1 2345', '99999', '7', 1111]) {
      const out = run('Pseudonymise', { cardNumber });
      assert.notEqual(out.cardNumber, cardNumber, `${cardNumber} not left in clear`);
      assert.equal(typeof out.cardNumber, typeof cardNumber);
      assert.match(String(out.cardNumber), /^\d[\d ]*$/);
      assert.ok(String(out.cardNumber).replace(/\D/g, '').length <= 5, 'short stays short');
      assert.deepEqual(run('Reconstruct', out), { cardNumber });
    }
    assert.throws(
      () => run('Pseudonymise', { cardNumber: '1111' }, { preserveStringLength: true }),
      (err: unknown) => err instanceof DpgError && err.code === 'VALUE_NOT_PROTECTABLE' && err.errors?.[0]?.reason === 'VALUE_TOO_SHORT_FOR_FPE',
    );
  });

  it('preserveStringLength keeps the strict refusal of short values', () => {
    assert.throws(
      () => run('Pseudonymise', { name: 'Li Wu' }, { preserveStringLength: true }),
      (err: unknown) => err instanceof DpgError && err.code === 'VALUE_NOT_PROTECTABLE' && err.errors?.[0]?.reason === 'VALUE_TOO_SHORT_FOR_FPE',
    );
  });

  it('Anonymise: the keyed email hash tells a number from its text', () => {
    const a = run('Anonymise', { email: 42 });
    const b = run('Anonymise', { email: '42' });
    assert.notEqual(a.email, b.email);
    assert.match(String(b.email), /^[0-9a-f]{64}$/);
  });
});
