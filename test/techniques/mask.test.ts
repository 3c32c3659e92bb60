// Mask styles: table-driven cases, option validation and length/shape properties.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bindTechnique, ctxOf, fakeKeys, reasonOf } from './fake-keys.ts';
import { techniqueFor } from '../../src/techniques/registry.ts';
import { TechniqueOptionError } from '../../src/techniques/technique.ts';
import type { Scalar } from '../../src/core/types.ts';

const preserving = ctxOf(fakeKeys(), true);

const cases: [string, Record<string, unknown>, Scalar, Scalar, boolean?][] = [
  ['card keepLast 4', { keepLast: 4 }, '4111111111111111', '************1111'],
  ['card with spaces', { keepLast: 4 }, '4111 1111 1111 1111', '**** **** **** 1111'],
  ['phone separators kept', { keepLast: 4 }, '+1 (555) 123-4567', '+* (***) ***-4567'],
  ['keepFirst and keepLast', { keepFirst: 4, keepLast: 4 }, '4111-1111-1111-1111', '4111-****-****-1111'],
  // Keeping 10 of 16 would show more than half: both ends are cut down in proportion (4 + 4).
  ['keepFirst and keepLast, at most half', { keepFirst: 6, keepLast: 4 }, '4111-1111-1111-1111', '4111-****-****-1111'],
  ['short value: at least half hidden', { keepFirst: 2, keepLast: 2 }, 'abc', '**c'],
  ['short phone', { keepLast: 4, digitsOnly: true }, '0100', '**00'],
  ['short value, keepFirst 2 + keepLast 4', { keepFirst: 2, keepLast: 4 }, '555123', '5***23'],
  ['one maskable character', { keepLast: 4 }, '7', '*'],
  ['no maskable character', { keepLast: 4 }, '--', '--'],
  ['maskChar', { keepLast: 2, maskChar: '#' }, '123456', '####56'],
  ['number to masked string', { keepLast: 4 }, 12345678, '****5678'],
  ['short number', { keepLast: 4 }, 1234567, '****567'],
  ['boolean masked as text', {}, true, '****'],
  ['null masks to empty', {}, null, ''],
  ['empty string', { keepLast: 4 }, '', ''],
  ['unicode letters', { keepLast: 4 }, 'Zoë Ångström', '*** ****tröm'],
  ['astral characters count once', { keepFirst: 1 }, '𝐀𝐁𝐂', '𝐀**'],
  ['digitsOnly keeps letters', { keepLast: 4, digitsOnly: true }, 'AB12345678', 'AB****5678'],
  ['digitsOnly counts digits only', { keepLast: 4, digitsOnly: true }, 'AB12345', 'AB***45'],
  ['ssn digitsOnly', { keepLast: 4, digitsOnly: true }, '123-45-6789', '***-**-6789'],
  ['keepSeparators false', { keepLast: 4, keepSeparators: false }, 'DE89 3704 0044', '**********0044'],
  ['pattern masks the group', { pattern: '^([^@]*)@' }, 'john.doe@example.com', '****.***@example.com'],
  ['pattern, every match', { pattern: '(\\d+)', keepSeparators: false }, 'a1b22c333', 'a*b**c***'],
  ['pattern no match masks all', { pattern: '(\\d{3})-' }, 'ab cd', '** **'],
  ['pattern no match keep', { pattern: '(\\d{3})-', onNoMatch: 'keep' }, 'ab cd', 'ab cd'],
  ['pattern flags', { pattern: 'KEY=(\\w+)', flags: 'i' }, 'key=abc;', 'key=***;'],
  // Within a match the groups must hide at least half of its maskable characters, else all of it is masked.
  ['pattern hiding under half of a match', { pattern: '^(\\d*)\\d{4}$' }, '0100', '****'],
  ['pattern hiding half of a match', { pattern: '^(\\d*)\\d{4}$' }, '12345678', '****5678'],
  ['style plain explicit', { style: 'plain', keepLast: 1 }, 'abc', '**c'],
  ['email style', { style: 'email' }, 'john.smith@example.com', 'j***@example.com'],
  ['email one-char local', { style: 'email' }, 'a@b.io', '***@b.io'],
  ['email not an address', { style: 'email' }, 'not-an-email', '***-**-*****'],
  ['email preserve length', { style: 'email' }, 'john.smith@example.com', 'j*********@example.com', true],
  ['email maskLength', { style: 'email', maskLength: 5 }, 'jo@x.org', 'j*****@x.org'],
  ['email keepFirst at most half', { style: 'email', keepFirst: 3 }, 'abcd@x.org', 'ab***@x.org'],
  ['initials', { style: 'initials' }, 'John Ronald Smith', 'J*** R***** S****'],
  ['initials hyphen/apostrophe', { style: 'initials' }, "Mary-Jane O'Neil", "M***-J*** O'N***"],
  ['initials of one letter', { style: 'initials' }, 'J', '*'],
  ['initials of one-letter words', { style: 'initials' }, 'A B', 'A *'],
  ['initials, non-ASCII', { style: 'initials' }, 'Ö Å Ü', 'Ö * *'],
];

describe('Mask', () => {
  for (const [name, options, input, expected, preserve] of cases) {
    it(name, () => {
      const bound = bindTechnique('Mask', options, preserve ? preserving : undefined);
      assert.equal(bound.forward(input), expected);
      assert.equal(bound.inverse, undefined);
    });
  }

  const badOptions: [Record<string, unknown>, string][] = [
    [{ keepLast: -1 }, 'keepLast'],
    [{ keepLast: 1.5 }, 'keepLast'],
    [{ keepLast: '4' }, 'keepLast'],
    [{ keeplast: 4 }, 'keeplast'],
    [{ maskChar: '**' }, 'maskChar'],
    [{ maskChar: '' }, 'maskChar'],
    [{ digitsOnly: 'yes' }, 'digitsOnly'],
    [{ digitsOnly: true, keepSeparators: false }, 'keepSeparators'],
    [{ pattern: '(' }, 'pattern'],
    [{ pattern: 'abc' }, 'pattern'],
    [{ pattern: '(a)', keepLast: 2 }, 'keepLast'],
    [{ pattern: '(a)', flags: 'g' }, 'flags'],
    [{ flags: 'i' }, 'flags'],
    [{ onNoMatch: 'keep' }, 'onNoMatch'],
    [{ pattern: '(a)', onNoMatch: 'drop' }, 'onNoMatch'],
    [{ style: 'email', keepLast: 4 }, 'keepLast'],
    [{ style: 'initials', maskChar: 'xy' }, 'maskChar'],
  ];
  for (const [options, path] of badOptions) {
    it(`rejects ${JSON.stringify(options)}`, () => {
      assert.throws(
        () => {
          const t = techniqueFor('Mask', options);
          t.validate(options);
        },
        (err: unknown) => err instanceof TechniqueOptionError && (err.path === path || err.message.includes(path)),
      );
    });
  }

  it('an own __proto__ key is an unknown option, not a prototype', () => {
    const options = JSON.parse('{"__proto__": {"keepLast": 2}}') as Record<string, unknown>;
    assert.throws(() => techniqueFor('Mask', options).validate(options), (err: unknown) => err instanceof TechniqueOptionError && err.path === '__proto__');
  });

  it('plain masks keep length and separators, keep the last N maskables, at most half (property)', () => {
    const bound = bindTechnique('Mask', { keepLast: 4 });
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-ascii', maxLength: 40 }), (s) => {
        const out = bound.forward(s) as string;
        assert.equal(out.length, s.length);
        const alnum = [...s].map((ch, i) => (/[A-Za-z0-9]/.test(ch) ? i : -1)).filter((i) => i >= 0);
        const kept = new Set(alnum.slice(alnum.length - Math.min(4, alnum.length >> 1)));
        for (let i = 0; i < s.length; i++) {
          if (!alnum.includes(i) || kept.has(i)) assert.equal(out[i], s[i]);
          else assert.equal(out[i], '*');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('email masks never reveal more than the first character of the local part (property)', () => {
    const bound = bindTechnique('Mask', { style: 'email' });
    fc.assert(
      fc.property(fc.emailAddress(), (email) => {
        const out = bound.forward(email) as string;
        const at = email.lastIndexOf('@');
        assert.equal(out, `${email.length > 0 && at > 1 ? email[0] : ''}***${email.slice(at)}`);
      }),
      { numRuns: 1000 },
    );
  });

  it('every style hides at least half of the maskable characters, whatever its options (property)', () => {
    const styles: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
      fc.record({ keepFirst: fc.nat(8), keepLast: fc.nat(8) }),
      fc.record({ keepFirst: fc.nat(8), keepLast: fc.nat(8), digitsOnly: fc.constant(true) }),
      fc.record({ keepFirst: fc.nat(8), keepLast: fc.nat(8), keepSeparators: fc.constant(false) }),
      fc.record({ style: fc.constant('initials') }),
      fc.record({ style: fc.constant('email'), keepFirst: fc.nat(8) }),
      // The rule holds per match: these patterns match whole values, so per match = per value.
      fc.record({ pattern: fc.constantFrom('^(\\d*)\\d{4}$', '^(\\w)\\w*$', '^(..).*$'), onNoMatch: fc.constant('keep') }),
    );
    const text = fc.string({ unit: fc.constantFrom(...'ab1234 -.@Zé'), maxLength: 16 });
    fc.assert(
      fc.property(styles, text, (options, value) => {
        const out = bindTechnique('Mask', options).forward(value) as string;
        const set = options.digitsOnly ? /\d/u : options.keepSeparators === false ? /./su : /[\p{L}\p{N}]/u;
        // The email style masks the local part only; the other styles the whole value.
        const at = value.lastIndexOf('@');
        const emailOk = options.style === 'email' && at > 0 && at < value.length - 1;
        const scope = emailOk ? [...value.slice(0, at)] : [...value];
        const outScope = emailOk ? [...out.slice(0, out.lastIndexOf('@'))] : [...out];
        const maskable = emailOk ? scope.length : scope.filter((ch) => set.test(ch)).length;
        const shown = emailOk ? outScope.filter((ch) => ch !== '*').length : outScope.filter((ch, i) => ch !== '*' && set.test(ch) && ch === scope[i]).length;
        if (options.pattern !== undefined && out === value) return; // onNoMatch: keep
        assert.ok(shown * 2 <= maskable, `${JSON.stringify(options)} ${JSON.stringify(value)} -> ${JSON.stringify(out)}`);
      }),
      { numRuns: 3000, seed: 5 },
    );
  });

  it('shortValues: reject fails a value the options would leave mostly visible', () => {
    for (const options of [
      { keepLast: 4, digitsOnly: true, shortValues: 'reject' },
      { style: 'initials', shortValues: 'reject' },
      { style: 'email', keepFirst: 2, shortValues: 'reject' },
      { pattern: '^(\\d*)\\d{4}$', shortValues: 'reject' },
    ]) {
      const bound = bindTechnique('Mask', options);
      const value = options.style === 'email' ? 'ab@x.io' : options.style === 'initials' ? 'A B' : '0100';
      assert.equal(reasonOf(() => bound.forward(value)), 'VALUE_TOO_SHORT_TO_MASK');
    }
    assert.equal(bindTechnique('Mask', { keepLast: 4, shortValues: 'reject' }).forward('12345678'), '****5678');
  });

  it('explain names the options', () => {
    const t = techniqueFor('Mask', { keepLast: 4 });
    assert.match(t.compile(t.validate({ keepLast: 4 }), { manifest: 'm', field: 'f' }).explain(), /^mask\(.*keepLast=4/);
  });
});
