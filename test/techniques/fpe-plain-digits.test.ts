// Card (and digits, phone) values too short to keep their kept digits around an encrypted one:
// `1111` or `12345` under `format: card` (keepLast 4 and the Luhn digit leave nothing free) are
// pseudonymised as plain digits, nothing kept (digits.ts plainDigitLimit). Checked at every digit
// count from 1 up, for several keepFirst/keepLast choices: exactly reversible, and each path maps
// its own digit counts onto themselves, so Reconstruct picks the right path from the pseudonym alone.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bindTechnique, ctxOf, fakeKeys } from './fake-keys.ts';
import { isLuhnValid } from '../../src/techniques/pseudonymise/card.ts';
import type { Scalar } from '../../src/core/types.ts';

type Path = 'plain' | 'kept-short' | 'ff1';

/** The rule of docs/techniques.md, written out independently of the code. */
function pathOf(digits: number, kept: number): Path {
  const plainLimit = kept === 0 ? 0 : kept >= 5 ? kept : kept + 5;
  if (digits <= plainLimit) return 'plain';
  return digits - kept < 6 ? 'kept-short' : 'ff1';
}

const digitCount = (v: Scalar) => String(v).replace(/\D/g, '').length;
const separators = (v: Scalar) => String(v).replace(/\d/g, '');
const gapPattern = (v: Scalar) => String(v).replace(/\d+/g, 'x');
const digitsOf = (v: Scalar) => String(v).replace(/\D/g, '');

/** `n` digits with separators from `seps` sometimes between them. */
function spacedDigits(n: number, seps: string): fc.Arbitrary<string> {
  return fc
    .tuple(fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }), fc.array(fc.option(fc.constantFrom(...seps), { freq: 3 }), { minLength: n + 1, maxLength: n + 1 }))
    .map(([ds, between]) => {
      let out = between[0] ?? '';
      for (let i = 0; i < n; i++) out += String(ds[i]) + (between[i + 1] ?? '');
      return out;
    });
}

interface Case {
  readonly options: { format: string; keepFirst?: number; keepLast?: number };
  /** Digits the format keeps around the encrypted ones (a card's Luhn digit included). */
  readonly kept: number;
}

const CASES: Case[] = [
  { options: { format: 'card' }, kept: 5 },
  { options: { format: 'card', keepFirst: 6 }, kept: 11 },
  { options: { format: 'card', keepLast: 0 }, kept: 1 },
  { options: { format: 'card', keepLast: 2 }, kept: 3 },
  { options: { format: 'card', keepFirst: 1, keepLast: 3 }, kept: 5 },
  { options: { format: 'card', keepLast: 5 }, kept: 6 },
  { options: { format: 'card', keepFirst: 2, keepLast: 8 }, kept: 11 },
  { options: { format: 'digits', keepFirst: 2, keepLast: 3 }, kept: 5 },
  { options: { format: 'digits', keepLast: 1 }, kept: 1 },
  { options: { format: 'digits', keepFirst: 3, keepLast: 4 }, kept: 7 },
  { options: { format: 'phone', keepFirst: 2 }, kept: 2 },
];

const MAX_DIGITS = 24;

describe('values too short to keep their kept digits: plain digits, every digit count from 1 up', () => {
  for (const { options, kept } of CASES) {
    const keepFirst = options.keepFirst ?? 0;
    const keepLast = options.keepLast ?? (options.format === 'card' ? 4 : 0);
    const isCard = options.format === 'card';
    it(JSON.stringify(options), () => {
      const bound = bindTechnique('Pseudonymise', options);
      const again = bindTechnique('Pseudonymise', options);
      let values = 0;
      let unchanged = 0;
      for (let n = 1; n <= MAX_DIGITS; n++) {
        fc.assert(
          fc.property(spacedDigits(n, isCard ? ' -' : ' -()+.'), (value) => {
            const out = bound.forward(value);
            values++;
            if (out === value) unchanged++;
            assert.equal(again.forward(value), out, 'deterministic');
            assert.equal(bound.inverse!(out), value, `reversible: ${value} -> ${String(out)}`);
            const path = pathOf(n, kept);
            assert.equal(pathOf(digitCount(out), kept), path, `${value} -> ${String(out)}: Reconstruct takes the same path`);
            assert.equal(separators(out), separators(value), 'separators kept, in order');
            assert.equal(gapPattern(out), gapPattern(value), 'the same gaps hold digits');
            if (path === 'plain') {
              if (n <= 5) assert.ok(digitCount(out) <= 5, 'a short plain value gives a short pseudonym');
              else assert.equal(String(out).length, value.length, 'FF1 keeps the length');
            } else {
              const [i, o] = [digitsOf(value), digitsOf(out)];
              assert.equal(o.slice(0, keepFirst), i.slice(0, keepFirst), 'first digits kept');
              assert.equal(o.slice(o.length - keepLast), i.slice(i.length - keepLast), 'last digits kept');
              if (isCard) assert.equal(isLuhnValid(String(out)), isLuhnValid(value), 'Luhn validity kept');
              if (path === 'ff1') assert.equal(String(out).length, value.length);
            }
          }),
          { numRuns: 40, seed: 1212 + n },
        );
      }
      // A pseudonym equal to its value is chance (a fixed point of the permutation), not a rule.
      assert.ok(unchanged <= values / 100, `${unchanged} of ${values} values came out as they went in`);
    });
  }

  it('card: a bijection on every value of 1 to 5 digits (111,110 values, onto themselves)', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'card' });
    const values: string[] = [];
    for (let n = 1; n <= 5; n++) for (let x = 0; x < 10 ** n; x++) values.push(String(x).padStart(n, '0'));
    const out = bound.forwardBatch!(values) as string[];
    const image = new Set(out);
    assert.equal(image.size, values.length, 'no two values share a pseudonym');
    for (const o of out) assert.match(o, /^\d{1,5}$/);
    assert.equal(out.filter((o, i) => o === values[i]).length <= 3, true, 'hardly any value is its own pseudonym');
    assert.deepEqual(bound.inverseBatch!(out), values);
    for (let i = 0; i < values.length; i += 4999) assert.equal(bound.forward(values[i]), out[i], 'one by one = batched');
  });

  it('card: JSON numbers of every digit count stay numbers that read back exactly', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'card' });
    for (let n = 1; n <= 15; n++) {
      fc.assert(
        fc.property(fc.integer({ min: n === 1 ? 0 : 10 ** (n - 1), max: 10 ** n - 1 }), (value) => {
          const out = bound.forward(value);
          assert.equal(typeof out, 'number');
          assert.equal(pathOf(digitCount(out), 5), pathOf(n, 5));
          assert.equal(bound.inverse!(out), value);
        }),
        { numRuns: 30, seed: 99 + n },
      );
    }
  });

  it('the plain path is unlinkable to the kept-digits path of the same field', () => {
    // With one permutation for both, `123` would come out as the first digits of `123?1234`'s pseudonym.
    const bound = bindTechnique('Pseudonymise', { format: 'card' });
    let linked = 0;
    let compared = 0;
    fc.assert(
      fc.property(fc.stringMatching(/^\d{1,4}$/), (middle) => {
        const plain = String(bound.forward(middle));
        const long = String(bound.forward(`${middle}0${'1234'}`));
        compared++;
        if (long.slice(0, long.length - 5) === plain) linked++;
      }),
      { numRuns: 500, seed: 7 },
    );
    assert.ok(linked <= compared / 50, `${linked} of ${compared} linked`);
  });

  it('unlinkable across scopes', () => {
    const a = bindTechnique('Pseudonymise', { format: 'card' }, ctxOf(fakeKeys('tp=1;du=1')));
    const b = bindTechnique('Pseudonymise', { format: 'card' }, ctxOf(fakeKeys('tp=2;du=1')));
    let same = 0;
    for (let x = 0; x < 2000; x++) if (a.forward(String(x)) === b.forward(String(x))) same++;
    assert.ok(same <= 20, `${same} of 2000 equal across scopes`);
  });
});
