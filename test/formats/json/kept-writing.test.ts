// A string the rules rewrite keeps the client's writing where its characters did not change (its
// escapes, a raw lone surrogate from an /api/protect dataSet), so Pseudonymise then Reconstruct give
// back the exact bytes. Found by the million-input fuzz run of `json` (fixtures in
// test/fuzz/fixtures/json.known.json: those inputs also meet the open Encrypt escaping class).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rewrittenString } from '../../../src/formats/json/protect-text.ts';
import { job, testEngine } from '../../helpers/engine.ts';

const token = (value: string, writing: string) => ({ text: `{"a":${writing}}`, start: 5, end: 5 + writing.length, value });

describe('rewrittenString', () => {
  it('keeps the writing of the unchanged start and end, escapes only what changed', () => {
    const t = token('caf\u00e9 4111 done', '"caf\\u00e9 4111 done"');
    assert.equal(rewrittenString(t.text, t.start, t.end, t.value, 'caf\u00e9 **** done'), '"caf\\u00e9 **** done"');
    const raw = token('\ud800keep 41 keep', '"\ud800keep 41 keep"');
    assert.equal(rewrittenString(raw.text, raw.start, raw.end, raw.value, '\ud800keep 77 keep'), '"\ud800keep 77 keep"');
    const quotes = token('a"b 41', '"a\\"b 41"');
    assert.equal(rewrittenString(quotes.text, quotes.start, quotes.end, quotes.value, 'a"b "9'), '"a\\"b \\"9"');
  });

  it('writes the whole string when nothing is shared, and never splits a surrogate pair', () => {
    const t = token('abc', '"abc"');
    assert.equal(rewrittenString(t.text, t.start, t.end, t.value, 'x\ud800'), JSON.stringify('x\ud800'));
    // 😀 is \ud83d\ude00 and 😁 \ud83d\ude01: they share the high surrogate, which must not be kept alone.
    const pair = token('😀 x', '"\\ud83d\\ude00 x"');
    const out = rewrittenString(pair.text, pair.start, pair.end, pair.value, '😁 x');
    assert.equal(JSON.parse(out), '😁 x');
    assert.equal(out, '"😁 x"');
  });
});

describe('JSON Pseudonymise → Reconstruct gives back the exact bytes of rewritten strings', () => {
  const engine = testEngine();
  const run = (jobType: 'Mask' | 'Pseudonymise' | 'Reconstruct', text: string): string => engine.protectDocument(job('customer', jobType), text).dataSet as string;
  for (const text of [
    '{"name":"\ud800<Jane","salary":0}',
    '{"email":"\ud800a0@example.com"}',
    '{"phone":"\ud800<+44 20 0000 0000","iban":"DE36000000000000000000"}',
    '{"customers":[{"note":"\ud800keep 4000000000000002 keep","cardNumber":"4000000000000002"}]}',
    '{"customers":[{"note":"caf\\u00e9 \\/ 4111 1111 1111 1111 \\u0041"}]}',
  ]) {
    it(JSON.stringify(text).slice(0, 60), () => {
      const forward = run('Pseudonymise', text);
      assert.notEqual(forward, text);
      assert.equal(run('Reconstruct', forward), text);
    });
  }

  it('Mask changes the detected value only', () => {
    const text = '{"customers":[{"note":"\ud800keep 4111 1111 1111 1111 caf\\u00e9"}]}';
    const masked = run('Mask', text);
    assert.ok(masked.startsWith('{"customers":[{"note":"\ud800keep '), masked);
    assert.ok(masked.endsWith(' caf\\u00e9"}]}'), masked);
    assert.ok(!masked.includes('4111 1111 1111 1111'));
  });
});
