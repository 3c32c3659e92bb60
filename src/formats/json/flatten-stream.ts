// Flattens a large JSON array to CSV without holding the document: elements are cut out of the
// byte stream one at a time, protected, flattened, and kept in memory up to a budget, then
// spooled to a private temp file; output (header = union of columns, then rows) starts at the end.

import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { DpgError } from '../../core/errors.ts';
import { RFC4180_DIALECT, UTF8_BOM, createFieldFormatter, createHeaderFormatter, formatCsvRow, type CsvDialect } from '../list/csv-writer.ts';
import { ColumnSet, DEFAULT_FLATTEN_LIMITS, denseRow, flattenTextRow, type FlattenLimits, type SparseRow } from './flatten.ts';

export interface JsonStreamFlattenOptions extends FlattenLimits {
  /**
   * Protects one element's JSON text before it is flattened (e.g. the JSON codec bound to the
   * request's resolver) and returns the protected text; `index` is the element's position in the
   * array. Text in and out, so numbers keep their digits into the CSV. Default: unchanged.
   */
  readonly protectElement?: (elementText: string, index: number) => string;
  /** Called once every element is protected and before any output exists (PreparedJob.finish/check). */
  readonly beforeRelease?: () => void;
  /** Bytes of one element's JSON text (default 16 MiB); more is PAYLOAD_TOO_LARGE. */
  readonly maxElementBytes?: number;
  /** Approximate bytes of flattened rows held in memory before spooling to disk (default 8 MiB). */
  readonly memoryBudgetBytes?: number;
  /** Where the spool file goes (default os.tmpdir()); it is created 0600 and always deleted. */
  readonly tempDir?: string;
  readonly dialect?: CsvDialect;
}

const DEFAULT_MAX_ELEMENT_BYTES = 16 * 1024 * 1024;
const DEFAULT_MEMORY_BUDGET = 8 * 1024 * 1024;
const OUTPUT_CHUNK_CHARS = 64 * 1024;

/**
 * Reads the whole input (a JSON array, or one object treated as a one-element array), then
 * resolves to a Readable of CSV bytes. Every parse, limit or protection error rejects the
 * promise before any output exists. The spool file is removed when the output ends or is
 * destroyed, or at once on error.
 */
export async function flattenJsonStream(input: AsyncIterable<Uint8Array | string>, options: JsonStreamFlattenOptions = {}): Promise<Readable> {
  const columns = new ColumnSet(options.maxColumns ?? DEFAULT_FLATTEN_LIMITS.maxColumns);
  const maxDepth = options.maxDepth ?? DEFAULT_FLATTEN_LIMITS.maxDepth;
  const protect = options.protectElement ?? ((elementText: string) => elementText);
  const spool = new RowSpool(options.memoryBudgetBytes ?? DEFAULT_MEMORY_BUDGET, options.tempDir ?? tmpdir());
  const splitter = new JsonArraySplitter(options.maxElementBytes ?? DEFAULT_MAX_ELEMENT_BYTES);
  try {
    let index = 0;
    const onElement = (text: string): void => {
      spool.add(flattenTextRow(protect(text, index), columns, maxDepth, `JSON array element ${index}`));
      index++;
    };
    for await (const chunk of input) {
      splitter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk, onElement);
      await spool.drain();
    }
    splitter.end(onElement);
    options.beforeRelease?.();
    await spool.finishWriting();
  } catch (err) {
    await spool.dispose();
    throw err;
  }
  return csvOutput(columns.names, spool, options.dialect ?? RFC4180_DIALECT);
}

function csvOutput(columns: readonly string[], spool: RowSpool, dialect: CsvDialect): Readable {
  const format = createFieldFormatter(dialect.delimiter);
  const width = columns.length;
  async function* lines(): AsyncGenerator<Buffer> {
    try {
      let text = (dialect.bom ? UTF8_BOM : '') + formatCsvRow(columns, createHeaderFormatter(dialect.delimiter), dialect.delimiter) + dialect.eol;
      for await (const row of spool.rows()) {
        text += formatCsvRow(denseRow(row, width), format, dialect.delimiter) + dialect.eol;
        if (text.length >= OUTPUT_CHUNK_CHARS) {
          yield Buffer.from(text, 'utf8');
          text = '';
        }
      }
      if (text.length > 0) yield Buffer.from(text, 'utf8');
    } finally {
      await spool.dispose();
    }
  }
  const output = Readable.from(lines(), { objectMode: false });
  // A consumer that destroys the stream before reading never enters the generator's finally.
  output.once('close', () => void spool.dispose());
  return output;
}

/** Flattened rows: in memory up to a budget, then appended to a temp file as JSON lines. */
class RowSpool {
  private memory: SparseRow[] = [];
  private memoryBytes = 0;
  private file: FileHandle | undefined;
  private path: string | undefined;
  private pending = '';
  private disposed = false;

  constructor(
    private readonly budget: number,
    private readonly dir: string,
  ) {}

  add(row: SparseRow): void {
    if (this.path !== undefined) {
      this.pending += JSON.stringify(row) + '\n';
      return;
    }
    this.memory.push(row);
    for (let i = 0; i < row.length; i++) this.memoryBytes += 16 + (row[i]?.length ?? 0) * 2;
    if (this.memoryBytes > this.budget) {
      // Switch to disk: everything held so far goes first, in order.
      this.path = join(this.dir, `dpg-flatten-${randomUUID()}.jsonl`);
      for (const held of this.memory) this.pending += JSON.stringify(held) + '\n';
      this.memory = [];
      this.memoryBytes = 0;
    }
  }

  /** Writes what add() queued; called between input chunks so memory stays near one chunk's rows. */
  async drain(): Promise<void> {
    if (this.path === undefined || this.pending.length === 0) return;
    this.file ??= await open(this.path, 'wx', 0o600);
    const text = this.pending;
    this.pending = '';
    await this.file.write(text);
  }

  async finishWriting(): Promise<void> {
    await this.drain();
    await this.file?.close();
    this.file = undefined;
  }

  async *rows(): AsyncGenerator<SparseRow> {
    if (this.path === undefined) {
      const rows = this.memory;
      this.memory = [];
      yield* rows;
      return;
    }
    const reader = createInterface({ input: createReadStream(this.path, 'utf8'), crlfDelay: Infinity });
    try {
      for await (const line of reader) {
        // Holes were written as null: they are missing cells.
        if (line.length > 0) yield JSON.parse(line) as SparseRow;
      }
    } finally {
      reader.close();
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.memory = [];
    this.pending = '';
    await this.file?.close().catch(() => undefined);
    this.file = undefined;
    if (this.path !== undefined) await rm(this.path, { force: true });
  }
}

const enum Phase {
  BeforeStart,
  /** Inside the top-level array, between elements. */
  InArray,
  /** After the top-level array's closing bracket: only whitespace may follow. */
  AfterEnd,
  /** The input is one object: all of it is the single element. */
  SingleObject,
}

const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const UTF8_BOM_BYTES = [0xef, 0xbb, 0xbf];

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Cuts a top-level JSON array into element texts (bytes between top-level commas), tracking
 * nesting and strings only; the JSON reader (text.ts) checks each element. Whitespace, a leading BOM and
 * arbitrary chunking are fine.
 */
export class JsonArraySplitter {
  private phase = Phase.BeforeStart;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  /** The current element has a non-space byte. */
  private hasContent = false;
  private elements = 0;
  private sawComma = false;
  private bomBytesSeen = 0;
  private offset = 0;

  constructor(private readonly maxElementBytes: number) {}

  push(chunk: Uint8Array, onElement: (text: string) => void): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let i = 0;
    let start = -1; // start of the current element's bytes in this chunk
    const n = buf.length;
    while (i < n) {
      const c = buf[i];
      if (this.phase === Phase.BeforeStart) {
        // A UTF-8 byte order mark, possibly split across chunks, is skipped; half of one is not.
        if (this.bomBytesSeen > 0 && this.bomBytesSeen < 3) {
          if (c !== UTF8_BOM_BYTES[this.bomBytesSeen]) throw this.malformed('a JSON array or object was expected');
          this.bomBytesSeen++;
          i++;
          continue;
        }
        if (this.offset + i === 0 && c === UTF8_BOM_BYTES[0]) {
          this.bomBytesSeen = 1;
          i++;
          continue;
        }
        if (isJsonSpace(c)) {
          i++;
          continue;
        }
        if (c === OPEN_BRACKET) {
          this.phase = Phase.InArray;
          i++;
          start = i;
          continue;
        }
        if (c === OPEN_BRACE) {
          this.phase = Phase.SingleObject;
          start = i;
          i = n;
          break;
        }
        throw this.malformed('a JSON array or object was expected');
      }
      if (this.phase === Phase.AfterEnd) {
        if (!isJsonSpace(c)) throw this.malformed('text after the end of the array');
        i++;
        continue;
      }
      if (this.phase === Phase.SingleObject) {
        i = n;
        break;
      }
      // InArray
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        i++;
        continue;
      }
      if (c === QUOTE) {
        this.inString = true;
        this.hasContent = true;
      } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
        this.depth++;
        this.hasContent = true;
      } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
        if (this.depth === 0) {
          if (c === CLOSE_BRACE) throw this.malformed('unbalanced brackets');
          if (this.hasContent) this.emit(buf, start < 0 ? 0 : start, i, onElement);
          else if (this.sawComma) throw this.malformed('an element is missing');
          this.phase = Phase.AfterEnd;
          i++;
          continue;
        }
        this.depth--;
      } else if (c === COMMA && this.depth === 0) {
        if (!this.hasContent) throw this.malformed('an element is missing');
        this.emit(buf, start < 0 ? 0 : start, i, onElement);
        this.sawComma = true;
        i++;
        start = i;
        continue;
      } else if (!isJsonSpace(c)) {
        this.hasContent = true;
      }
      i++;
    }
    if ((this.phase === Phase.InArray || this.phase === Phase.SingleObject) && start < n) {
      const from = start < 0 ? 0 : start;
      if (from < n) {
        this.pieces.push(buf.subarray(from, n));
        this.pieceBytes += n - from;
      }
      if (this.pieceBytes > this.maxElementBytes) throw this.tooLarge();
    }
    this.offset += n;
  }

  end(onElement: (text: string) => void): void {
    if (this.phase === Phase.SingleObject) {
      const text = Buffer.concat(this.pieces, this.pieceBytes).toString('utf8');
      this.pieces = [];
      this.pieceBytes = 0;
      onElement(text);
      this.phase = Phase.AfterEnd;
      return;
    }
    if (this.phase === Phase.BeforeStart) throw this.malformed('the input is empty');
    if (this.phase === Phase.InArray) throw this.malformed('the array is not closed');
  }

  private emit(buf: Buffer, start: number, end: number, onElement: (text: string) => void): void {
    const bytes = this.pieceBytes + end - start;
    if (bytes > this.maxElementBytes) throw this.tooLarge();
    let text: string;
    if (this.pieceBytes === 0) text = buf.toString('utf8', start, end);
    else {
      this.pieces.push(buf.subarray(start, end));
      text = Buffer.concat(this.pieces, bytes).toString('utf8');
      this.pieces = [];
      this.pieceBytes = 0;
    }
    this.hasContent = false;
    onElement(text);
    this.elements++;
  }

  private malformed(reason: string): DpgError {
    return new DpgError('MALFORMED_DATA_SET', `JSON data set does not parse near element ${this.elements}: ${reason}`);
  }

  private tooLarge(): DpgError {
    return new DpgError(
      'PAYLOAD_TOO_LARGE',
      `JSON array element ${this.elements} exceeds the limit of ${this.maxElementBytes} bytes`,
    );
  }
}
