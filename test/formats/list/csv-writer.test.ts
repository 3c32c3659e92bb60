import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createFieldFormatter, formatCsvRow, flatTableToCsv } from '../../../src/formats/list/csv-writer.ts';

describe('CSV writer', () => {
  it('quotes only fields holding the delimiter, a quote or a line break', () => {
    for (const d of [',', ';', '\t', '|']) {
      const format = createFieldFormatter(d);
      assert.equal(format('plain text'), 'plain text');
      assert.equal(format(''), '');
      assert.equal(format(`a${d}b`), `"a${d}b"`);
      assert.equal(format('say "hi"'), '"say ""hi"""');
      assert.equal(format('a\nb'), '"a\nb"');
      assert.equal(format('a\rb'), '"a\rb"');
    }
    // Other candidates are plain text when they are not the delimiter.
    assert.equal(createFieldFormatter(';')('a,b|c\td'), 'a,b|c\td');
    // Regex-special delimiters are taken literally.
    assert.equal(createFieldFormatter('^')('a^b'), '"a^b"');
    assert.equal(createFieldFormatter(']')('x'), 'x');
  });

  it('formats rows and pads short table rows with empty cells', () => {
    assert.equal(formatCsvRow(['a', 'b,c', ''], createFieldFormatter(','), ','), 'a,"b,c",');
    const csv = flatTableToCsv({ columns: ['x', 'y'], rows: [['1'], ['2', '3', 'dropped']] }, { delimiter: ';', eol: '\n', bom: true });
    assert.equal(csv, '\ufeffx;y\n1;\n2;3\n');
  });
});
