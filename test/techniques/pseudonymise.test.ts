// Pseudonymise formats (FF1 and date shift): table cases, then properties over thousands of
// generated values: determinism, exact reversibility, shape and validity kept, unlinkable scopes,
// batch = one by one, and the strict short-value rule with its reversible token fallback (the
// default short-value scheme has its own file, fpe-short.test.ts).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { techniqueFor } from '../../src/techniques/registry.ts';
import { isLuhnValid } from '../../src/techniques/pseudonymise/card.ts';
import { isValidIban } from '../../src/techniques/pseudonymise/iban.ts';
import { TechniqueOptionError, ValueError, type BoundTechnique } from '../../src/techniques/technique.ts';
import type { Scalar } from '../../src/core/types.ts';

const RUNS = { numRuns: 1000, seed: 20240611 };
const scopeA = () => ctxOf(fakeKeys('tp=1;du=1'));
const scopeB = () => ctxOf(fakeKeys('tp=2;du=1'));

/** digit → 9, lower → a, upper → A, anything else itself: what a format must keep. */
function shape(s: string, letters = true): string {
  return s.replace(/[0-9]/g, '9').replace(/[a-z]/g, (c) => (letters ? 'a' : c)).replace(/[A-Z]/g, (c) => (letters ? 'A' : c));
}

/** The contract every FF1 format shares, checked over generated values. */
function checkFormat(options: Record<string, unknown>, values: fc.Arbitrary<Scalar>, keep: (input: Scalar, output: Scalar) => void): void {
  const a = bindTechnique('Pseudonymise', options, scopeA());
  const again = bindTechnique('Pseudonymise', options, scopeA());
  const b = bindTechnique('Pseudonymise', options, scopeB());
  let same = 0;
  let total = 0;
  fc.assert(
    fc.property(values, (value) => {
      const out = a.forward(value);
      assert.equal(again.forward(value), out, 'deterministic');
      assert.ok(Object.is(a.inverse!(out), value), 'reversible');
      assert.equal(typeof out, typeof value, 'JSON type kept');
      keep(value, out);
      total++;
      if (b.forward(value) === out) same++;
    }),
    RUNS,
  );
  // Another partner's pseudonyms are unrelated: equal only by the chance of a tiny domain.
  assert.ok(same <= total / 100, `scopes linkable: ${same}/${total}`);
}

function checkBatch(options: Record<string, unknown>, values: Scalar[]): void {
  const bound = bindTechnique('Pseudonymise', options, scopeA());
  const batch = bound.forwardBatch!(values);
  const single = values.map((v) => {
    try {
      return bound.forward(v);
    } catch (err) {
      return err as ValueError;
    }
  });
  assert.deepEqual(
    batch.map((r) => (r instanceof ValueError ? `!${r.reason}` : r)),
    single.map((r) => (r instanceof ValueError ? `!${r.reason}` : r)),
  );
  const back = bound.inverseBatch!(batch.filter((r): r is Scalar => !(r instanceof ValueError)));
  assert.deepEqual(back, values.filter((_, i) => !(batch[i] instanceof ValueError)));
}

const digitChar = fc.constantFrom(...'0123456789');
const sepChar = fc.constantFrom(' ', '-', '.', '/', '(', ')', '+');
const digitText = (min: number, max: number) => fc.array(digitChar, { minLength: min, maxLength: max }).map((d) => d.join(''));

function withLuhn(body: string): string {
  for (let check = 0; check < 10; check++) if (isLuhnValid(body + check)) return body + check;
  throw new Error('unreachable');
}

function withIbanCheck(country: string, bban: string): string {
  for (let check = 2; check <= 98; check++) {
    const iban = `${country}${String(check).padStart(2, '0')}${bban}`;
    if (isValidIban(iban)) return iban;
  }
  throw new Error('unreachable');
}

describe('Pseudonymise table', () => {
  const cases: [Record<string, unknown>, Scalar, RegExp | ((out: Scalar) => boolean)][] = [
    [{ format: 'digits' }, '123-45-6789', /^\d{3}-\d{2}-\d{4}$/],
    [{ format: 'digits' }, 'AB 123456 C', /^AB \d{6} C$/],
    [{ format: 'digits', keepLast: 4 }, '123-456-7890', /^\d{3}-\d{3}-7890$/],
    [{ format: 'digits' }, 123456789, (o) => typeof o === 'number' && String(o).length === 9],
    [{ format: 'digits' }, 1234.5678, (o) => typeof o === 'number' && /^\d{4}\.\d{4}$/.test(String(o))],
    [{ format: 'digits' }, -0.123456, (o) => typeof o === 'number' && /^-\d\.\d{6}$/.test(String(o))],
    [{ format: 'phone' }, '+44 20 7946 0958', /^\+\d{2} \d{2} \d{4} \d{4}$/],
    [{ format: 'phone', keepFirst: 2 }, '+44 20 7946 0958', /^\+44 \d{2} \d{4} \d{4}$/],
    [{ format: 'card' }, '4111 1111 1111 1111', (o) => /^\d{4} \d{4} \d{4} 1111$/.test(o as string) && isLuhnValid(o as string)],
    [{ format: 'card', keepFirst: 4 }, '4111111111111111', (o) => /^4111\d{8}1111$/.test(o as string) && isLuhnValid(o as string)],
    [{ format: 'card' }, 378282246310005, (o) => typeof o === 'number' && String(o).length === 15 && isLuhnValid(String(o))],
    [{ format: 'text' }, 'Order AB-12345 x', (o) => shape(o as string) === shape('Order AB-12345 x')],
    [{ format: 'name' }, 'John Smith', /^[A-Z][a-z]{3} [A-Z][a-z]{4}$/],
    [{ format: 'name' }, "O'Brien-Smith", /^[A-Z]'[A-Z][a-z]{4}-[A-Z][a-z]{4}$/],
    [{ format: 'email' }, 'john.smith+news@example.com', /^[a-z]{4}\.[a-z]{5}\+[a-z]{4}@example\.com$/],
    [{ format: 'iban' }, 'DE89 3704 0044 0532 0130 00', (o) => /^DE\d{2}( \d{4}){4} \d{2}$/.test(o as string) && isValidIban(o as string)],
    [{ format: 'iban' }, 'GB82WEST12345698765432', (o) => /^GB\d{2}[A-Z]{4}\d{14}$/.test(o as string) && isValidIban(o as string)],
    [{ format: 'date' }, '1985-04-12', /^\d{4}-\d{2}-\d{2}$/],
    [{ format: 'date' }, '12/04/1985', /^\d{2}\/\d{2}\/\d{4}$/],
    [{ format: 'date' }, '1985-04-12T10:30:00.000Z', /^\d{4}-\d{2}-\d{2}T10:30:00\.000Z$/],
    [{ format: 'date' }, '19850412', /^\d{8}$/],
  ];
  for (const [options, input, check] of cases) {
    it(`${options.format} ${JSON.stringify(input)}`, () => {
      const bound = bindTechnique('Pseudonymise', options);
      const out = bound.forward(input);
      assert.notEqual(out, input);
      assert.ok(typeof check === 'function' ? check(out) : check.test(out as string), `unexpected shape: ${String(out)}`);
      assert.ok(Object.is(bound.inverse!(out), input));
    });
  }

  const failures: [Record<string, unknown>, Scalar, string][] = [
    [{ format: 'digits', shortValues: 'reject' }, '12345', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'digits', keepLast: 4, shortValues: 'reject' }, '123-45-6789', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'digits' }, null, 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'digits' }, true, 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'digits' }, 1e21, 'UNSUPPORTED_NUMBER'],
    [{ format: 'digits' }, 1234567890123456, 'UNSUPPORTED_NUMBER'],
    [{ format: 'digits' }, 1e-7, 'UNSUPPORTED_NUMBER'],
    [{ format: 'card', shortValues: 'reject' }, '1111 1111', 'VALUE_TOO_SHORT_FOR_FPE'],
    // BIN and last 4 kept leave 6 digits, one of them the Luhn digit: 10^5 < 10^6.
    [{ format: 'card', keepFirst: 6, shortValues: 'reject' }, '4111111111111111', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'card' }, 1234567890.5, 'UNSUPPORTED_NUMBER'],
    [{ format: 'name', shortValues: 'reject' }, 'Li Wu', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'name' }, 12345678, 'UNSUPPORTED_VALUE_TYPE'],
    [{ format: 'text', shortValues: 'reject' }, 'ab-12', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'text' }, 'x'.repeat(5000), 'VALUE_TOO_LONG_FOR_FPE'],
    [{ format: 'email' }, 'no-at-sign', 'NOT_AN_EMAIL'],
    [{ format: 'email' }, '@example.com', 'NOT_AN_EMAIL'],
    [{ format: 'email', shortValues: 'reject' }, 'j.doe@example.com', 'VALUE_TOO_SHORT_FOR_FPE'],
    [{ format: 'iban' }, 'DE88 3704 0044 0532 0130 00', 'INVALID_IBAN'],
    // Dashes between print groups are accepted since issue 17 (detection reads them); other marks are not.
    [{ format: 'iban' }, 'DE89_3704_0044_0532_0130_00', 'INVALID_IBAN'],
    [{ format: 'iban' }, '-DE89-3704-0044-0532-0130-00', 'INVALID_IBAN'],
    // 99 ≡ 02, 01 ≡ 98, 00 ≡ 97 (mod 97): they pass the checksum, but ISO 13616 issues only 02-98.
    [{ format: 'iban' }, 'GB99WEST12345698760082', 'INVALID_IBAN'],
    [{ format: 'iban' }, 'GB01WEST12345698760003', 'INVALID_IBAN'],
    [{ format: 'iban' }, 'GB00WEST12345698760021', 'INVALID_IBAN'],
    [{ format: 'date' }, 'tomorrow', 'NOT_A_DATE'],
    [{ format: 'date' }, '1/2/1985', 'UNSUPPORTED_DATE_FORMAT'],
    [{ format: 'date' }, 19850412, 'NOT_A_DATE'],
    [{ format: 'date', maxDays: 30 }, '0001-01-01', 'DATE_OUT_OF_RANGE'],
  ];
  for (const [options, input, reason] of failures) {
    it(`${options.format} ${JSON.stringify(input).slice(0, 40)} → ${reason}`, () => {
      const bound = bindTechnique('Pseudonymise', options);
      const fwd = reasonOf(() => bound.forward(input));
      // date out of range: depends on the shift's sign; either direction must refuse, never wrap.
      if (reason === 'DATE_OUT_OF_RANGE') {
        assert.ok(fwd === reason || reasonOf(() => bound.inverse!(input)) === reason);
      } else {
        assert.equal(fwd, reason);
      }
    });
  }

  it('an IBAN written in fours with dashes keeps its dashes and comes back exactly (issue 17)', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'iban' });
    const value = 'DE89-3704-0044-0532-0130-00';
    const out = bound.forward(value) as string;
    assert.notEqual(out, value);
    assert.match(out, /^DE\d\d-\d{4}-\d{4}-\d{4}-\d{4}-\d\d$/);
    assert.equal(bound.inverse!(out), value);
  });

  it('IBAN check digits 02 and 98 are accepted; their out-of-range twins are not', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'iban' });
    for (const [valid, twin] of [
      ['GB02WEST12345698760082', 'GB99WEST12345698760082'],
      ['GB98WEST12345698760003', 'GB01WEST12345698760003'],
      ['GB97WEST12345698760021', 'GB00WEST12345698760021'],
    ]) {
      assert.ok(isValidIban(valid) && !isValidIban(twin));
      assert.equal(bound.inverse!(bound.forward(valid)), valid);
    }
  });

  it('shortValues: encrypt turns too-small values into reversible SIV tokens', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'digits', shortValues: 'encrypt' });
    for (const value of ['12345', 12345, null, true, false, '']) {
      const token = bound.forward(value) as string;
      assert.match(token, /^enc:v1:siv:test-key:1:[A-Za-z0-9_-]+$/);
      assert.equal(bound.forward(value), token, 'deterministic');
      assert.ok(Object.is(bound.inverse!(token), value));
    }
    // Malformed data is still an error, not a token.
    const iban = bindTechnique('Pseudonymise', { format: 'iban', shortValues: 'encrypt' });
    assert.equal(reasonOf(() => iban.forward('DE00 1234')), 'INVALID_IBAN');
    assert.equal(reasonOf(() => bound.inverse!('enc:v1:siv:test-key:1:AAAAAAAAAAAAAAAAAAAAAAAA')), 'INVALID_CIPHERTEXT');
  });

  it('a value that looks like a fallback token still round-trips', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'text', shortValues: 'encrypt' });
    const value = 'enc:v1:siv:abc:1:QUJDREVGR0g';
    assert.ok(Object.is(bound.inverse!(bound.forward(value)), value));
  });

  it('Reconstruct without the fallback never treats tokens specially', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'text' });
    const value = 'enc:v1:siv:abc:1:QUJDREVGR0g';
    assert.equal(bound.inverse!(bound.forward(value)), value);
  });

  it('date shift moves every date by the same non-zero offset within maxDays', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'date', maxDays: 10 });
    const d1 = Date.parse(bound.forward('2020-01-01') as string);
    const d2 = Date.parse(bound.forward('2020-06-15') as string);
    const shift1 = (d1 - Date.parse('2020-01-01')) / 86_400_000;
    const shift2 = (d2 - Date.parse('2020-06-15')) / 86_400_000;
    assert.equal(shift1, shift2);
    assert.ok(shift1 !== 0 && Math.abs(shift1) <= 10);
  });
});

describe('date shift per value', () => {
  const days = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 86_400_000;

  it('moves each date on its own, within maxDays, and back exactly (property)', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'date', maxDays: 30, shift: 'per-value' });
    const shifts = new Set<number>();
    fc.assert(
      fc.property(fc.date({ min: new Date('1901-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }), (d) => {
        const input = d.toISOString().slice(0, 10);
        const out = bound.forward(input) as string;
        assert.match(out, /^\d{4}-\d{2}-\d{2}$/);
        assert.ok(Math.abs(days(input, out)) <= 30);
        assert.equal(bound.inverse!(out), input);
        shifts.add(days(input, out));
      }),
      { numRuns: 2000, seed: 31 },
    );
    assert.ok(shifts.size > 40, `one known pair does not give away the others (${shifts.size} distinct shifts)`);
  });

  it('is a permutation of every day of a window, and depends on the scope', () => {
    const a = bindTechnique('Pseudonymise', { format: 'date', maxDays: 365, shift: 'per-value' }, ctxOf(fakeKeys('tp=1;du=1')));
    const b = bindTechnique('Pseudonymise', { format: 'date', maxDays: 365, shift: 'per-value' }, ctxOf(fakeKeys('tp=2;du=1')));
    const inputs: string[] = [];
    for (let t = Date.parse('1984-01-01T00:00:00Z'); t < Date.parse('1987-01-01T00:00:00Z'); t += 86_400_000) inputs.push(new Date(t).toISOString().slice(0, 10));
    const outs = inputs.map((d) => a.forward(d));
    assert.equal(new Set(outs).size, inputs.length);
    assert.ok(inputs.filter((d, i) => b.forward(d) === outs[i]).length < inputs.length / 50);
  });

  it('explain and options', () => {
    assert.throws(() => techniqueFor('Pseudonymise', { format: 'date', shift: 'random' }).validate({ format: 'date', shift: 'random' }), TechniqueOptionError);
  });
});

describe('Pseudonymise properties', () => {
  it('digits: digits only change, separators and letters stay', () => {
    const values = fc
      .array(fc.oneof({ weight: 4, arbitrary: digitChar }, sepChar, fc.constantFrom('A', 'x')), { minLength: 6, maxLength: 30 })
      .map((c) => c.join(''))
      .filter((s) => (s.match(/\d/g)?.length ?? 0) >= 6);
    checkFormat({ format: 'digits' }, values, (input, out) => assert.equal(shape(out as string, false), shape(input as string, false)));
  });

  it('digits: JSON numbers stay numbers with the same digit layout', () => {
    const values = fc
      .tuple(fc.integer({ min: 100_000, max: 999_999_999_999_999 }), fc.integer({ min: 0, max: 9 }), fc.boolean())
      .map(([n, scale, negative]) => (negative ? -1 : 1) * (n / 10 ** scale))
      .filter((n) => /^-?\d+(\.\d+)?$/.test(String(n)) && String(n).replace(/\D/g, '').length <= 15 && String(n).replace(/\D/g, '').length >= 6);
    checkFormat({ format: 'digits' }, values, (input, out) => {
      assert.equal(String(out).replace(/\d/g, '9'), String(input).replace(/\d/g, '9'));
    });
  });

  it('card: Luhn-valid, same length and separators, last 4 kept', () => {
    const values = fc
      .tuple(digitText(11, 18), fc.boolean())
      .map(([body, spaced]) => {
        const card = withLuhn(body);
        return spaced ? card.replace(/(\d{4})(?=\d)/g, '$1 ') : card;
      });
    checkFormat({ format: 'card' }, values, (input, out) => {
      const o = out as string;
      assert.ok(isLuhnValid(o));
      assert.equal(shape(o), shape(input as string));
      assert.equal(o.slice(-4), (input as string).slice(-4));
    });
  });

  it('card: Luhn-invalid numbers stay invalid (residue kept)', () => {
    const values = digitText(16, 16).filter((s) => !isLuhnValid(s));
    checkFormat({ format: 'card' }, values, (_input, out) => assert.ok(!isLuhnValid(out as string)));
  });

  it('phone: digits change, + and separators stay', () => {
    const values = fc
      .array(digitText(2, 4), { minLength: 3, maxLength: 4 })
      .chain((groups) => fc.constantFrom(' ', '-', '.').map((sep) => `+${groups.join(sep)}`));
    checkFormat({ format: 'phone' }, values, (input, out) => assert.equal(shape(out as string), shape(input as string)));
  });

  it('text: every character class and case kept', () => {
    const values = fc
      .string({ unit: fc.constantFrom(...'abcXYZ019 -_.é'), minLength: 1, maxLength: 40 })
      .filter((s) => (s.match(/[a-zA-Z]/g)?.length ?? 0) + (s.match(/\d/g)?.length ?? 0) >= 6);
    checkFormat({ format: 'text' }, values, (input, out) => assert.equal(shape(out as string), shape(input as string)));
  });

  it('name: letters with case kept, everything else untouched', () => {
    const word = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: 2, maxLength: 10 }).map((w) => w[0].toUpperCase() + w.slice(1));
    const values = fc.array(word, { minLength: 2, maxLength: 4 }).map((w) => w.join(' ')).filter((s) => s.replace(/ /g, '').length >= 5);
    checkFormat({ format: 'name' }, values, (input, out) => assert.equal(shape(out as string), shape(input as string)));
  });

  it('email: a valid address with the same domain and local-part layout', () => {
    const values = fc.emailAddress().filter((e) => {
      const local = e.slice(0, e.lastIndexOf('@'));
      const digits = local.match(/\d/g)?.length ?? 0;
      const letters = local.match(/[a-zA-Z]/g)?.length ?? 0;
      return digits + letters * Math.log10(26) >= 6;
    });
    checkFormat({ format: 'email' }, values, (input, out) => {
      const i = input as string;
      const o = out as string;
      const at = i.lastIndexOf('@');
      assert.equal(o.slice(at), i.slice(at));
      assert.equal(shape(o), shape(i));
    });
  });

  it('iban: country kept, valid mod-97, BBAN classes kept', () => {
    const country = fc.constantFrom('DE', 'GB', 'FR', 'NL', 'CH', 'NO');
    const bban = fc.string({ unit: fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'), minLength: 11, maxLength: 30 });
    const values = fc.tuple(country, bban, fc.boolean()).map(([c, b, spaced]) => {
      const iban = withIbanCheck(c, b);
      return spaced ? iban.replace(/(.{4})(?=.)/g, '$1 ') : iban;
    });
    checkFormat({ format: 'iban' }, values, (input, out) => {
      const o = out as string;
      assert.ok(isValidIban(o));
      assert.equal(o.slice(0, 2), (input as string).slice(0, 2));
      assert.equal(shape(o).slice(4), shape(input as string).slice(4));
    });
  });

  it('date: a valid date in the same form, within maxDays', () => {
    const values = fc
      .tuple(fc.date({ min: new Date('1901-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }), fc.constantFrom('iso', 'dmy', 'datetime'))
      .map(([d, form]) => {
        const iso = d.toISOString();
        return form === 'iso' ? iso.slice(0, 10) : form === 'dmy' ? `${iso.slice(8, 10)}/${iso.slice(5, 7)}/${iso.slice(0, 4)}` : iso;
      });
    checkFormat({ format: 'date' }, values, (input, out) => {
      const i = input as string;
      const o = out as string;
      assert.equal(shape(o), shape(i));
      const toIso = (s: string) => (s.includes('/') ? `${s.slice(6, 10)}-${s.slice(3, 5)}-${s.slice(0, 2)}` : s.slice(0, 10));
      const days = (Date.parse(toIso(o)) - Date.parse(toIso(i))) / 86_400_000;
      assert.ok(days !== 0 && Math.abs(days) <= 365);
      assert.equal(new Date(Date.parse(toIso(o))).toISOString().slice(0, 10), toIso(o), 'a real date');
    });
  });

  it('batches give the same results as one value at a time, failures included', () => {
    checkBatch({ format: 'digits' }, ['123-45-6789', '12345', 987654321, null, '000000', '4111111111111111', 1.25, 12.5e5]);
    checkBatch({ format: 'card' }, ['4111 1111 1111 1111', '5500005555555559', '1234', '378282246310005']);
    checkBatch({ format: 'text' }, ['Hello World', 'ABC123xyz', 'ab', 'Order 12345', 'abcdef', 'ABCDEF']);
    checkBatch({ format: 'iban' }, ['DE89 3704 0044 0532 0130 00', 'GB82WEST12345698765432', 'XX00']);
    checkBatch({ format: 'digits', shortValues: 'encrypt' }, ['12345', '123456789', 42, true]);
    const many = Array.from({ length: 3000 }, (_, i) => String(1_000_000_000 + i * 7919));
    checkBatch({ format: 'phone' }, many);
  });

  it('every format rejects unknown options and wrong types', () => {
    for (const format of ['digits', 'text', 'card', 'email', 'phone', 'iban', 'name', 'date']) {
      for (const options of [{ format, colour: 'red' }, { format, shortValues: 'pass' }, { format: format.toUpperCase() + 'x' }]) {
        assert.throws(() => techniqueFor('Pseudonymise', options).validate(options), TechniqueOptionError, JSON.stringify(options));
      }
    }
    assert.throws(() => techniqueFor('Pseudonymise', { format: 'card', keepLast: -1 }).validate({ format: 'card', keepLast: -1 }), TechniqueOptionError);
    assert.throws(() => techniqueFor('Pseudonymise', { format: 'date', maxDays: 0 }).validate({ format: 'date', maxDays: 0 }), TechniqueOptionError);
  });

  it('bound techniques are reusable and independent of call order', () => {
    const bound: BoundTechnique = bindTechnique('Pseudonymise', { format: 'text' });
    const first = bound.forward('Alpha 12345');
    bound.forward('Bravo 99999');
    assert.equal(bound.forward('Alpha 12345'), first);
  });
});
