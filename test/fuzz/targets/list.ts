// LIST codec: CSV tables of customer records (header from the union of fields, cells quoted only
// when they must be), damaged ones and raw hostile text, through the engine.

import { CsvTokenizer } from '../../../src/formats/list/csv-tokenizer.ts';
import { createFieldFormatter, formatCsvRow } from '../../../src/formats/list/csv-writer.ts';
import type { FuzzTarget } from '../harness.ts';
import { checkDocument, documentArb, type DocumentInput, type Row } from './documents.ts';

const format = createFieldFormatter(',');

function writeList(rows: readonly Row[]): string {
  const header = [...new Set(rows.flatMap((r) => r.map((f) => f.name)))];
  const lines = [formatCsvRow(header, format, ',')];
  for (const row of rows) lines.push(formatCsvRow(header.map((h) => row.find((f) => f.name === h)?.value ?? ''), format, ','));
  return lines.join('\r\n') + '\r\n';
}

/**
 * The table as the codec writes every table it rewrites: the same records, each cell quoted only
 * when it must be, every line ended by the first line end seen (the codec re-serialises the table;
 * docs/reliability.md "Fuzzing"). Reconstruct gives exactly this back.
 */
function rewritten(text: string): string {
  let out = '';
  const lines: [string[], boolean][] = [];
  const tokenizer = new CsvTokenizer({ record: (fields, _line, terminated) => void lines.push([fields, terminated]) });
  tokenizer.push(Buffer.from(text, 'utf8'));
  tokenizer.end();
  const layout = tokenizer.layout;
  const delimiter = layout?.delimiter ?? ',';
  const eol = layout?.eol ?? '\n';
  const quote = createFieldFormatter(delimiter);
  if (layout?.bom) out += '\ufeff';
  for (const [fields, terminated] of lines) out += fields.map(quote).join(delimiter) + (terminated ? eol : '');
  return out;
}

export const listTarget: FuzzTarget<DocumentInput> = {
  name: 'list',
  covers: 'LIST codec (src/formats/list) through the engine: Mask, Pseudonymise→Reconstruct, Encrypt→Decrypt',
  arbitrary: documentArb(writeList),
  check: (input) => checkDocument('LIST', input, rewritten),
  cost: 4,
};

export default listTarget;
