// Review findings 6 and 11, and the separators of 12b. The digit-run reader used to stop a run at 64
// groups, so a card after 60 one-digit groups stayed in clear, and classified each run in
// quadratic-like time (`"4 4 4 …"` 2 MB took 2.35 s). Now a value is found wherever it starts in a run
// of any length, and hostile runs scan in linear time.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { digitRunSteps } from '../../src/detect/digit-runs.ts';
import { DETECT_KINDS, type DetectKind } from '../../src/detect/kinds.ts';
import { rng } from '../helpers/rng.ts';

const scanner = new ContentScanner(DETECT_KINDS);
const found = (text: string) => scanner.scan(text).map((s) => [text.slice(s.start, s.end), s.kind]);

describe('digit runs of any length (finding 6)', () => {
  it('the review example: a card after 61 one-digit groups is found (the cap hid it)', () => {
    const notes = '1 '.repeat(61) + '4111 1111 1111 1111';
    assert.deepEqual(found(notes), [['4111 1111 1111 1111', 'card']]);
  });

  const VALUES: [string, DetectKind][] = [
    ['4111 1111 1111 1111', 'card'],
    ['4111111111111111', 'card'],
    ['123-45-6789', 'ssn'],
    ['123 45 6789', 'ssn'],
    ['415 555 0132', 'phone'],
    ['(415) 555-0132', 'phone'],
    ['+44 20 7946 0958', 'phone'],
    ['192.0.2.10', 'ipAddress'],
  ];
  for (const filler of ['1 ', '4 ', '12 ', '1-', '00 ', '4444 ']) {
    it(`finds each kind after any number of ${JSON.stringify(filler)} groups (0-300)`, () => {
      for (const [value, kind] of VALUES) {
        for (const n of [0, 1, 19, 20, 21, 43, 44, 45, 60, 61, 62, 63, 64, 65, 127, 128, 300]) {
          // A space before the value: after `-` or `.` a value is the tail of something else.
          const text = `${filler.repeat(n)} ${value}`;
          const spans = scanner.scan(text);
          const last = spans[spans.length - 1];
          assert.ok(last && text.slice(last.start, last.end) === value && last.kind === kind, `${n} × ${JSON.stringify(filler)} then ${value}: ${JSON.stringify(found(text).slice(-2))}`);
        }
      }
    });
  }

  it('a long run holding many values protects every one, whatever the window', () => {
    const r = rng(7);
    for (let round = 0; round < 20; round++) {
      let text = '';
      const planted: [number, number][] = [];
      for (let i = 0; i < 300; i++) {
        // One-digit groups between values (two values side by side may join into one longer value).
        text += `${Math.floor(r() * 10)} `;
        if (r() < 0.3) {
          const [value] = VALUES[Math.floor(r() * VALUES.length)];
          planted.push([text.length, text.length + value.length]);
          text += `${value} `;
        }
      }
      const spans = scanner.scan(text);
      for (const [start, end] of planted) {
        // Every digit of a planted value is inside a detected span: nothing of it is left in clear.
        for (let i = start; i < end; i++) {
          if (!/[0-9]/.test(text[i])) continue;
          assert.ok(spans.some((s) => s.start <= i && i < s.end), `round ${round}: ${JSON.stringify(text.slice(start, end))} at ${start} not covered`);
        }
      }
    }
  });
});

describe('linear time on hostile digit-heavy text (finding 11)', () => {
  const HOSTILE: Record<string, string> = {
    'one-digit groups': '1 ',
    'fours (the review)': '4 ',
    'groups of four': '4444 ',
    'Luhn-failing cards': '4111 1111 1111 1112 ',
    '00 prefixes': '00 ',
    'country code and dots': '0044.1 ',
    'trunk prefixes': '01 1 ',
    'brackets': '(1) ',
    'dashes': '1-',
    'dots': '1.',
  };
  /** Steps the digit-run reader takes on `text` (groups read, starts classified, groupings tried). */
  const steps = (text: string): number => {
    digitRunSteps.count = 0;
    scanner.scan(text);
    return digitRunSteps.count;
  };

  for (const [name, unit] of Object.entries(HOSTILE)) {
    it(`${name}: a bounded number of steps per character, 4× the text takes 4× the steps`, () => {
      const small = unit.repeat(Math.ceil(250_000 / unit.length));
      const large = unit.repeat(Math.ceil(1_000_000 / unit.length));
      const s1 = steps(small);
      const s4 = steps(large);
      // Counted, not timed (a shared machine's clock is no evidence): the time is in bench/detect.bench.ts.
      // Before the sliding window a run of n groups took ~n²/2 steps; now at most a few per group.
      assert.ok(s4 <= 3 * large.length, `${name}: ${s4} steps for ${large.length} characters`);
      assert.ok(s4 <= 4.1 * s1, `${name}: ${s1} steps for 0.25 MB, ${s4} for 1 MB — not linear`);
    });
  }
});

describe('separators people type between digit groups (12b)', () => {
  const ACCEPTED: [string, DetectKind][] = [
    ['4111\u202F1111\u202F1111\u202F1111', 'card'], // narrow no-break space (French typography)
    ['4111\u20091111\u20091111\u20091111', 'card'], // thin space
    ['4111\u00A01111\u00A01111\u00A01111', 'card'], // no-break space
    ['4111\u20131111\u20131111\u20131111', 'card'], // en dash
    ['4111\u20141111\u20141111\u20141111', 'card'], // em dash
    ['4111\u20121111\u20121111\u20121111', 'card'], // figure dash
    ['3782\u2009822463\u200910005', 'card'],
    ['415\u2013555\u20130132', 'phone'],
    ['123\u201345\u20136789', 'ssn'],
    ['DE89\u00A03704\u00A00044\u00A00532\u00A00130\u00A000', 'iban'],
    ['DE89\u202F3704\u202F0044\u202F0532\u202F0130\u202F00', 'iban'],
  ];
  for (const [value, kind] of ACCEPTED) {
    it(`${kind}: ${JSON.stringify(value)}`, () => {
      assert.equal(scanner.wholeKind(value), kind);
      assert.deepEqual(found(`see ${value}, thanks`), [[value, kind]]);
    });
  }

  it('a card right after a dash (`12-4111111111111111`), not only after a space', () => {
    assert.deepEqual(found('12-4111111111111111'), [['4111111111111111', 'card']]);
    assert.deepEqual(found('ref 2024-4111111111111111-01'), [['4111111111111111', 'card']]);
    assert.deepEqual(found('x 12-4111 1111 1111 1111'), [['4111 1111 1111 1111', 'card']]);
    assert.deepEqual(found('-4111111111111111'), [['4111111111111111', 'card']]);
  });

  it('still refused: a decimal fraction, a card written with the dash it follows, mixed separators', () => {
    assert.deepEqual(found('3.4111111111111111'), []);
    assert.deepEqual(found('12-4111-1111-1111-1111'), []);
    assert.deepEqual(found('4111\u20131111 1111\u20131111'), []);
    assert.deepEqual(found('4341-0066 9014-9015'), []);
    assert.deepEqual(found('12-123-45-6789'), [], 'only a card may follow a dash: SSNs and phones have weaker checks');
  });
});
