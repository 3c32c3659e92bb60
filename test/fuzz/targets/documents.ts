// Shared by the codec targets (json, xml, sql-*, list): customer records written in each data type,
// then maybe damaged, and the check every codec must pass through the real engine and the default
// `customer` manifest. Selected values are written so nothing else in a document can spell them
// (names are capitalised words; filler is lower-case letters with no digit, '@' or ':').

import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { DataSetType, JobType } from '../../../src/core/types.ts';
import { ContentScanner } from '../../../src/detect/scanner.ts';
import { DETECT_KINDS } from '../../../src/detect/kinds.ts';
import { job, testEngine } from '../../helpers/engine.ts';
import { cardArb, emailArb, ibanArb, phoneArb, ssnArb, valueArb } from '../../helpers/detected-values.ts';
import { refusedOr } from '../harness.ts';

const engine = testEngine();
const scanner = new ContentScanner(DETECT_KINDS);

/** One generated field: its name, its value, and whether Mask must hide the value. */
export interface Field {
  readonly name: string;
  readonly value: string;
  readonly selected: boolean;
}
export type Row = readonly Field[];

/** A document to protect, the values Mask must hide in it, and how it was made (for fixtures). */
export interface DocumentInput {
  readonly text: string;
  /** Values Mask must leave nowhere in clear; empty for a damaged document (no oracle). */
  readonly selected: readonly string[];
  readonly dialect?: string;
}

const nameWord = fc.constantFrom('Jane', 'Doe', 'Ann', 'Lee', 'Zoe', 'Kim', 'Olu', 'Eve', 'Ravi', 'Émile', 'Ødegård', 'Mary-Jo', "O'Neil", 'Søren');
const nameArb = fc.array(nameWord, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
const fillerWord = fc.constantFrom('keep', 'me', 'note', 'call', 'card', 'ref', 'ok', 'ship', 'to', 'the', 'door', 'café', 'naïve', 'x');
const filler = fc.array(fillerWord, { minLength: 1, maxLength: 4 }).map((w) => w.join(' '));
/** Free text with maybe one value of a detected kind inside (found by content, not by name). */
const note = fc.tuple(filler, fc.option(valueArb, { nil: undefined }), filler).map(([a, v, b]) => (v === undefined ? a : `${a} ${v} ${b}`));

const fieldArb: fc.Arbitrary<Field> = fc.oneof(
  nameArb.map((value) => ({ name: 'name', value, selected: true })),
  cardArb.map((value) => ({ name: 'cardNumber', value, selected: true })),
  ssnArb.map((value) => ({ name: 'ssn', value, selected: true })),
  emailArb.map((value) => ({ name: 'email', value, selected: true })),
  phoneArb.map((value) => ({ name: 'phone', value, selected: true })),
  ibanArb.map((value) => ({ name: 'iban', value, selected: true })),
  note.map((value) => ({ name: 'note', value, selected: false })),
  fc.integer({ min: 0, max: 999999 }).map((n) => ({ name: 'salary', value: String(n), selected: false })),
  fc.date({ min: new Date('1900-01-01'), max: new Date('2030-12-31'), noInvalidDate: true }).map((d) => ({ name: 'dateOfBirth', value: d.toISOString().slice(0, 10), selected: false })),
);

/** Rows of unique field names (one value per column). */
export const rowsArb: fc.Arbitrary<Row[]> = fc.array(fc.uniqueArray(fieldArb, { minLength: 1, maxLength: 6, selector: (f) => f.name }), { minLength: 1, maxLength: 4 });

/** Selected values of the rows, plus values of detected kinds the scanner finds in free text. */
export function selectedOf(rows: readonly Row[]): string[] {
  const out: string[] = [];
  for (const row of rows) {
    for (const f of row) {
      if (f.selected) out.push(f.value);
      else if (f.name === 'note') for (const s of scanner.scan(f.value)) out.push(f.value.slice(s.start, s.end));
    }
  }
  return out;
}

/** Characters that break syntax in every data type, and odd ones for the readers. */
const HOSTILE = [...'<>&;"\'`\\/{}[](),:=*#-\n\r\t \u0000\u00a0\u2028\ufeff\ud800é😀0123456789aZ@.$%!?|'];
const hostileChar = fc.constantFrom(...HOSTILE);
/** One edit: insert, delete or replace characters at a position (a fraction of the length). */
const edit = fc.tuple(fc.constantFrom('insert', 'delete', 'replace', 'duplicate'), fc.double({ min: 0, max: 1, noNaN: true }), fc.array(hostileChar, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 8 }));

export function damage(text: string, edits: readonly (readonly [string, number, string[], number])[]): string {
  let out = text;
  for (const [kind, where, chars, span] of edits) {
    const at = Math.min(out.length, Math.floor(where * out.length));
    if (kind === 'insert') out = out.slice(0, at) + chars.join('') + out.slice(at);
    else if (kind === 'delete') out = out.slice(0, at) + out.slice(at + span);
    else if (kind === 'replace') out = out.slice(0, at) + chars.join('') + out.slice(at + chars.length);
    else out = out.slice(0, at) + out.slice(at, at + span * 4) + out.slice(at);
  }
  return out;
}

/**
 * Inputs for one data type: well-formed documents (with their oracle), the same damaged by a few
 * edits, and raw hostile text.
 */
export function documentArb(write: (rows: readonly Row[]) => string, dialect?: string): fc.Arbitrary<DocumentInput> {
  const base = (i: DocumentInput): DocumentInput => (dialect === undefined ? i : { ...i, dialect });
  return fc.oneof(
    { weight: 4, arbitrary: rowsArb.map((rows) => base({ text: write(rows), selected: selectedOf(rows) })) },
    { weight: 4, arbitrary: fc.tuple(rowsArb, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([rows, edits]) => base({ text: damage(write(rows), edits), selected: [] })) },
    { weight: 1, arbitrary: fc.array(hostileChar, { maxLength: 64 }).map((cs) => base({ text: cs.join(''), selected: [] })) },
  );
}

function run(type: DataSetType, jobType: JobType, input: DocumentInput, text: string): string {
  const spec = job('customer', jobType, input.dialect ? { sqlDialect: input.dialect } : {}, type);
  return engine.protectDocument(spec, text).dataSet as string;
}

/**
 * The invariants every codec keeps on every input: a refusal comes from the error catalogue; Mask
 * leaves no selected value in clear; what Pseudonymise or Encrypt accept, Reconstruct or Decrypt
 * take back to `canonical(text)` — the exact bytes for every type but LIST, which writes every
 * table it rewrites in its own quoting and line ends.
 */
export function checkDocument(type: DataSetType, input: DocumentInput, canonical: (text: string) => string = (t) => t, differs?: (back: string, forward: 'Pseudonymise' | 'Encrypt') => string): void {
  const masked = refusedOr(() => run(type, 'Mask', input, input.text));
  if (masked !== undefined) {
    for (const v of input.selected) assert.ok(!masked.includes(v), `Mask left a selected value in clear (${v.length} characters)`);
  } else {
    assert.equal(input.selected.length === 0 || type === 'SQL', true, 'a well-formed document was refused');
  }
  for (const [forward, reverse] of [
    ['Pseudonymise', 'Reconstruct'],
    ['Encrypt', 'Decrypt'],
  ] as const) {
    const out = refusedOr(() => run(type, forward, input, input.text));
    if (out === undefined) continue;
    // Once the forward job accepted the document, its reverse must take it back, refusing nothing.
    const back = run(type, reverse, input, out);
    if (back === input.text) continue;
    const expected = canonical(input.text);
    // `differs` may classify a difference as a known issue (it throws KnownIssue) before the assertion.
    if (back !== expected && differs !== undefined) differs(back, forward);
    assert.equal(back, expected, `${forward} → ${reverse} did not give back the input`);
  }
}
