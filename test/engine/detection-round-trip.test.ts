// Reversibility by construction (issue 17): texts of values of every kind next to random neighbours
// (digit groups, separators, punctuation, other values, start and end of text) go through
// Pseudonymise then Reconstruct, and Encrypt then Decrypt, in-process with the default `customer`
// manifest: both must give back the whole text exactly. Also: what each kind's pseudonym keeps
// (brand digits and Luhn, country code, NANP rules, IPv6 spelling), the card BIN option, and the
// cost of the worst value of each kind counted in cycle-walk steps.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_MANIFESTS, job, testEngine } from '../helpers/engine.ts';
import { KIND_ARBS, luhnDigit, textArb } from '../helpers/detected-values.ts';
import { walkSteps } from '../../src/techniques/pseudonymise/detected/walk-steps.ts';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { DETECT_KINDS } from '../../src/detect/kinds.ts';
import { DpgError } from '../../src/core/errors.ts';
import { rng } from '../helpers/rng.ts';
import { smallDomainPermute } from '../../src/techniques/pseudonymise/detected/small-domain.ts';

const engine = testEngine();
const scanner = new ContentScanner(DETECT_KINDS);

function notes(jobType: 'Pseudonymise' | 'Reconstruct' | 'Encrypt' | 'Decrypt', text: string): string {
  return (engine.protectDocument(job('customer', jobType), { notes: text }).dataSet as { notes: string }).notes;
}

function pseudonymOf(value: string): string {
  const out = notes('Pseudonymise', `x ${value} y`);
  return out.slice(2, -2);
}

describe('Pseudonymise then Reconstruct, Encrypt then Decrypt: the identity on whole texts', () => {
  it('random values of every kind among random neighbours (2,000 texts)', () => {
    let spans = 0;
    let changed = 0;
    fc.assert(
      fc.property(textArb, (text) => {
        const found = scanner.scan(text).length;
        spans += found;
        const p = notes('Pseudonymise', text);
        if (found > 0 && p !== text) changed++;
        assert.equal(notes('Reconstruct', p), text);
        assert.equal(notes('Decrypt', notes('Encrypt', text)), text);
      }),
      { numRuns: 2000, seed: 17 },
    );
    assert.ok(spans > 3000, `${spans} detected values went through`);
    assert.ok(changed > 1500, `${changed} texts changed`);
  });

  it('the reported cases: a card then a CVV, a phone then 24/7, national phones then a digit group', () => {
    for (const text of ['card 4502 3251 8264 2294 123 exp', 'call 415-555-0132 24/7', 'Tel: 020 7946 0958 12 45', '0044 20 7946 0958 1234', '+44 20 7946 0958 7']) {
      const p = notes('Pseudonymise', text);
      assert.notEqual(p, text);
      assert.equal(scanner.scan(p).length, scanner.scan(text).length, p);
      assert.equal(notes('Reconstruct', p), text);
    }
  });

  it('values joined by `-` or by nothing encrypt to glued tokens; Decrypt splits them (random nonces: 300 runs)', () => {
    for (const text of ['010 8900 0830-DE43569218006992346303-711 52 1044', '001-01-0001(200) 200-0000', '::1-001-01-0001', '4111 1111 1111 1111-0000']) {
      for (let i = 0; i < 75; i++) assert.equal(notes('Decrypt', notes('Encrypt', text)), text);
    }
  });

  it('every card value with a CVV-like group after it (each brand and length, 2,000 values)', () => {
    fc.assert(
      fc.property(KIND_ARBS.card, fc.integer({ min: 0, max: 9999 }), (card, cvv) => {
        const text = `${card} ${cvv}`;
        assert.equal(notes('Reconstruct', notes('Pseudonymise', text)), text);
      }),
      { numRuns: 2000, seed: 4 },
    );
  });
});

describe('pseudonyms of detected values', () => {
  it('IPv6 comes back in its own spelling: ::1, upper case, IPv4-mapped, leading zeros, zero compression', () => {
    for (const ip of ['::1', '2001:DB8::1', '::ffff:192.0.2.1', '2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8:0:0::1', 'FE80::A', 'fe80::1']) {
      const text = `from ${ip} at noon`;
      const p = notes('Pseudonymise', text);
      assert.equal(notes('Reconstruct', p), text, ip);
      const pseudonym = p.slice(5, -8);
      // Same layout: colons, padding and an IPv4 tail where they were, the same case.
      const layout = (a: string) => a.replace(/\d+\.\d+\.\d+\.\d+$/, 'v4').replace(/(^|:)0(?=[0-9a-fA-F])/g, '$1z').replace(/[0-9a-fA-F]/g, 'h');
      assert.equal(layout(pseudonym), layout(ip), ip);
      if (/[A-F]/.test(ip)) assert.match(pseudonym, /[A-F]/);
      assert.doesNotMatch(pseudonym, /[a-f]/.test(ip) ? /[A-F]/ : /[a-f]/);
    }
  });

  it('phones keep their country code; NANP numbers keep valid area codes and exchanges (2,000 values)', () => {
    let nanp = 0;
    fc.assert(
      fc.property(KIND_ARBS.phone, (phone) => {
        const p = pseudonymOf(phone);
        assert.equal(p.replace(/\d/g, 'd'), phone.replace(/\d/g, 'd'));
        const digits = p.replace(/\D/g, '');
        const original = phone.replace(/\D/g, '');
        if (phone.startsWith('+') || phone.startsWith('00')) {
          const cc = phone.replace(/^(\+|00)/, '').split(' ')[0];
          assert.ok(p.startsWith(phone.slice(0, phone.indexOf(cc) + cc.length)), `${phone} -> ${p}`);
        }
        const ten = original.length === 10 && !original.startsWith('0') ? digits : original.length === 11 && original.startsWith('1') ? digits.slice(1) : undefined;
        if (ten !== undefined && !phone.startsWith('00')) {
          nanp++;
          assert.match(ten, /^[2-9][0-8]\d[2-9]\d{6}$/, `${phone} -> ${p}`);
          assert.ok(ten.slice(1, 3) !== '11' && ten.slice(4, 6) !== '11', `${phone} -> ${p}`);
        }
        if (original.startsWith('0') && !original.startsWith('00')) assert.equal(digits.slice(0, 2), original.slice(0, 2));
      }),
      { numRuns: 2000, seed: 5 },
    );
    assert.ok(nanp > 500, `${nanp} NANP numbers`);
  });

  it('cards keep their brand digits and the last four, pass Luhn, and stay cards', () => {
    fc.assert(
      fc.property(KIND_ARBS.card, (card) => {
        const p = pseudonymOf(card);
        assert.equal(scanner.wholeKind(p), 'card', `${card} -> ${p}`);
        assert.equal(p[0], card[0]);
        // The last four stay where six digits remain free besides them, the brand's and Luhn's.
        if (card.replace(/\D/g, '').length >= 16) assert.equal(p.slice(-4), card.slice(-4), `${card} -> ${p}`);
      }),
      { numRuns: 1000, seed: 6 },
    );
  });

  it('keepBin: the first six digits are kept (named field and detected), off by default; invalid settings refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-keepbin-'));
    const customer = readFileSync(join(DEFAULT_MANIFESTS, 'customer.yaml'), 'utf8');
    writeFileSync(join(dir, 'customer.yaml'), customer.replace('Pseudonymise: { format: card }', 'Pseudonymise: { format: card, keepBin: true }'));
    const binEngine = testEngine(dir);
    const card = '4539 1488 0343 6467';
    const doc = { cardNumber: card, notes: `paid with ${card} today` };
    const out = binEngine.protectDocument(job('customer', 'Pseudonymise'), structuredClone(doc)).dataSet as typeof doc;
    assert.ok(out.cardNumber.startsWith('4539 14') && out.cardNumber !== card, out.cardNumber);
    assert.ok(out.notes.startsWith('paid with 4539 14') && !out.notes.includes(card), out.notes);
    assert.deepEqual(binEngine.protectDocument(job('customer', 'Reconstruct'), structuredClone(out)).dataSet, doc);
    // Off by default: the default manifest keeps only the brand digit here.
    const plain = engine.protectDocument(job('customer', 'Pseudonymise'), structuredClone(doc)).dataSet as typeof doc;
    assert.ok(!plain.notes.startsWith('paid with 4539 14'), plain.notes);
    for (const bad of ['keepBin: yes', 'keepBin: true, keepFirst: 2']) {
      writeFileSync(join(dir, 'customer.yaml'), customer.replace('Pseudonymise: { format: card }', `Pseudonymise: { format: card, ${bad} }`));
      assert.throws(() => testEngine(dir), /keepBin/);
    }
  });
});

describe('bounded cost: cycle-walk steps of the worst value of each kind', () => {
  /** Steps taken pseudonymising and reconstructing `count` copies of `value`, one per line. */
  function stepsFor(value: string, count: number): number {
    const text = Array.from({ length: count }, () => value).join('\n');
    const before = walkSteps.count;
    const p = notes('Pseudonymise', text);
    assert.equal(notes('Reconstruct', p), text);
    return walkSteps.count - before;
  }

  it('12-digit Maestro numbers (the issue: 1,000 failed steps each) take none', () => {
    const body = '50180000000';
    const maestro = body + luhnDigit(body);
    assert.equal(scanner.wholeKind(maestro), 'card');
    assert.equal(stepsFor(maestro, 1000), 0);
  });

  it('per kind, 300 values of its worst shape: steps within the documented expectation', () => {
    const digits = (r: () => number, n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('');
    const hex = (r: () => number) => (1 + Math.floor(r() * 0xfff)).toString(16);
    const worst: [string, (r: () => number) => string, number][] = [
      // [shape, generator, documented expected extra steps per value and direction]
      ['card, 19-digit Maestro', (r) => { const b = `5018${digits(r, 14)}`; return b + luhnDigit(b); }, 0],
      ['ssn', (r) => `${100 + Math.floor(r() * 500)}-${10 + Math.floor(r() * 89)}-${1000 + Math.floor(r() * 8999)}`, 0.21],
      // Mostly area codes no NANP region's plan holds: ranked among NANP numbers, walked past the placed ones.
      ['phone, NANP', (r) => `(${2 + Math.floor(r() * 8)}${Math.floor(r() * 9)}0) ${2 + Math.floor(r() * 8)}0${Math.floor(r() * 10)}-${digits(r, 4)}`, 1.2],
      ['phone, 3-digit country code and 5 national digits', (r) => `+353 ${1 + Math.floor(r() * 8)} ${digits(r, 4)}`, 0],
      ['ipv6, upper case, five hex digits', (r) => `${(10 + Math.floor(r() * 6)).toString(16).toUpperCase()}::${1 + Math.floor(r() * 9)}${digits(r, 3)}`, 0.18],
      ['ipv6, eight unpadded groups', (r) => Array.from({ length: 8 }, () => hex(r)).join(':'), 0.68],
    ];
    for (const [shape, make, expected] of worst) {
      const r = rng(99);
      const values = Array.from({ length: 300 }, () => make(r));
      for (const v of values.slice(0, 5)) assert.equal(scanner.scan(`x ${v} y`).length, 1, `${shape}: ${v} is detected`);
      const steps = stepsFor(values.join('\n'), 1);
      // Pseudonymise and Reconstruct: 2 x 300 values; 1.5x slack over the expectation, and 10 for luck.
      assert.ok(steps <= 1.5 * expected * 600 + 10, `${shape}: ${steps} steps for 300 values (expected about ${expected * 600})`);
    }
  });
});

describe('the small-domain shuffle (five national digits of a phone)', () => {
  it('is a permutation of [0, 10^5), its inverse undoes it, and it depends on key and tweak', () => {
    const key = new Uint8Array(32).fill(5);
    const tweak = Uint8Array.of(1, 2, 3);
    const seen = new Uint8Array(100_000);
    let fixed = 0;
    for (let x = 0; x < 100_000; x++) {
      const y = smallDomainPermute(key, tweak, 100_000, x, false);
      assert.ok(y >= 0 && y < 100_000 && seen[y] === 0);
      seen[y] = 1;
      if (y === x) fixed++;
      assert.equal(smallDomainPermute(key, tweak, 100_000, y, true), x);
    }
    assert.ok(fixed < 10, `${fixed} fixed points`);
    const other = [smallDomainPermute(new Uint8Array(32).fill(6), tweak, 100_000, 12345, false), smallDomainPermute(key, Uint8Array.of(9), 100_000, 12345, false)];
    assert.ok(other.every((y) => y !== smallDomainPermute(key, tweak, 100_000, 12345, false)));
  });
});

describe('fail closed', () => {
  it('a value that cannot be told apart from its neighbours fails with a reason, never silently', () => {
    // Every Pseudonymise either round-trips or fails with VALUE_NOT_PROTECTABLE and a reason.
    const text = 'IDs 4111 1111 1111 1111 1 2 3 4111 1111 1111 1111';
    try {
      const p = notes('Pseudonymise', text);
      assert.equal(notes('Reconstruct', p), text);
    } catch (err) {
      assert.ok(err instanceof DpgError && err.code === 'VALUE_NOT_PROTECTABLE', String(err));
      assert.match(err.errors![0].reason, /PSEUDONYM_/);
    }
  });
});
