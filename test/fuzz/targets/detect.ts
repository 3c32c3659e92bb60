// The detectors (src/detect): texts of values of every kind among neighbours, the same damaged
// with encodings readers undo (fullwidth digits, zero-width characters, %40, \u0040, &#64;), and
// raw text. The scanner never throws and returns ordered, non-overlapping spans inside the text;
// through the engine (a `notes` field of the customer manifest), Mask leaves no detected value in
// clear and Pseudonymise→Reconstruct, Encrypt→Decrypt give back the exact text.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ContentScanner } from '../../../src/detect/scanner.ts';
import { DETECT_KINDS } from '../../../src/detect/kinds.ts';
import { job, testEngine } from '../../helpers/engine.ts';
import { textArb } from '../../helpers/detected-values.ts';
import { refusedOr, type FuzzTarget } from '../harness.ts';
import { damage } from './documents.ts';

const engine = testEngine();
const scanner = new ContentScanner(DETECT_KINDS);

const encodings = fc.constantFrom('\uff14', '\u200b', '%40', '\\u0040', '&#64;', '&#x34;', '\u00a0', '@', ':', '::', '.', '-', '0', '9', 'ffff', 'DE89');
const textInput = fc.oneof(
  { weight: 3, arbitrary: textArb },
  { weight: 2, arbitrary: fc.tuple(textArb, fc.array(fc.tuple(fc.constantFrom('insert', 'delete', 'replace', 'duplicate'), fc.double({ min: 0, max: 1, noNaN: true }), fc.array(encodings, { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 6 })), { minLength: 1, maxLength: 3 })).map(([t, e]) => damage(t, e)) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
);

function notes(jobType: 'Mask' | 'Pseudonymise' | 'Reconstruct' | 'Encrypt' | 'Decrypt', text: string): string {
  return (engine.protectDocument(job('customer', jobType), { notes: text }).dataSet as { notes: string }).notes;
}


export const detectTarget: FuzzTarget<string> = {
  name: 'detect',
  covers: 'content detectors (src/detect): ContentScanner.scan, and through the engine Mask, Pseudonymise→Reconstruct, Encrypt→Decrypt of free text',
  arbitrary: textInput,
  check(text) {
    const spans = scanner.scan(text);
    let last = 0;
    for (const s of spans) {
      assert.ok(s.start >= last && s.end > s.start && s.end <= text.length, 'spans out of order, overlapping or outside the text');
      last = s.end;
    }
    const masked = refusedOr(() => notes('Mask', text));
    if (masked !== undefined && spans.length > 0) {
      // Read the masked text as a reader would: no value found in the input is found again. (A
      // plain substring test would flag values the input only spelled overlapping a detected one.)
      const values = new Set(spans.map((s) => text.slice(s.start, s.end)));
      for (const s of scanner.scan(masked)) assert.ok(!values.has(masked.slice(s.start, s.end)), `Mask left a detected value in clear (${s.kind})`);
    }
    const p = refusedOr(() => notes('Pseudonymise', text));
    if (p !== undefined) {
      const back = notes('Reconstruct', p);
      assert.equal(back, text, 'Pseudonymise → Reconstruct did not give back the text');
    }
    const e = refusedOr(() => notes('Encrypt', text));
    if (e !== undefined) assert.equal(notes('Decrypt', e), text, 'Encrypt → Decrypt did not give back the text');
  },
  cost: 3,
};

export default detectTarget;
