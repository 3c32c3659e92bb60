// CSV writing: RFC 4180 quoting applied only where a field needs it, so canonical input comes
// back byte for byte; plus a stream that writes a FlatTable (flattened JSON/XML/SQL) as CSV.

import { Readable } from 'node:stream';
import type { FlatTable } from '../codec.ts';

export interface CsvDialect {
  readonly delimiter: string;
  readonly eol: string;
  /** Write a UTF-8 byte order mark before the first row. */
  readonly bom: boolean;
}

/** RFC 4180 output for tables we create ourselves (flattened documents). */
export const RFC4180_DIALECT: CsvDialect = { delimiter: ',', eol: '\r\n', bom: false };

export const UTF8_BOM = '\ufeff';

/** Returns a function that quotes a field when it holds the delimiter, a quote or a line break. */
export function createFieldFormatter(delimiter: string): (value: string) => string {
  return quotingWhenHolding(`"\\r\\n${escapeForCharClass(delimiter)}`);
}

/**
 * The header line's formatter: also quotes a name holding any delimiter a reader may guess from
 * the header (`,` `;` tab `|`: the LIST reader's candidates, and spreadsheet importers'). Left bare,
 * a name such as `a|b` in a comma-separated table is read back as two columns under `|`, and the
 * written table no longer reads as the one that was protected.
 */
export function createHeaderFormatter(delimiter: string): (value: string) => string {
  return quotingWhenHolding(`"\\r\\n,;\\t|${escapeForCharClass(delimiter)}`);
}

/** A formatter that quotes (doubling inner quotes) a field holding any character of `charClass`. */
function quotingWhenHolding(charClass: string): (value: string) => string {
  const needsQuotes = new RegExp(`[${charClass}]`);
  return (value) => (needsQuotes.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
}

/** One row as CSV text, without a line terminator. */
export function formatCsvRow(fields: readonly string[], format: (value: string) => string, delimiter: string): string {
  let line = '';
  for (let i = 0; i < fields.length; i++) {
    if (i > 0) line += delimiter;
    line += format(fields[i]);
  }
  return line;
}

export interface FlatTableCsvOptions {
  readonly dialect?: CsvDialect;
  /** Rows joined into one output chunk (default 256): fewer, larger pushes. */
  readonly rowsPerChunk?: number;
}

/**
 * Streams a FlatTable as CSV: the header row, then each row padded or cut to the header's width
 * (a missing cell is empty). Rows are pulled lazily, so a lazy `rows` iterable stays lazy.
 */
export function createFlatTableCsvStream(table: FlatTable, options: FlatTableCsvOptions = {}): Readable {
  const dialect = options.dialect ?? RFC4180_DIALECT;
  const rowsPerChunk = options.rowsPerChunk ?? 256;
  const format = createFieldFormatter(dialect.delimiter);
  const width = table.columns.length;
  const rows = table.rows[Symbol.iterator]();
  let started = false;
  let done = false;
  return new Readable({
    read() {
      try {
        let text = '';
        if (!started) {
          started = true;
          if (dialect.bom) text += UTF8_BOM;
          text += formatCsvRow(table.columns, createHeaderFormatter(dialect.delimiter), dialect.delimiter) + dialect.eol;
        }
        for (let k = 0; k < rowsPerChunk && !done; k++) {
          const next = rows.next();
          if (next.done) {
            done = true;
            break;
          }
          text += formatCsvRow(fitRow(next.value, width), format, dialect.delimiter) + dialect.eol;
        }
        if (text.length > 0) this.push(text, 'utf8');
        if (done) this.push(null);
      } catch (err) {
        this.destroy(err as Error);
      }
    },
  });
}

/** Whole-table convenience for small results and tests. */
export function flatTableToCsv(table: FlatTable, dialect: CsvDialect = RFC4180_DIALECT): string {
  const format = createFieldFormatter(dialect.delimiter);
  const width = table.columns.length;
  let text = (dialect.bom ? UTF8_BOM : '') + formatCsvRow(table.columns, createHeaderFormatter(dialect.delimiter), dialect.delimiter) + dialect.eol;
  for (const row of table.rows) text += formatCsvRow(fitRow(row, width), format, dialect.delimiter) + dialect.eol;
  return text;
}

function fitRow(row: readonly string[], width: number): readonly string[] {
  if (row.length === width) return row;
  const fitted = row.slice(0, width);
  while (fitted.length < width) fitted.push('');
  return fitted;
}

function escapeForCharClass(ch: string): string {
  return ch.replace(/[\\\]^-]/g, '\\$&').replace('\t', '\\t');
}
