// The pseudonym schemes of detected values (src/techniques/pseudonymise/detected/) on their own:
// each is a permutation (the inverse undoes the forward step) that keeps what docs/detection.md
// says it keeps, including writings a detector may accept later (national phone formats, CIDR
// suffixes, zone ids), so a widened detector never meets a value its scheme cannot take.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FF1 } from '../../src/crypto/ff1.ts';
import { PhoneScheme } from '../../src/techniques/pseudonymise/detected/phone.ts';
import { CardScheme, brandDigits } from '../../src/techniques/pseudonymise/detected/card.ts';
import { IpScheme } from '../../src/techniques/pseudonymise/detected/ip.ts';
import { SsnScheme } from '../../src/techniques/pseudonymise/detected/ssn.ts';
import { DetectedTweaks } from '../../src/techniques/pseudonymise/detected/digit-text.ts';
import { isCardDigits } from '../../src/detect/card.ts';

const key = new Uint8Array(32).fill(9);
const tweaks = new DetectedTweaks(Uint8Array.of(1, 2, 3));
const phone = new PhoneScheme(new FF1(key, 10), new FF1(key, 2), tweaks, key);
const card = new CardScheme(new FF1(key, 10), tweaks, { keepFirst: 0, keepLast: 4 });
const ip = new IpScheme(new FF1(key, 256), new FF1(key, 16), tweaks, Uint8Array.of(1, 2, 3, 0, 105, 112, 118, 52));
const ssn = new SsnScheme(new FF1(key, 2), tweaks);

function roundTrip(scheme: { step(v: string, d: boolean): string }, value: string, sameLength = true): string {
  const out = scheme.step(value, false);
  assert.equal(scheme.step(out, true), value, value);
  if (sameLength) assert.equal(out.length, value.length);
  return out;
}

describe('detected-value schemes', () => {
  it('phones: international, NANP, national writings (trunk 0, 8, bracketed area codes): country code and layout kept', () => {
    const cases: [string, string][] = [
      ['+44 20 7946 0958', '+44 2'],
      ['0044 20 7946 0958', '0044 2'],
      ['+1 (415) 555-0132', '+1 ('],
      ['+1 123 456 7890', '+1 1'],
      ['+7 912 688 42 55', '+7 9'],
      ['+353 1 2345', '+353 '],
      ['020 7946 0958', '02'],
      ['8 (912) 688-42-55', '8 (9'],
      ['(11) 96852-3568', '(1'],
      ['02 727 65 88', '02'],
      ['123 456 7890', '1'],
      ['(415) 555-0132', '('],
      ['1-415-555-0132', '1-'],
    ];
    for (const [value, kept] of cases) {
      const out = roundTrip(phone, value);
      assert.ok(out.startsWith(kept), `${value} -> ${out}`);
      assert.equal(out.replace(/\d/g, 'd'), value.replace(/\d/g, 'd'));
      const ten = value.replace(/\D/g, '').replace(/^1(?=\d{10}$)/, '');
      if (ten.length === 10 && /^[2-9][0-8]\d[2-9]\d\d/.test(ten) && !value.startsWith('0')) {
        assert.match(out.replace(/\D/g, '').replace(/^1(?=\d{10}$)/, ''), /^[2-9][0-8]\d[2-9]\d{6}$/, `${value} -> ${out}`);
      }
    }
  });

  it('cards: brand digits kept, Luhn valid, every brand prefix and length', () => {
    assert.equal(brandDigits(411111, 16), 1);
    assert.equal(brandDigits(501800, 12), 4);
    assert.equal(brandDigits(222100, 16), 4);
    for (const value of ['4111 1111 1111 1111', '5018 0000 0000 09', '378282246310005', '3530111333300000', '2221000000000009']) {
      const digits = value.replace(/\D/g, '');
      if (!isCardDigits(digits)) continue;
      const out = roundTrip(card, value);
      assert.ok(isCardDigits(out.replace(/\D/g, '')), `${value} -> ${out}`);
    }
  });

  it('IP addresses: IPv4, IPv6 spellings, CIDR suffixes and zone ids kept as written', () => {
    for (const value of ['192.0.2.1', '10.0.0.0/8', '2001:DB8::1', '::ffff:192.0.2.1', 'fe80::1%eth0', '2001:db8::/32', '2001:0db8:0000::0001', '::1']) {
      const out = roundTrip(ip, value, false);
      for (const suffix of ['/8', '%eth0', '/32']) if (value.endsWith(suffix)) assert.ok(out.endsWith(suffix), out);
    }
    assert.equal(ip.step('::1', false), '::1', 'too few hex digits: kept');
    assert.throws(() => ip.step('2001:Db8::1', false), /IPV6_MIXED_CASE/);
  });

  it('SSNs: inside the SSA ranges, separators kept', () => {
    for (const value of ['123-45-6789', '001 01 0001', '899-99-9999']) {
      const out = roundTrip(ssn, value);
      const [a, g, s] = out.split(/[- ]/).map(Number);
      assert.ok(a >= 1 && a <= 899 && a !== 666 && g >= 1 && s >= 1, out);
    }
  });
});
