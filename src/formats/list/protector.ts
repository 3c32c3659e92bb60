// Protects LIST (delimited text) record by record: the header names the columns, each column's
// action is resolved once, data rows are protected in small batches (one applyBatch per column)
// and written back in the input's own delimiter, line ending and byte order mark.

import { safeName } from '../../core/safe-name.ts';
import { DpgError } from '../../core/errors.ts';
import type { Scalar } from '../../core/types.ts';
import type { FieldAction, FieldResolver } from '../codec.ts';
import { CsvTokenizer, type CsvLayout, type CsvRecordSink, type CsvTokenizerOptions } from './csv-tokenizer.ts';
import { UTF8_BOM, createFieldFormatter, createHeaderFormatter } from './csv-writer.ts';

export interface ListOptions extends CsvTokenizerOptions {
  /** Data rows protected together, one applyBatch call per protected column (default 256). */
  readonly batchRows?: number;
  /**
   * Called after each batch has been protected and before its output is released; throwing stops
   * the stream (wire PreparedJob.check here so a failed value stops output at once).
   */
  readonly beforeRelease?: () => void;
}

/**
 * The value used to ask an action whether it drops a whole column: Restrict removes any value,
 * other techniques none. Cells of a kept column that an action still removes become empty.
 */
const COLUMN_REMOVAL_PROBE = 'x';

interface ProtectedColumn {
  readonly index: number;
  readonly name: string;
  readonly action: FieldAction;
}

/** Feed bytes with write(), finish with end(); each returns the output text produced so far. */
export class ListProtector implements CsvRecordSink {
  private readonly resolver: FieldResolver;
  private readonly tokenizer: CsvTokenizer;
  private readonly batchRows: number;
  private readonly beforeRelease: (() => void) | undefined;

  private started = false;
  private width = -1;
  private keptColumns: number[] = [];
  private allKept = true;
  private protectedColumns: ProtectedColumn[] = [];
  private format: (value: string) => string = (v) => v;
  private delimiter = ',';
  /** The delimiter was guessed from the header (none declared): the header must read the same way again. */
  private readonly delimiterGuessed: boolean;
  private eol = '\n';

  private batch: string[][] = [];
  private batchLines: number[] = [];
  private lastUnterminated = false;
  private out = '';
  private rowCount = 0;

  constructor(resolver: FieldResolver, options: ListOptions = {}) {
    this.resolver = resolver;
    this.tokenizer = new CsvTokenizer(this, options);
    this.batchRows = Math.max(1, options.batchRows ?? 256);
    this.beforeRelease = options.beforeRelease;
    this.delimiterGuessed = options.delimiter === undefined;
  }

  /** Data rows seen so far (header and blank lines excluded). */
  get rows(): number {
    return this.rowCount;
  }

  get layout(): CsvLayout | undefined {
    return this.tokenizer.layout;
  }

  write(chunk: Uint8Array): string {
    this.tokenizer.push(chunk);
    this.flushBatch();
    return this.takeOutput();
  }

  end(): string {
    this.tokenizer.end();
    // A table of no records keeps its byte order mark too (found by fuzzing: a lone BOM came back empty).
    if (!this.started && this.tokenizer.layout?.bom) {
      this.started = true;
      this.out += UTF8_BOM;
    }
    this.flushBatch();
    return this.takeOutput();
  }

  record(fields: string[], line: number, terminated: boolean): void {
    if (!this.started) {
      this.started = true;
      if (this.tokenizer.layout?.bom) this.out += UTF8_BOM;
    }
    if (fields.length === 0) {
      // Blank lines are not records; they are kept as they were.
      this.flushBatch();
      this.out += this.eolOf(terminated);
      return;
    }
    if (this.width < 0) {
      this.startTable(fields, line, terminated);
      return;
    }
    if (fields.length !== this.width) {
      throw new DpgError(
        'MALFORMED_DATA_SET',
        `LIST row on line ${line} has ${fields.length} cells but the header has ${this.width}`,
      );
    }
    this.rowCount++;
    this.batch.push(fields);
    this.batchLines.push(line);
    if (!terminated) this.lastUnterminated = true;
    if (this.batch.length >= this.batchRows) this.flushBatch();
  }

  private startTable(header: string[], line: number, terminated: boolean): void {
    const layout = this.tokenizer.layout;
    this.delimiter = layout?.delimiter ?? ',';
    this.eol = layout?.eol ?? '\n';
    this.format = createFieldFormatter(this.delimiter);
    this.width = header.length;
    const cache = new Map<string, FieldAction | undefined>();
    const usesPaths = this.resolver.usesPaths;
    for (let index = 0; index < header.length; index++) {
      // Surrounding spaces are layout, not part of the label ("name, email" is common).
      const name = header[index].trim();
      let action = cache.get(name);
      if (action === undefined && !cache.has(name)) {
        action = this.resolver.resolve(name, usesPaths ? name : undefined);
        cache.set(name, action);
      }
      // A header may itself be personal data (a card number as a label): the action then removes the column.
      if (action !== undefined && action.removes(COLUMN_REMOVAL_PROBE, () => `line ${line}, column ${safeName(name)}`)) continue;
      this.keptColumns.push(index);
      if (action !== undefined) this.protectedColumns.push({ index, name, action });
    }
    this.allKept = this.keptColumns.length === header.length;
    // A guessed delimiter is guessed again from this header by whoever reads the output: a name holding
    // another candidate delimiter is quoted so the guess cannot change. A declared one needs nothing more.
    this.out += this.formatRow(header, this.delimiterGuessed ? createHeaderFormatter(this.delimiter) : this.format) + this.eolOf(terminated);
  }

  private flushBatch(): void {
    const batch = this.batch;
    if (batch.length === 0) return;
    const lines = this.batchLines;
    for (const column of this.protectedColumns) protectColumn(batch, lines, column);
    this.beforeRelease?.();
    let text = '';
    const last = batch.length - 1;
    for (let r = 0; r < batch.length; r++) {
      text += this.formatRow(batch[r]);
      if (r < last || !this.lastUnterminated) text += this.eol;
    }
    this.out += text;
    this.batch = [];
    this.batchLines = [];
  }

  private formatRow(fields: readonly string[], format = this.format): string {
    const delimiter = this.delimiter;
    let line = '';
    if (this.allKept) {
      for (let i = 0; i < fields.length; i++) line += i === 0 ? format(fields[i]) : delimiter + format(fields[i]);
    } else {
      const kept = this.keptColumns;
      for (let k = 0; k < kept.length; k++) line += k === 0 ? format(fields[kept[k]]) : delimiter + format(fields[kept[k]]);
    }
    return line;
  }

  private eolOf(terminated: boolean): string {
    if (!terminated) return '';
    return this.width < 0 ? (this.tokenizer.layout?.eol ?? '\n') : this.eol;
  }

  private takeOutput(): string {
    const out = this.out;
    this.out = '';
    return out;
  }
}

/** Replaces one column's cells in place: removed cells become empty, the rest go in one batch. */
function protectColumn(batch: string[][], lines: number[], column: ProtectedColumn): void {
  const { index, name, action } = column;
  const values: Scalar[] = [];
  const rowOf: number[] = [];
  for (let r = 0; r < batch.length; r++) {
    const value = batch[r][index];
    if (action.removes(value)) batch[r][index] = '';
    else {
      values.push(value);
      rowOf.push(r);
    }
  }
  if (values.length === 0) return;
  // A header is client text (it may be an e-mail address): shown only when it is a plain name.
  const shown = safeName(name);
  const results = action.applyBatch(values, (k) => `line ${lines[rowOf[k]]}, column ${shown}`);
  for (let k = 0; k < rowOf.length; k++) batch[rowOf[k]][index] = cellText(results[k]);
}

function cellText(value: Scalar | undefined): string {
  if (typeof value === 'string') return value;
  return value === null || value === undefined ? '' : String(value);
}
