import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as csvParse } from 'csv-parse/sync';
import { CsvTokenizer, type CsvLayout, type CsvTokenizerOptions } from '../../../src/formats/list/csv-tokenizer.ts';
import { DpgError } from '../../../src/core/errors.ts';
import { createFieldFormatter, formatCsvRow } from '../../../src/formats/list/csv-writer.ts';

interface Parsed {
  records: { fields: string[]; line: number; terminated: boolean }[];
  layout: CsvLayout | undefined;
}

/** Tokenizes `input` cut at the given byte offsets. */
function tokenize(input: string | Buffer, cuts: number[] = [], options: CsvTokenizerOptions = {}): Parsed {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const records: Parsed['records'] = [];
  const tokenizer = new CsvTokenizer({ record: (fields, line, terminated) => records.push({ fields, line, terminated }) }, options);
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    tokenizer.push(bytes.subarray(from, cut));
    from = cut;
  }
  tokenizer.end();
  return { records, layout: tokenizer.layout };
}

function fieldsOf(parsed: Parsed): string[][] {
  return parsed.records.map((r) => r.fields);
}

function expectError(fn: () => unknown, code: string, pattern: RegExp, secrets: string[] = []): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof DpgError, `expected DpgError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    for (const s of secrets) assert.ok(!err.message.includes(s), 'error message leaks content');
    return true;
  });
}

const SAMPLE =
  '\ufeffname,"e,mail",note\r\n' +
  'Zoë,"z@x.io","said ""hi""\r\nthen left"\r\n' +
  ',,\r\n' +
  '"",😀,"a\nb"\r\n' +
  'last,row,unterminated';

const SAMPLE_FIELDS = [
  ['name', 'e,mail', 'note'],
  ['Zoë', 'z@x.io', 'said "hi"\r\nthen left'],
  ['', '', ''],
  ['', '😀', 'a\nb'],
  ['last', 'row', 'unterminated'],
];

describe('CsvTokenizer', () => {
  it('parses RFC 4180 quoting, embedded line breaks, empty cells, CRLF and a BOM', () => {
    const parsed = tokenize(SAMPLE);
    assert.deepEqual(fieldsOf(parsed), SAMPLE_FIELDS);
    assert.deepEqual(parsed.layout, { delimiter: ',', eol: '\r\n', bom: true });
    assert.deepEqual(
      parsed.records.map((r) => [r.line, r.terminated]),
      [
        [1, true],
        [2, true],
        [4, true],
        [5, true],
        [7, false],
      ],
    );
  });

  it('gives the same records whichever byte offset the input is cut at', () => {
    const bytes = Buffer.from(SAMPLE, 'utf8');
    const whole = tokenize(bytes);
    for (let cut = 0; cut <= bytes.length; cut++) {
      assert.deepEqual(tokenize(bytes, [cut]), whole, `cut at ${cut}`);
    }
    const everyByte = Array.from({ length: bytes.length }, (_, i) => i);
    assert.deepEqual(tokenize(bytes, everyByte), whole);
  });

  it('detects ; tab and | from the header line, ignoring quoted candidates', () => {
    for (const d of [';', '\t', '|', ',']) {
      const text = `"a,b;c|d\te"${d}x${d}y\n1${d}2${d}3\n`;
      const parsed = tokenize(text);
      assert.equal(parsed.layout?.delimiter, d);
      assert.deepEqual(fieldsOf(parsed), [
        ['a,b;c|d\te', 'x', 'y'],
        ['1', '2', '3'],
      ]);
    }
    // No candidate on the header line: one column, comma.
    assert.equal(tokenize('single\nvalue\n').layout?.delimiter, ',');
    // An explicit delimiter wins over detection.
    assert.deepEqual(fieldsOf(tokenize('a;b,c\n', [], { delimiter: ',' })), [['a;b', 'c']]);
  });

  it('knows LF, CRLF and lone CR line endings, also when a CR ends a chunk', () => {
    assert.equal(tokenize('a,b\n1,2\n').layout?.eol, '\n');
    assert.equal(tokenize('a,b\r\n1,2\r\n', [4]).layout?.eol, '\r\n');
    const cr = tokenize('a,b\r1,2\r', [4]);
    assert.equal(cr.layout?.eol, '\r');
    assert.deepEqual(fieldsOf(cr), [
      ['a', 'b'],
      ['1', '2'],
    ]);
    assert.equal(tokenize('a,b').layout?.eol, undefined);
    assert.equal(tokenize('a,b\r').layout?.eol, '\r');
  });

  it('reports blank lines as empty records and keeps a trailing empty field', () => {
    assert.deepEqual(fieldsOf(tokenize('a,b\n\n1,\n')), [['a', 'b'], [], ['1', '']]);
    assert.deepEqual(fieldsOf(tokenize('a,b\n1,')), [
      ['a', 'b'],
      ['1', ''],
    ]);
    assert.deepEqual(fieldsOf(tokenize('')), []);
    assert.deepEqual(fieldsOf(tokenize('""')), [['']]);
  });

  it('rejects malformed quoting with a line number and no content', () => {
    expectError(() => tokenize('a,b\n"secret,x\n'), 'MALFORMED_DATA_SET', /line 2 is never closed/, ['secret']);
    expectError(() => tokenize('a,b\nsec"ret,x\n'), 'MALFORMED_DATA_SET', /quote inside an unquoted field on line 2/, ['sec']);
    expectError(() => tokenize('a,b\n1,2\n"secret"x,y\n'), 'MALFORMED_DATA_SET', /after a closing quote on line 3/, ['secret']);
  });

  it('accepts 100,000 columns and refuses one more', () => {
    const row = Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',');
    const parsed = tokenize(`${row}\n`);
    assert.equal(parsed.records[0].fields.length, 100_000);
    expectError(() => tokenize(`${row},one-more\n`), 'PAYLOAD_TOO_LARGE', /more than 100000 columns/);
  });

  it('bounds a huge single value and a huge row, whatever the chunking', () => {
    const huge = 'v'.repeat(5000);
    const options = { maxFieldBytes: 1000, maxRowBytes: 4000 };
    for (const cuts of [[], [10, 600, 1200, 3000]]) {
      expectError(() => tokenize(`a,b\nx,${huge}\n`, cuts, options), 'PAYLOAD_TOO_LARGE', /field on line 2 exceeds the limit of 1000 bytes/);
      expectError(() => tokenize(`a,b\nx,"${huge}"\n`, cuts, options), 'PAYLOAD_TOO_LARGE', /exceeds the limit of 1000 bytes/);
    }
    const wide = Array.from({ length: 10 }, () => 'w'.repeat(500)).join(',');
    expectError(() => tokenize(`h\n${wide}\n`, [], options), 'PAYLOAD_TOO_LARGE', /record starting on line 2 exceeds the limit of 4000 bytes/);
    expectError(() => tokenize(`${wide}\n`, [100, 2000], options), 'PAYLOAD_TOO_LARGE', /exceeds the limit of 4000 bytes/);
  });

  it('round-trips random tables through our writer under random chunking (property)', () => {
    const cell = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', ',', ';', '"', '\r', '\n', 'é', '😀', '|', '\t'), maxLength: 8 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((width) =>
          fc.tuple(
            fc.array(fc.array(cell, { minLength: width, maxLength: width }), { minLength: 1, maxLength: 6 }),
            fc.constantFrom(',', ';', '\t', '|'),
            fc.constantFrom('\n', '\r\n'),
            fc.array(fc.nat(), { maxLength: 6 }),
          ),
        ),
        ([rows, delimiter, eol, rawCuts]) => {
          // A single empty cell is a blank line: give such rows content so they stay records.
          const table = rows.map((r) => (r.length === 1 && r[0] === '' ? ['x'] : r));
          const format = createFieldFormatter(delimiter);
          const text = table.map((r) => formatCsvRow(r, format, delimiter) + eol).join('');
          const bytes = Buffer.from(text, 'utf8');
          const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const parsed = tokenize(bytes, cuts, { delimiter });
          assert.deepEqual(fieldsOf(parsed), table);
          assert.deepEqual(fieldsOf(parsed), csvParse(bytes, { delimiter, relax_column_count: true, skip_empty_lines: false }));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('CsvTokenizer: delimiter certainty (issue 16, class 6)', () => {
  it('blank lines before the header do not change the delimiter', () => {
    for (const lead of ['\n', '\r\n', '\r', '\n\n', '  \n', '\t\r\n']) {
      const parsed = tokenize(`${lead}name;email\nJane;x\n`);
      assert.equal(parsed.layout?.delimiter, ';', JSON.stringify(lead));
    }
    assert.equal(tokenize('\r\nname;email\r\nJane;x\r\n').layout?.eol, '\r\n');
  });

  it('with requireCertainDelimiter, a header holding two candidates is refused; one, or a declared delimiter, is read', () => {
    for (const header of ['a;b,c', 'a,b;c', 'a\tb;c', 'a|b,c', '\na;b,c', 'name email', '\n first  last ', 'sep=;\nname;email', 'SEP=,']) {
      expectError(() => tokenize(`${header}\n1;2,3\n`, [], { requireCertainDelimiter: true }), 'MALFORMED_DATA_SET', /not certain/, ['1;2']);
    }
    assert.equal(tokenize('a;"b,c"\n1;2\n', [], { requireCertainDelimiter: true }).layout?.delimiter, ';');
    assert.equal(tokenize('single\n1\n', [], { requireCertainDelimiter: true }).layout?.delimiter, ',');
    assert.equal(tokenize(' single \n1\n', [], { requireCertainDelimiter: true }).layout?.delimiter, ',');
    assert.equal(tokenize('full name,email\n1,2\n', [], { requireCertainDelimiter: true }).layout?.delimiter, ',');
    assert.deepEqual(fieldsOf(tokenize('a;b,c\n1;2,3\n', [], { requireCertainDelimiter: true, delimiter: ';' })), [['a', 'b,c'], ['1', '2,3']]);
    // Without the option the most frequent candidate still wins (the API and the CLI).
    assert.equal(tokenize('a;b;c,d\n', []).layout?.delimiter, ';');
  });

  it('property: any number of blank lines before a header with one candidate gives that candidate, at any chunking', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(',', ';', '\t', '|'),
        fc.array(fc.constantFrom('\n', '\r\n', '\r'), { maxLength: 4 }),
        fc.array(fc.nat(40), { maxLength: 4 }),
        (d, blanks, cuts) => {
          const text = `${blanks.join('')}name${d}email${d}phone\nJane${d}x${d}y\n`;
          const sorted = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
          const parsed = tokenize(text, sorted, { requireCertainDelimiter: true });
          assert.equal(parsed.layout?.delimiter, d);
          assert.deepEqual(parsed.records.filter((r) => r.fields.length > 0).map((r) => r.fields), [['name', 'email', 'phone'], ['Jane', 'x', 'y']]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
