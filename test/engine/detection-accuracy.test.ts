// Issue 17 through the engine: values after a key and a colon, CIDR suffixes and zone ids, bare NANP
// numbers, dashed IBANs, IDN emails and SSNs after an SSN word are protected, and Pseudonymise ->
// Reconstruct and Encrypt -> Decrypt give the text back exactly.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testEngine, job } from '../helpers/engine.ts';
import type { JobType } from '../../src/core/types.ts';

const engine = testEngine();
const doc = (jobType: JobType, data: unknown) => engine.protectDocument(job('customer', jobType, {}, 'JSON'), structuredClone(data)).dataSet as { notes: string };

const TEXT =
  'Card:4111111111111111 Phone:415-555-0132 Code:123-45-6789 Node:10.0.0.1 case:DE89370400440532013000; ' +
  'net 192.168.1.0/24, gw fe80::1%eth0/64, 2001:db8::/32; call 4155550132; IBAN DE89-3704-0044-0532-0130-00; ' +
  'mail jane@bücher.de; SSN: 078051121';

describe('detection accuracy through the engine (issue 17)', () => {
  it('Mask leaves none of them in clear, and keeps prefix lengths and zone ids as written', () => {
    const out = doc('Mask', { notes: TEXT }).notes;
    for (const value of ['4111111111111111', '415-555-0132', '123-45-6789', '10.0.0.1', 'DE89370400440532013000', '192.168.1.0', 'fe80::1', '2001:db8::', '4155550132', 'DE89-3704', 'jane@', '078051121']) {
      assert.ok(!out.includes(value), `${value} in ${out}`);
    }
    assert.ok(out.includes('Card:') && out.includes('/**,') && out.includes('%****/**'), out);
  });

  it('Pseudonymise -> Reconstruct and Encrypt -> Decrypt are exact', () => {
    for (const [forward, reverse] of [['Pseudonymise', 'Reconstruct'], ['Encrypt', 'Decrypt']] as const) {
      const out = doc(forward, { notes: TEXT });
      assert.ok(!out.notes.includes('4111111111111111') && !out.notes.includes('192.168.1.0/24'), out.notes);
      assert.equal(doc(reverse, out).notes, TEXT, forward);
    }
  });
});
