// No value left in clear (issue 17, DESIGN "Detection's invariants"): the scanner keeps one reading
// where candidates overlap or are glued together (`1.0.0.0::1`, two phone readings sharing a digit
// group), and once the kept one is protected the other could read as a value on its own. Texts of
// values glued to values of every kind, digit groups and separators go through Mask, Anonymise,
// Encrypt and Pseudonymise of the `customer` manifest: no value detected in the input is found
// again in the output. Under a Mask that hides every character of a value (no last four kept, a
// mask character no detector reads) the invariant is exact: nothing at all is detected in the output.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { job, testEngine } from '../helpers/engine.ts';
import { neighbourArb, valueArb } from '../helpers/detected-values.ts';
import { ContentScanner } from '../../src/detect/scanner.ts';
import { DETECT_KINDS } from '../../src/detect/kinds.ts';
import { DpgError } from '../../src/core/errors.ts';

const engine = testEngine();
/** Every kind masked whole, separators too, with a character no detector reads. */
const blackout = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-cover-'));
  const kinds = ['card', 'email', 'phone', 'iban', 'ssn', 'ipAddress'];
  const fields = kinds.map((k) => `  - match: ${k}Field\n    kind: ${k}\n    Mask: { keepSeparators: false, maskChar: "\u2588" }\n`).join('');
  writeFileSync(join(dir, 'blackout.yaml'), `name: blackout\ndetect:\n  kinds: [${kinds.join(', ')}]\nfields:\n${fields}`);
  return testEngine(dir);
})();
const scanner = new ContentScanner(DETECT_KINDS);
type Job = 'Mask' | 'Anonymise' | 'Encrypt' | 'Pseudonymise';

/** The protected notes, or undefined when the value was refused (failing closed is no leak). */
function notes(jobType: Job, text: string): string | undefined {
  try {
    return (engine.protectDocument(job('customer', jobType), { notes: text }).dataSet as { notes: string }).notes;
  } catch (err) {
    if (err instanceof DpgError && err.code === 'VALUE_NOT_PROTECTABLE') return undefined;
    throw err;
  }
}

/** Glue that makes two readings touch or share characters: nothing, one colon or two, a dot, a dash, a space. */
const glueArb = fc.constantFrom('', '', ':', '::', '.', '-', ' ', '/', '@');
/** Pieces that overlap a neighbour's reading: a digit group shared by two phone readings, an IPv6 tail. */
const sharedArb = fc.constantFrom('555 0199', '555-0132', '0132 555 0199', '::1', '0::1', ':1', '1.0.0.0', '01 0001', 'ffff', 'DE89');
const gluedTextArb = fc
  .array(fc.oneof({ weight: 3, arbitrary: valueArb }, { weight: 2, arbitrary: sharedArb }, { weight: 1, arbitrary: neighbourArb }), { minLength: 2, maxLength: 6 })
  .chain((pieces) => fc.tuple(fc.constant(pieces), fc.array(glueArb, { minLength: pieces.length, maxLength: pieces.length }), fc.constantFrom('', 'x ', 'note: ')))
  .map(([pieces, glue, lead]) => lead + pieces.map((p, i) => (i === 0 ? p : glue[i] + p)).join(''));

/** Values detected in the input that the output shows again (the fuzz target's reading, test/fuzz/targets/detect.ts). */
function inClear(input: string, output: string): string[] {
  const values = new Set(scanner.scan(input).map((s) => input.slice(s.start, s.end)));
  return scanner
    .scan(output)
    .map((s) => output.slice(s.start, s.end))
    .filter((v) => values.has(v));
}

/** What the output of the blackout Mask still shows as values: nothing, unless the value was refused. */
function blackoutLeft(text: string): string[] | undefined {
  let out: string;
  try {
    out = (blackout.protectDocument(job('blackout', 'Mask'), { notes: text }).dataSet as { notes: string }).notes;
  } catch (err) {
    if (err instanceof DpgError && err.code === 'VALUE_NOT_PROTECTABLE') return undefined;
    throw err;
  }
  return scanner.scan(out).map((s) => `${s.kind} ${JSON.stringify(out.slice(s.start, s.end))} in ${JSON.stringify(out)}`);
}

describe('no detected value is left in clear next to a protected one', () => {
  it('the fuzz findings: an address glued after an address, shared digit groups', () => {
    for (const text of ['::1 1.0.0.0::1 1.0.0.0', '1.0.0.0::1', 'call 415-555-0132 555 0199', '10.0.0.1::ffff']) {
      for (const jobType of ['Mask', 'Anonymise', 'Encrypt'] as const) {
        const out = notes(jobType, text);
        if (out !== undefined) assert.deepEqual(inClear(text, out), [], `${jobType} of ${JSON.stringify(text)} -> ${JSON.stringify(out)}`);
      }
      assert.deepEqual(blackoutLeft(text), [], text);
    }
    assert.equal(notes('Mask', '::1 1.0.0.0::1 1.0.0.0'), '::* *.*.*.*::* *.*.*.*');
    // A reading the scanner left out for an overlapping one (the SSN under `0001::1`) is covered with it.
    assert.equal(notes('Mask', 'x 001-01-0001::1'), 'x ***-**-****::*');
  });

  it('values glued to values of every kind, shared digit groups and separators (400 texts, five protections)', () => {
    let spans = 0;
    let refused = 0;
    fc.assert(
      fc.property(gluedTextArb, (text) => {
        spans += scanner.scan(text).length;
        const left = blackoutLeft(text);
        if (left === undefined) refused++;
        else assert.deepEqual(left, [], text);
        for (const jobType of ['Mask', 'Anonymise', 'Encrypt', 'Pseudonymise'] as const) {
          const out = notes(jobType, text);
          if (out === undefined) {
            refused++;
            continue;
          }
          // A pseudonym may equal its value by chance (a permutation of a small domain has fixed
          // points: `::1`); Pseudonymise must show exactly its pseudonyms, nothing more.
          if (jobType === 'Pseudonymise') assert.equal(scanner.scan(out).length, scanner.scan(text).length, `${JSON.stringify(text)} -> ${JSON.stringify(out)}`);
          else assert.deepEqual(inClear(text, out), [], `${jobType} of ${JSON.stringify(text)} -> ${JSON.stringify(out)}`);
        }
      }),
      { numRuns: Number(process.env.COVER_RUNS ?? 400), seed: Number(process.env.COVER_SEED ?? 171) },
    );
    assert.ok(spans > 550, `${spans} detected values went through`);
    // Failing closed is allowed, but it must stay the exception, not the way the property holds.
    assert.ok(refused < 200, `${refused} of 3,000 protections refused`);
  });
});
