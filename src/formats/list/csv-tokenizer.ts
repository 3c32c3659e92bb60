// Streaming RFC 4180 tokenizer: bytes in (any chunking), records out through a callback.
// Hand-written rather than csv-parse because it is the measured hot path of LIST protection.

import { DpgError } from '../../core/errors.ts';

/** Limits that keep memory bounded whatever the input; exceeding one is PAYLOAD_TOO_LARGE. */
export interface CsvLimits {
  /** Bytes of one record, quotes and delimiters included (default 16 MiB). */
  readonly maxRowBytes?: number;
  /** Bytes of one field's raw text (default 16 MiB). */
  readonly maxFieldBytes?: number;
  /** Fields in one record (default 100,000). */
  readonly maxColumns?: number;
}

export interface CsvTokenizerOptions extends CsvLimits {
  /** One of `,` `;` tab `|` (or any single ASCII character but a quote or line break); detected from the header line when absent. */
  readonly delimiter?: string;
  /**
   * Without `delimiter`: refuse (MALFORMED_DATA_SET) a header line that holds more than one of the
   * candidate delimiters outside quotes, rather than pick the most frequent. A reader that picks
   * another one (Python's Sniffer, a server configured for `;`) would see other columns.
   */
  readonly requireCertainDelimiter?: boolean;
}

/** What the tokenizer learnt about the input's layout, known once the first record is complete. */
export interface CsvLayout {
  readonly delimiter: string;
  /** The first line terminator seen; undefined when the input has none. */
  readonly eol: '\r\n' | '\n' | '\r' | undefined;
  /** The input started with a UTF-8 byte order mark (stripped from the first header name). */
  readonly bom: boolean;
}

/**
 * Receives records. `fields` is empty for a blank line. `line` is the 1-based physical line on
 * which the record starts; `terminated` is false only for a last record without a line break.
 * The array is owned by the receiver.
 */
export interface CsvRecordSink {
  record(fields: string[], line: number, terminated: boolean): void;
}

export const DEFAULT_CSV_LIMITS = {
  maxRowBytes: 16 * 1024 * 1024,
  maxFieldBytes: 16 * 1024 * 1024,
  maxColumns: 100_000,
} as const;

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const CANDIDATE_DELIMITERS = [0x2c, 0x3b, 0x09, 0x7c]; // , ; tab |

const enum State {
  /** Before the first byte of a field. */
  FieldStart,
  Unquoted,
  Quoted,
  /** Inside a quoted field, just after a quote: either an escaped quote or the closing one. */
  QuotedQuote,
  /** A CR ended a record; a following LF belongs to the same terminator. */
  AfterCr,
}

/**
 * Splits CSV bytes into records. push() chunks, then end(). Throws DpgError (MALFORMED_DATA_SET
 * or PAYLOAD_TOO_LARGE) naming a line, never content. Fields are decoded as UTF-8 only once
 * complete, so multi-byte characters may straddle chunks freely.
 */
export class CsvTokenizer {
  private readonly sink: CsvRecordSink;
  private readonly maxRowBytes: number;
  private readonly maxFieldBytes: number;
  private readonly maxColumns: number;
  private delimiter: number;
  private readonly requireCertainDelimiter: boolean;

  /** Header detection: bytes held until the first line break (and the byte after a CR) arrive. */
  private head: Buffer[] | undefined = [];
  private headBytes = 0;
  private readonly headScan = { piece: -1, offset: 0, inQuotes: false, pendingCr: false, bom: false, content: false, spaceRun: false, innerSpaces: 0, lead: '', counts: [0, 0, 0, 0] };
  private layoutValue: CsvLayout | undefined;

  private state: State = State.FieldStart;
  private fields: string[] = [];
  /** Raw bytes of the current field from earlier chunks. */
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  private fieldHasEscapedQuote = false;
  /** Bytes of the current record in earlier chunks. */
  private rowBytesBefore = 0;
  private line = 1;
  private recordLine = 1;
  private ended = false;

  constructor(sink: CsvRecordSink, options: CsvTokenizerOptions = {}) {
    this.sink = sink;
    this.maxRowBytes = options.maxRowBytes ?? DEFAULT_CSV_LIMITS.maxRowBytes;
    this.maxFieldBytes = options.maxFieldBytes ?? DEFAULT_CSV_LIMITS.maxFieldBytes;
    this.maxColumns = options.maxColumns ?? DEFAULT_CSV_LIMITS.maxColumns;
    this.delimiter = options.delimiter === undefined ? -1 : delimiterByte(options.delimiter);
    this.requireCertainDelimiter = options.requireCertainDelimiter === true;
  }

  /** Known after the first record (or at end()); undefined before. */
  get layout(): CsvLayout | undefined {
    return this.layoutValue;
  }

  push(chunk: Uint8Array): void {
    if (this.ended) throw new Error('CsvTokenizer.push after end');
    if (chunk.length === 0) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.head === undefined) {
      this.parse(buf);
      return;
    }
    this.head.push(buf);
    this.headBytes += buf.length;
    if (!this.scanHead(false)) {
      if (this.headBytes > this.maxRowBytes) throw this.rowTooLarge();
      return;
    }
    this.parseHead();
  }

  end(): void {
    if (this.ended) return;
    if (this.head !== undefined) {
      this.scanHead(true);
      this.parseHead();
    }
    this.ended = true;
    switch (this.state) {
      case State.Quoted:
        throw new DpgError(
          'MALFORMED_DATA_SET',
          `LIST data does not parse: quoted field opened on line ${this.recordLine} is never closed`,
        );
      case State.AfterCr:
        return;
      case State.FieldStart:
        // A delimiter just before the end still leaves one (empty) last field.
        if (this.fields.length === 0) return;
        this.pushField('');
        break;
      case State.Unquoted:
        this.pushField(this.takePieces().toString('utf8'));
        break;
      case State.QuotedQuote: {
        const raw = this.takePieces();
        this.pushField(this.decodeQuoted(raw, 0, raw.length - 1));
        break;
      }
    }
    this.emitRecord(false);
  }

  private parseHead(): void {
    const head = this.head ?? [];
    this.head = undefined;
    const whole = head.length === 1 ? head[0] : Buffer.concat(head, this.headBytes);
    if (whole.length > 0) this.parse(this.layoutValue?.bom ? whole.subarray(3) : whole);
  }

  /**
   * Scans the held header bytes (only those not scanned yet) for the end of the header line — the
   * first line holding more than spaces and tabs: blank lines before it are skipped, as readers
   * skip them, so they cannot change the reading — then picks the delimiter (most frequent
   * candidate outside quotes, `,` on a tie or none; with requireCertainDelimiter, more than one
   * candidate is refused) and the line terminator. Returns false while the header line is still incomplete.
   */
  private scanHead(atEnd: boolean): boolean {
    const head = this.head ?? [];
    if (this.headScan.piece < 0) {
      // The byte order mark may straddle chunks: wait for three bytes before looking.
      if (this.headBytes < 3 && !atEnd) return false;
      const first = head.length === 1 ? head[0] : Buffer.concat(head, this.headBytes);
      head.length = 0;
      head.push(first);
      this.headScan.bom = hasBom(first);
      this.headScan.piece = 0;
      this.headScan.offset = this.headScan.bom ? 3 : 0;
    }
    const scan = this.headScan;
    let eol: CsvLayout['eol'];
    let found = false;
    scanning: for (; scan.piece < head.length; scan.piece++, scan.offset = 0) {
      const buf = head[scan.piece];
      for (let i = scan.offset; i < buf.length; i++) {
        const c = buf[i];
        if (scan.pendingCr) {
          scan.pendingCr = false;
          if (scan.content) {
            eol = c === LF ? '\r\n' : '\r';
            found = true;
            break scanning;
          }
          this.restartHeader(); // a blank line before the header
          if (c === LF) continue;
        }
        if (c === QUOTE) {
          scan.inQuotes = !scan.inQuotes;
          this.noteHeaderByte(c);
        } else if (scan.inQuotes) continue;
        else if (c === LF) {
          if (scan.content) {
            eol = '\n';
            found = true;
            break scanning;
          }
          this.restartHeader();
        } else if (c === CR) scan.pendingCr = true;
        else {
          this.noteHeaderByte(c);
          const k = CANDIDATE_DELIMITERS.indexOf(c);
          if (k >= 0) scan.counts[k]++;
        }
      }
    }
    if (!found) {
      if (!atEnd) return false;
      if (scan.pendingCr) eol = '\r';
    }
    if (this.delimiter < 0) {
      const counts = scan.counts;
      const classes = counts.filter((n) => n > 0).length;
      // No candidate and a space between names (`name email`): a reader splitting on whitespace sees
      // columns. `sep=;` first: Excel takes it as the delimiter and the next line as the header.
      if (this.requireCertainDelimiter && (classes > 1 || (classes === 0 && scan.innerSpaces > 0) || scan.lead === 'sep=')) {
        throw new DpgError(
          'MALFORMED_DATA_SET',
          'LIST header line holds more than one candidate delimiter (, ; tab |), spaces between names or a sep= line: the delimiter is not certain; declare it (the route\'s delimiter)',
        );
      }
      let best = 0;
      for (let k = 1; k < counts.length; k++) if (counts[k] > counts[best]) best = k;
      this.delimiter = CANDIDATE_DELIMITERS[best];
    }
    this.layoutValue = { delimiter: String.fromCharCode(this.delimiter), eol, bom: scan.bom };
    return true;
  }

  /** A byte of the header line outside quotes (or a quote): content, and spaces between names. */
  private noteHeaderByte(c: number): void {
    const scan = this.headScan;
    if (c === 0x20 || c === 0x09) {
      if (scan.content) scan.spaceRun = true;
      return;
    }
    if (scan.lead.length < 4) scan.lead += String.fromCharCode(c | 0x20);
    if (scan.spaceRun) scan.innerSpaces++;
    scan.spaceRun = false;
    scan.content = true;
  }

  /** A blank line ended before any header byte: the header starts on the next line. */
  private restartHeader(): void {
    this.headScan.counts.fill(0);
    this.headScan.spaceRun = false;
    this.headScan.innerSpaces = 0;
    this.headScan.lead = '';
  }

  /** The state machine over one chunk; field text is sliced out of `buf` between markers. */
  private parse(buf: Buffer): void {
    const n = buf.length;
    const delim = this.delimiter;
    let i = 0;
    let fieldStart = 0;
    /** Where the current record began in this chunk (0 when it began in an earlier one). */
    let recordStart = 0;
    let state = this.state;

    while (i < n) {
      switch (state) {
        case State.AfterCr:
          if (buf[i] === LF) i++;
          recordStart = i;
          state = State.FieldStart;
          break;

        case State.FieldStart: {
          const c = buf[i];
          if (c === QUOTE) {
            state = State.Quoted;
            this.fieldHasEscapedQuote = false;
            i++;
            fieldStart = i;
            break;
          }
          if (c === delim) {
            this.pushField('');
            this.checkRow(i + 1 - recordStart);
            i++;
            break;
          }
          if (c === LF || c === CR) {
            if (this.fields.length > 0) this.pushField('');
            this.emitRecord(true);
            this.line++;
            i++;
            if (c === CR) state = State.AfterCr;
            else recordStart = i;
            break;
          }
          state = State.Unquoted;
          fieldStart = i;
          break;
        }

        case State.Unquoted: {
          let c = 0;
          while (i < n) {
            c = buf[i];
            if (c === delim || c === LF || c === CR || c === QUOTE) break;
            i++;
          }
          if (i === n) break;
          if (c === QUOTE) {
            throw new DpgError(
              'MALFORMED_DATA_SET',
              `LIST data does not parse: quote inside an unquoted field on line ${this.line}`,
            );
          }
          this.endField(buf, fieldStart, i, i - recordStart, false);
          i++;
          state = this.afterFieldEnd(c, delim);
          if (c === LF) recordStart = i;
          break;
        }

        case State.Quoted: {
          const q = buf.indexOf(QUOTE, i);
          const stop = q < 0 ? n : q;
          for (let k = i; k < stop; k++) if (buf[k] === LF) this.line++;
          if (q < 0) {
            i = n;
            break;
          }
          i = q + 1;
          state = State.QuotedQuote;
          break;
        }

        case State.QuotedQuote: {
          const c = buf[i];
          if (c === QUOTE) {
            this.fieldHasEscapedQuote = true;
            state = State.Quoted;
            i++;
            break;
          }
          if (c !== delim && c !== LF && c !== CR) {
            throw new DpgError(
              'MALFORMED_DATA_SET',
              `LIST data does not parse: text after a closing quote on line ${this.line}`,
            );
          }
          // The field's raw bytes run up to (and include) the closing quote just before i.
          this.endField(buf, fieldStart, i, i - recordStart, true);
          i++;
          state = this.afterFieldEnd(c, delim);
          if (c === LF) recordStart = i;
          break;
        }
      }
    }

    // Carry the unfinished field and record over to the next chunk.
    if (state === State.Unquoted || state === State.Quoted || state === State.QuotedQuote) {
      if (fieldStart < n) {
        this.pieces.push(buf.subarray(fieldStart, n));
        this.pieceBytes += n - fieldStart;
      }
      if (this.pieceBytes > this.maxFieldBytes) throw this.fieldTooLarge();
    }
    if (state !== State.AfterCr) {
      this.rowBytesBefore += n - recordStart;
      if (this.rowBytesBefore > this.maxRowBytes) throw this.rowTooLarge();
    }
    this.state = state;
  }

  /**
   * The state after a field closed on `c` (the delimiter, LF or CR); a line break also ends the
   * record. After LF the caller starts the next record at the following byte.
   */
  private afterFieldEnd(c: number, delim: number): State {
    if (c === delim) return State.FieldStart;
    this.emitRecord(true);
    this.line++;
    return c === CR ? State.AfterCr : State.FieldStart;
  }

  /** Closes a field whose raw bytes end at `end` (exclusive) in `buf`, after any carried pieces. */
  private endField(buf: Buffer, start: number, end: number, rowBytesHere: number, quoted: boolean): void {
    const fieldBytes = this.pieceBytes + end - start;
    if (fieldBytes > this.maxFieldBytes) throw this.fieldTooLarge();
    this.checkRow(rowBytesHere);
    let value: string;
    if (this.pieceBytes === 0) {
      value = quoted ? this.decodeQuoted(buf, start, end - 1) : buf.toString('utf8', start, end);
    } else {
      this.pieces.push(buf.subarray(start, end));
      this.pieceBytes += end - start;
      const raw = this.takePieces();
      value = quoted ? this.decodeQuoted(raw, 0, raw.length - 1) : raw.toString('utf8');
    }
    this.pushField(value);
  }

  private decodeQuoted(buf: Buffer, start: number, end: number): string {
    const text = buf.toString('utf8', start, end);
    return this.fieldHasEscapedQuote ? text.replaceAll('""', '"') : text;
  }

  private takePieces(): Buffer {
    const raw = this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces, this.pieceBytes);
    this.pieces = [];
    this.pieceBytes = 0;
    return raw;
  }

  private pushField(value: string): void {
    if (this.fields.length >= this.maxColumns) {
      throw new DpgError(
        'PAYLOAD_TOO_LARGE',
        `LIST record on line ${this.recordLine} has more than ${this.maxColumns} columns`,
      );
    }
    this.fields.push(value);
  }

  private checkRow(rowBytesHere: number): void {
    if (this.rowBytesBefore + rowBytesHere > this.maxRowBytes) throw this.rowTooLarge();
  }

  private emitRecord(terminated: boolean): void {
    const fields = this.fields;
    this.fields = [];
    this.rowBytesBefore = 0;
    const line = this.recordLine;
    this.recordLine = this.line + (terminated ? 1 : 0);
    this.sink.record(fields, line, terminated);
  }

  private rowTooLarge(): DpgError {
    return new DpgError(
      'PAYLOAD_TOO_LARGE',
      `LIST record starting on line ${this.recordLine} exceeds the limit of ${this.maxRowBytes} bytes`,
    );
  }

  private fieldTooLarge(): DpgError {
    return new DpgError(
      'PAYLOAD_TOO_LARGE',
      `LIST field on line ${this.line} exceeds the limit of ${this.maxFieldBytes} bytes`,
    );
  }
}

function hasBom(buf: Buffer): boolean {
  return buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf;
}

function delimiterByte(delimiter: string): number {
  const code = delimiter.length === 1 ? delimiter.charCodeAt(0) : -1;
  if (code < 0 || code > 0x7f || code === QUOTE || code === LF || code === CR) {
    throw new DpgError('INVALID_REQUEST', 'LIST delimiter must be one ASCII character other than a quote or line break');
  }
  return code;
}
