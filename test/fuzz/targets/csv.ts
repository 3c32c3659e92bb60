// The CSV tokenizer and writer of LIST (src/formats/list/csv-tokenizer.ts, csv-writer.ts): tables
// written with every delimiter and line end, quoted cells with quotes and line breaks inside,
// damaged tables and raw bytes, fed in chunks cut anywhere (inside a multi-byte character, between
// CR and LF). Never throws but the catalogue's refusals; any chunking gives the same records; what
// the writer writes, the tokenizer reads back to the same cells.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CsvTokenizer } from '../../../src/formats/list/csv-tokenizer.ts';
import { createFieldFormatter, formatCsvRow } from '../../../src/formats/list/csv-writer.ts';
import { refusedOr, type FuzzTarget } from '../harness.ts';

const cell = fc.oneof(fc.constantFrom('', 'a', 'Jane Doe', '4111 1111 1111 1111', 'a,b', 'a;b', 'a\tb', 'a|b', 'say "hi"', 'line\nbreak', 'cr\r\nlf', ' x ', 'é😀', '\ufeff'), fc.string({ maxLength: 6 }));
const tableArb = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.array(fc.array(cell, { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 5 }), fc.constantFrom(',', ';', '\t', '|'), fc.constantFrom('\r\n', '\n'));

interface CsvInput {
  bytes: Buffer;
  /** The cells written, when the bytes are an untouched table; the delimiter it was written with. */
  table: string[][] | undefined;
  delimiter: string;
  cuts: number[];
}

function records(bytes: Buffer, cuts: readonly number[], delimiter: string | undefined): string[][] {
  const out: string[][] = [];
  const t = new CsvTokenizer({ record: (fields) => void out.push(fields) }, delimiter === undefined ? {} : { delimiter });
  let at = 0;
  for (const c of [...cuts].sort((a, b) => a - b)) {
    const to = bytes.length === 0 ? 0 : c % bytes.length;
    if (to <= at) continue;
    t.push(bytes.subarray(at, to));
    at = to;
  }
  t.push(bytes.subarray(at));
  t.end();
  return out;
}

const inputArb: fc.Arbitrary<CsvInput> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.tuple(tableArb, fc.array(fc.nat(), { maxLength: 5 }), fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 2 })).map(([[cols, rows, delimiter, eol], cuts, edits]) => {
      const format = createFieldFormatter(delimiter);
      const table = [['name', 'card', 'note', 'x'].slice(0, cols), ...rows.map((r) => r.slice(0, cols))];
      const bytes = Buffer.from(table.map((r) => formatCsvRow(r, format, delimiter)).join(eol) + eol, 'utf8');
      for (const [pos, v] of edits) bytes[pos % bytes.length] = v;
      return { bytes, table: edits.length === 0 ? table : undefined, delimiter, cuts };
    }),
  },
  { weight: 1, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 64 }), fc.array(fc.nat(), { maxLength: 4 })).map(([u, cuts]) => ({ bytes: Buffer.from(u), table: undefined, delimiter: ',', cuts })) },
);

export const csvTarget: FuzzTarget<CsvInput> = {
  name: 'csv',
  covers: 'CSV tokenizer and writer (src/formats/list/csv-tokenizer.ts, csv-writer.ts): chunked reading, write→read round trip',
  arbitrary: inputArb,
  check({ bytes, table, delimiter, cuts }) {
    const whole = refusedOr(() => records(bytes, [], undefined));
    const chunked = refusedOr(() => records(bytes, cuts, undefined));
    assert.deepEqual(chunked, whole, 'chunking changed the records (or the refusal)');
    if (table === undefined) return;
    // Told the delimiter, the tokenizer reads back exactly the cells written (the header, a
    // line of one cell, may hold none of the delimiters and leave detection nothing to go on).
    // A row of one empty cell is a blank line, which reads as a record of no fields.
    const expected = table.map((r) => (r.length === 1 && r[0] === '' ? [] : r));
    assert.deepEqual(records(bytes, cuts, delimiter), expected, 'written cells did not read back');
  },
  cost: 0.5,
};

export default csvTarget;
