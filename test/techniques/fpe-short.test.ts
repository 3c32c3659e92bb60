// The short-value scheme (fpe-short.ts) over every FF1 format and every symbol count from 1 up:
// deterministic, exactly reversible, valid for its format, unlinkable across scopes, short outputs
// short again (so Reconstruct never confuses the two schemes), and a bijection where we can check
// every value. preserve_string_length and `shortValues: reject` keep the strict refusal.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { isLuhnValid } from '../../src/techniques/pseudonymise/card.ts';
import { isValidIban } from '../../src/techniques/pseudonymise/iban.ts';
import { shortJob } from '../../src/techniques/pseudonymise/fpe-short.ts';
import { TweakCache, type FpeNumberJob } from '../../src/techniques/pseudonymise/fpe-core.ts';
import { rng } from '../helpers/rng.ts';
import { ValueError } from '../../src/techniques/technique.ts';
import type { Scalar } from '../../src/core/types.ts';

const RUNS = { numRuns: 400, seed: 120612 };
const scope = (s: string) => ctxOf(fakeKeys(s));

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = LOWER.toUpperCase();
const DIGITS = '0123456789';

/** Letters and digits of a text (the symbols a format lifts), and what is left (its separators, in order). */
function symbolsOf(text: string, classes: 'digits' | 'letters' | 'alnum'): { count: number; letters: number; digits: number; rest: string } {
  let letters = 0;
  let digits = 0;
  let rest = '';
  for (const ch of text) {
    const isDigit = /[0-9]/.test(ch) && classes !== 'letters';
    const isLetter = /[A-Za-z]/.test(ch) && classes !== 'digits';
    if (isDigit) digits++;
    else if (isLetter) letters++;
    else rest += ch;
  }
  return { count: letters + digits, letters, digits, rest };
}

/** FF1's domain rule: fewer than 10^6 values in the lifted symbols. */
function isShort(text: string, classes: 'digits' | 'letters' | 'alnum'): boolean {
  const s = symbolsOf(text, classes);
  return 26 ** s.letters * 10 ** s.digits < 1_000_000;
}

/** The case style the scheme keeps (see CaseStyle in fpe-short.ts), computed independently here. */
function caseStyle(text: string, classes: 'letters' | 'alnum'): string {
  const words = text.split(classes === 'letters' ? /[^A-Za-z]+/ : /[^A-Za-z0-9]+/).filter((w) => w !== '');
  const letters = text.replace(/[^A-Za-z]/g, '');
  if (letters === '') return 'none';
  if (letters === letters.toLowerCase()) return 'lower';
  const title = words.every((w) => {
    const l = w.replace(/[^A-Za-z]/g, '');
    return l === '' || (l[0] === l[0].toUpperCase() && l.slice(1) === l.slice(1).toLowerCase());
  });
  if (title) return 'title';
  return letters === letters.toUpperCase() ? 'upper' : 'mixed';
}

/** Which gaps between separators hold symbols: kept by the scheme. */
function gapPattern(text: string, classes: 'digits' | 'letters' | 'alnum'): string {
  const sym = classes === 'digits' ? /[0-9]/ : classes === 'letters' ? /[A-Za-z]/ : /[A-Za-z0-9]/;
  let out = '';
  let inGap = false;
  for (const ch of text) {
    if (sym.test(ch)) {
      if (!inGap) out += 'x';
      inGap = true;
    } else {
      out += ch;
      inGap = false;
    }
  }
  return out;
}

interface FormatCase {
  readonly options: Record<string, unknown>;
  readonly classes: 'digits' | 'letters' | 'alnum';
  /** The part of a value the scheme rewrites (the rest must come back unchanged). */
  readonly region: (value: string) => { head: string; body: string; tail: string };
  readonly values: (length: number) => fc.Arbitrary<Scalar>;
  readonly valid: (input: Scalar, output: Scalar) => void;
}

const pick = (chars: string) => fc.constantFrom(...chars);
const joined = (parts: fc.Arbitrary<string[]>) => parts.map((p) => p.join(''));

/** `length` symbols from `symbols`, with separators from `seps` sprinkled between (or not). */
function spaced(length: number, symbols: fc.Arbitrary<string>, seps: string): fc.Arbitrary<string> {
  return fc
    .tuple(fc.array(symbols, { minLength: length, maxLength: length }), fc.array(fc.option(pick(seps), { freq: 3 }), { minLength: length + 1, maxLength: length + 1 }))
    .map(([syms, between]) => {
      let out = between[0] ?? '';
      for (let i = 0; i < syms.length; i++) out += syms[i] + (between[i + 1] ?? '');
      return out;
    });
}

/** A name of `length` letters in words, in a case style drawn at random. */
function nameOf(length: number): fc.Arbitrary<string> {
  return fc
    .tuple(spaced(length, pick(LOWER), " -'."), fc.constantFrom('lower', 'title', 'upper', 'mixed'), fc.array(fc.boolean(), { minLength: length, maxLength: length }))
    .map(([text, style, flips]) => {
      let k = 0;
      let start = true;
      let out = '';
      for (const ch of text) {
        if (!/[a-z]/.test(ch)) {
          start = true;
          out += ch;
          continue;
        }
        const upper = style === 'upper' || (style === 'title' && start) || (style === 'mixed' && flips[k]);
        out += upper ? ch.toUpperCase() : ch;
        start = false;
        k++;
      }
      return out;
    });
}

const whole = (value: string) => ({ head: '', body: value, tail: '' });

const FORMATS: Record<string, FormatCase> = {
  name: {
    options: { format: 'name' },
    classes: 'letters',
    region: whole,
    values: nameOf,
    valid: (input, output) => {
      assert.equal(typeof output, 'string');
      assert.equal(caseStyle(output as string, 'letters'), caseStyle(input as string, 'letters'), 'case style kept');
    },
  },
  email: {
    options: { format: 'email' },
    classes: 'alnum',
    region: (v) => ({ head: '', body: v.slice(0, v.lastIndexOf('@')), tail: v.slice(v.lastIndexOf('@')) }),
    values: (length) => fc.tuple(spaced(length, pick(LOWER + LOWER + DIGITS + UPPER), '._+-'), fc.constantFrom('@example.com', '@x.io')).map(([l, d]) => l + d),
    valid: (input, output) => {
      const o = output as string;
      assert.match(o, /^[^@]+@[^@]+$/, 'still one @ with a local part');
      assert.equal(caseStyle(o.slice(0, o.lastIndexOf('@')), 'alnum'), caseStyle((input as string).split('@')[0], 'alnum'));
    },
  },
  text: {
    options: { format: 'text' },
    classes: 'alnum',
    region: whole,
    values: (length) => spaced(length, pick(LOWER + UPPER + DIGITS), ' -_.é/'),
    valid: (input, output) => assert.equal(caseStyle(output as string, 'alnum'), caseStyle(input as string, 'alnum')),
  },
  digits: {
    options: { format: 'digits' },
    classes: 'digits',
    region: whole,
    values: (length) => spaced(length, pick(DIGITS), '-. /*'),
    valid: (_input, output) => assert.equal(typeof output, 'string'),
  },
  phone: {
    options: { format: 'phone' },
    classes: 'digits',
    region: whole,
    values: (length) => spaced(length, pick(DIGITS), ' -()+'),
    valid: () => {},
  },
  card: {
    options: { format: 'card' },
    classes: 'digits',
    // The last 4 digits (and the separators after the Luhn digit) are kept.
    region: (v) => {
      const at = [...v].map((c, i) => (/\d/.test(c) ? i : -1)).filter((i) => i >= 0);
      const cut = at.length >= 5 ? at[at.length - 5] : 0;
      return { head: '', body: v.slice(0, cut), tail: v.slice(at.length >= 5 ? at[at.length - 4] : 0) };
    },
    values: (length) => spaced(length + 5, pick(DIGITS), ' -'),
    valid: (input, output) => {
      assert.equal(isLuhnValid(output as string), isLuhnValid(input as string), 'Luhn validity kept');
      const lastFour = (s: string) => s.replace(/\D/g, '').slice(-4);
      assert.equal(lastFour(output as string), lastFour(input as string), 'last 4 kept');
    },
  },
  iban: {
    options: { format: 'iban' },
    classes: 'alnum',
    region: (v) => ({ head: v.slice(0, 2), body: v.slice(4), tail: '' }),
    values: (length) =>
      fc.tuple(fc.constantFrom('DE', 'GB', 'NO', 'FR'), fc.array(pick(DIGITS + UPPER + DIGITS), { minLength: length, maxLength: length })).map(([country, bban]) => {
        for (let check = 2; check <= 98; check++) {
          const iban = `${country}${String(check).padStart(2, '0')}${bban.join('')}`;
          if (isValidIban(iban)) return iban;
        }
        throw new Error('unreachable');
      }),
    valid: (input, output) => {
      assert.ok(isValidIban(output as string), 'mod-97 valid');
      assert.equal((output as string).slice(0, 2), (input as string).slice(0, 2), 'country kept');
    },
  },
};

describe('short values: every format, every length from 1 up', () => {
  for (const [name, format] of Object.entries(FORMATS)) {
    it(`${name}: deterministic, reversible, valid, short stays short, unlinkable`, () => {
      const a = bindTechnique('Pseudonymise', format.options, scope('tp=1;du=1'));
      const again = bindTechnique('Pseudonymise', format.options, scope('tp=1;du=1'));
      const b = bindTechnique('Pseudonymise', format.options, scope('tp=2;du=1'));
      let short = 0;
      let linked = 0;
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 12 }).chain(format.values), (value) => {
          const out = a.forward(value);
          assert.equal(again.forward(value), out, 'deterministic');
          assert.ok(Object.is(a.inverse!(out), value), `reversible: ${String(value)} -> ${String(out)}`);
          format.valid(value, out);
          const i = format.region(value as string);
          const o = format.region(out as string);
          assert.equal(o.head, i.head, 'text before the region kept');
          assert.equal(o.tail, i.tail, 'text after the region kept');
          if (isShort(i.body, format.classes)) {
            short++;
            assert.ok(isShort(o.body, format.classes), `a short value gives a short pseudonym: ${String(out)}`);
            assert.equal(symbolsOf(o.body, format.classes).rest, symbolsOf(i.body, format.classes).rest, 'separators kept in order');
            assert.equal(gapPattern(o.body, format.classes), gapPattern(i.body, format.classes), 'the same gaps hold symbols');
            if (symbolsOf(i.body, format.classes).count > 0 && b.forward(value) === out) linked++;
          } else {
            assert.equal((out as string).length, (value as string).length, 'long values keep their length');
          }
        }),
        RUNS,
      );
      assert.ok(short > RUNS.numRuns / 4, `enough short values generated (${short})`);
      assert.ok(linked <= short / 50, `scopes linkable: ${linked}/${short}`);
    });
  }

  it('JSON numbers of 1 to 5 digits stay numbers that read back exactly', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'digits' });
    const values = fc
      .tuple(fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 0, max: 4 }), fc.boolean())
      .map(([n, scale, negative]) => (negative ? -1 : 1) * (n / 10 ** scale))
      .filter((n) => /^-?\d+(\.\d+)?$/.test(String(n)) && !Object.is(n, -0));
    fc.assert(
      fc.property(values, (value) => {
        const out = bound.forward(value);
        assert.equal(typeof out, 'number');
        assert.ok(Object.is(bound.inverse!(out), value));
        assert.ok(String(out).replace(/\D/g, '').length <= 5, 'still short');
        assert.equal(String(out).startsWith('-'), String(value).startsWith('-'), 'sign kept');
        assert.equal(String(out).includes('.'), String(value).includes('.'), 'fraction kept');
      }),
      RUNS,
    );
  });

  it('a bijection on every digit string of 1 to 4 digits (11,110 values)', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'digits' });
    const values: string[] = [];
    for (let n = 1; n <= 4; n++) for (let x = 0; x < 10 ** n; x++) values.push(String(x).padStart(n, '0'));
    const out = bound.forwardBatch!(values) as string[];
    assert.equal(new Set(out).size, values.length, 'no two values share a pseudonym');
    for (const o of out) assert.match(o, /^\d{1,5}$/);
    assert.deepEqual(bound.inverseBatch!(out), values);
    // One by one agrees with the batch.
    for (let i = 0; i < values.length; i += 997) assert.equal(bound.forward(values[i]), out[i]);
  });

  it('a bijection on every one- and two-letter name in each case style', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'name' });
    const values: string[] = [];
    for (const a of UPPER) {
      values.push(a, a + ' ' + a);
      for (const b of LOWER) values.push(a + b, a.toLowerCase() + b, a + b.toUpperCase(), a.toLowerCase() + b.toUpperCase());
    }
    const out = bound.forwardBatch!(values) as string[];
    assert.equal(new Set(out).size, values.length);
    assert.deepEqual(bound.inverseBatch!(out), values);
    const lengths = new Set(out.map((o) => o.replace(/[^A-Za-z]/g, '').length));
    assert.ok(lengths.size > 1, 'short names do not keep their length');
  });

  it('the realistic short values of a customer table', () => {
    const cases: [Record<string, unknown>, Scalar, RegExp][] = [
      [{ format: 'email' }, 'john@example.com', /^[a-z0-9]{1,5}@example\.com$/],
      [{ format: 'email' }, 'j.li@example.com', /^[a-z0-9]+\.[a-z0-9]+@example\.com$/],
      [{ format: 'name' }, 'Li Wu', /^[A-Z][a-z]* [A-Z][a-z]*$/],
      [{ format: 'name' }, 'Bo', /^[A-Z][a-z]{0,3}$/],
      [{ format: 'name' }, "O'Ng", /^[A-Z][a-z]*'[A-Z][a-z]*$/],
      [{ format: 'phone' }, '0100', /^\d{1,5}$/],
      [{ format: 'digits' }, '6789', /^\d{1,5}$/],
      [{ format: 'card' }, '1111', /^(?!1111$)\d{1,5}$/],
      [{ format: 'card' }, '12345', /^(?!12345$)\d{1,5}$/],
      [{ format: 'card', keepFirst: 6 }, '4111 1111 1111 1111', /^4111 11[\d ]+1111$/],
    ];
    for (const [options, input, shape] of cases) {
      const bound = bindTechnique('Pseudonymise', options);
      const out = bound.forward(input);
      assert.match(String(out), shape, `${String(input)} -> ${String(out)}`);
      assert.equal(bound.inverse!(out), input);
    }
  });

  it('cycle walks stay short for every kind of short set (expected steps <= 11)', () => {
    const shapes: [string, 'digits' | 'letters' | 'alnum'][] = [];
    const joined = (first: string, rest: string, gaps: number, sep: string) => [first, ...Array(gaps - 1).fill(rest)].join(sep);
    for (let g = 1; g <= 5; g++) shapes.push([joined('1', '1', g, '-'), 'digits'], [joined('1', '1', g, '.'), 'alnum']);
    for (let g = 1; g <= 4; g++) for (const first of ['a', 'A']) shapes.push([joined(first, first, g, ' '), 'letters']);
    for (let g = 1; g <= 3; g++) for (const first of ['AB', 'aB']) shapes.push([joined(first, first.toLowerCase()[0]!, g, ' '), 'letters']);
    for (let g = 1; g <= 4; g++) for (const first of ['a', 'A', 'AB', 'aB', 'Ab']) shapes.push([joined(first, '1', g, '.'), 'alnum']);
    const next = rng(7);
    const tweaks = new TweakCache(new Uint8Array(8));
    let checked = 0;
    for (const [text, classes] of shapes) {
      if (!isShort(text, classes)) continue;
      const job = shortJob({ text, start: 0, end: text.length, classes }, text, tweaks) as FpeNumberJob;
      const samples = 20_000;
      let accepted = 0;
      for (let i = 0; i < samples; i++) if (job.acceptRank!(Math.floor(next() * 2 ** job.length))) accepted++;
      assert.ok(job.length >= 20, 'FF1 domain of at least 2^20');
      assert.ok(samples / accepted <= 11, `${classes} ${JSON.stringify(text)}: ${(samples / accepted).toFixed(1)} steps`);
      checked++;
    }
    assert.ok(checked >= 30, `${checked} shapes`);
  });

  it('values without any symbol are their own pseudonym', () => {
    for (const [format, value] of [['digits', '---'], ['name', "'-"], ['text', '!?'], ['card', '- -'], ['email', '_.@x.io']] as const) {
      const bound = bindTechnique('Pseudonymise', { format });
      assert.equal(bound.forward(value), value);
      assert.equal(bound.inverse!(value), value);
    }
  });

  it('preserve_string_length and shortValues: reject keep the strict refusal', () => {
    const shortValues: Record<string, string> = { name: 'Bo', email: 'jo@x.io', text: 'ab', digits: '12', phone: '12', card: '1234 5678', iban: 'NO7712' };
    for (const format of Object.values(FORMATS)) {
      const strict = bindTechnique('Pseudonymise', { ...format.options, shortValues: 'reject' });
      const preserving = bindTechnique('Pseudonymise', format.options, ctxOf(fakeKeys(), true));
      const loose = bindTechnique('Pseudonymise', format.options);
      const value = shortValues[format.options.format as string];
      assert.ok(format.options.format !== 'iban' || isValidIban(value));
      assert.equal(reasonOf(() => strict.forward(value)), 'VALUE_TOO_SHORT_FOR_FPE');
      assert.equal(reasonOf(() => preserving.forward(value)), 'VALUE_TOO_SHORT_FOR_FPE');
      // Reconstruct reads a short pseudonym back even when the request asks to preserve lengths.
      assert.equal(preserving.inverse!(loose.forward(value)), value);
    }
    // A card too short to keep anything is refused the same way.
    for (const value of ['1111', '12345', 1111]) {
      assert.equal(reasonOf(() => bindTechnique('Pseudonymise', { format: 'card', shortValues: 'reject' }).forward(value)), 'VALUE_TOO_SHORT_FOR_FPE');
      assert.equal(reasonOf(() => bindTechnique('Pseudonymise', { format: 'card' }, ctxOf(fakeKeys(), true)).forward(value)), 'VALUE_TOO_SHORT_FOR_FPE');
    }
  });

  it('batches agree with one value at a time, short values and failures included', () => {
    const bound = bindTechnique('Pseudonymise', { format: 'text' });
    const values: Scalar[] = ['ab', 'Hello World', 'x', 'a1-b2', null, 'ABCDEFGH', '!', 'Jo', 42, 'x'.repeat(5000)];
    const batch = bound.forwardBatch!(values);
    const single = values.map((v) => {
      try {
        return bound.forward(v);
      } catch (err) {
        return err as ValueError;
      }
    });
    const show = (r: Scalar | ValueError) => (r instanceof ValueError ? `!${r.reason}` : JSON.stringify(r));
    assert.deepEqual(batch.map(show), single.map(show));
    const ok = batch.filter((r): r is Scalar => !(r instanceof ValueError));
    assert.deepEqual(bound.inverseBatch!(ok), values.filter((_, i) => !(batch[i] instanceof ValueError)));
  });
});
