// Hand-written protobuf codec for the one hot message pair, ProtectValuesRequest → ProtectValuesResponse
// (proto/gateway.proto). Rows decode straight into string[][] and encode from it, skipping the object
// graph protobufjs would build per cell; everything else goes through @grpc/proto-loader.

/** JobConfig with proto3 defaults applied: an absent string is '', an absent number 0, a bool false. */
export interface JobConfigMessage {
  configuration_name: string;
  job_type: string;
  dataset_type: string;
  data_owning_country_code: string;
  country_code: string;
  data_usage_id: number;
  third_party_id: number;
  execution_context: string;
  silent_mode: boolean;
  matching_rule: { claims: { attribute_name: string; attribute_value: string }[] } | undefined;
  protect_null_values: boolean;
  preserve_string_length: boolean;
  use_restricted_text: boolean;
  restricted_text: string;
  is_data_consistent_across_organization: boolean;
  snapshot_date: string;
  api_type: string;
}

export interface DecodedProtectValuesRequest {
  readonly request_id: string;
  /** undefined when the field is absent from the message. */
  readonly job_config: JobConfigMessage | undefined;
  readonly labels: string[];
  /** One string per ColumnData; an unset `value` oneof decodes as ''. */
  readonly rows: string[][];
  /** Why the bytes are not a ProtectValuesRequest (offset and wire detail only, never content). */
  readonly malformed?: string;
  /** Set when the message holds more rows than allowed; decoding stopped there. */
  readonly tooManyRows?: boolean;
  /** The message's size on the wire (set by the service definition; counted by overload shedding). */
  readonly wireBytes?: number;
}

export interface DecodeOptions {
  /** Decoding stops and `tooManyRows` is set once a message holds more rows than this. */
  readonly maxRows: number;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** Thrown inside the decoder only; turned into `malformed` at its edge. */
class WireError extends Error {}

export function emptyJobConfig(): JobConfigMessage {
  return {
    configuration_name: '',
    job_type: '',
    dataset_type: '',
    data_owning_country_code: '',
    country_code: '',
    data_usage_id: 0,
    third_party_id: 0,
    execution_context: '',
    silent_mode: false,
    matching_rule: undefined,
    protect_null_values: false,
    preserve_string_length: false,
    use_restricted_text: false,
    restricted_text: '',
    is_data_consistent_across_organization: false,
    snapshot_date: '',
    api_type: '',
  };
}

/** A cursor over one message's bytes; `end` bounds the current (sub)message. */
class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint as an unsigned number; up to 10 bytes, precise up to 2^53. */
  varint(): number {
    const buf = this.buf;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      const b = buf[this.pos++];
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    throw new WireError(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  /** int32 as proto3 writes it: negative values are sign-extended to 10 bytes; keep the low 32 bits. */
  int32(): number {
    const buf = this.buf;
    let result = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      const b = buf[this.pos++];
      if (i < 5) result |= (b & 0x7f) << (7 * i);
      if (b < 0x80) return result | 0;
    }
    throw new WireError(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  /** Bounds of a length-delimited field's payload; advances past it. */
  lengthDelimited(): number {
    const len = this.varint();
    const start = this.pos;
    if (len > this.end - start) throw new WireError(`length ${len} at byte ${start} runs past the message end`);
    this.pos = start + len;
    return start;
  }

  string(): string {
    const start = this.lengthDelimited();
    return utf8(this.buf, start, this.pos);
  }

  skip(wireType: number, at: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_FIXED64:
        this.advance(8, at);
        return;
      case WIRE_LEN:
        this.lengthDelimited();
        return;
      case WIRE_FIXED32:
        this.advance(4, at);
        return;
      default:
        throw new WireError(`unsupported wire type ${wireType} at byte ${at}`);
    }
  }

  private advance(n: number, at: number): void {
    if (n > this.end - this.pos) throw new WireError(`truncated field at byte ${at}`);
    this.pos += n;
  }
}

/**
 * Short ASCII strings (the common cell) are cheapest as latin1; anything else goes through the
 * UTF-8 decoder, which replaces invalid sequences with U+FFFD like protobufjs does.
 */
function utf8(buf: Buffer, start: number, end: number): string {
  if (end - start <= 64) {
    for (let i = start; i < end; i++) if (buf[i] >= 0x80) return buf.toString('utf8', start, end);
    return buf.toString('latin1', start, end);
  }
  return buf.toString('utf8', start, end);
}

/** Reads a field key; returns [fieldNumber, wireType] packed as fieldNumber * 8 + wireType. */
function key(r: Reader): number {
  const k = r.varint();
  if (k < 8) throw new WireError(`invalid field number 0 at byte ${r.pos}`);
  return k;
}

function expectWire(wireType: number, wanted: number, field: string, at: number): void {
  if (wireType !== wanted) throw new WireError(`field ${field} has wire type ${wireType} at byte ${at}`);
}

/**
 * Decodes a ProtectValuesRequest. Never throws: bytes that are not a valid message come back with
 * `malformed` set, so the handler can answer INVALID_ARGUMENT after authenticating the caller.
 * Unknown fields are skipped (proto3); a repeated embedded message merges as protobuf requires.
 */
export function decodeProtectValuesRequest(buf: Buffer, options: DecodeOptions): DecodedProtectValuesRequest {
  let request_id = '';
  let job_config: JobConfigMessage | undefined;
  const labels: string[] = [];
  const rows: string[][] = [];
  const r = new Reader(buf, 0, buf.length);
  try {
    while (r.pos < r.end) {
      const at = r.pos;
      const k = key(r);
      const field = k >>> 3;
      const wireType = k & 7;
      if (field === 4) {
        expectWire(wireType, WIRE_LEN, 'rows', at);
        if (rows.length >= options.maxRows) return { request_id, job_config, labels, rows, tooManyRows: true };
        const start = r.lengthDelimited();
        rows.push(decodeRow(buf, start, r.pos));
      } else if (field === 3) {
        expectWire(wireType, WIRE_LEN, 'labels', at);
        labels.push(r.string());
      } else if (field === 2) {
        expectWire(wireType, WIRE_LEN, 'job_config', at);
        const start = r.lengthDelimited();
        job_config ??= emptyJobConfig();
        decodeJobConfig(buf, start, r.pos, job_config);
      } else if (field === 1) {
        expectWire(wireType, WIRE_LEN, 'request_id', at);
        request_id = r.string();
      } else r.skip(wireType, at);
    }
  } catch (err) {
    if (!(err instanceof WireError)) throw err;
    return { request_id, job_config, labels, rows, malformed: err.message };
  }
  return { request_id, job_config, labels, rows };
}

function decodeRow(buf: Buffer, start: number, end: number): string[] {
  const cells: string[] = [];
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const at = r.pos;
    const k = key(r);
    if (k >>> 3 === 1) {
      expectWire(k & 7, WIRE_LEN, 'RowData.columns', at);
      const cellStart = r.lengthDelimited();
      cells.push(decodeCell(buf, cellStart, r.pos));
    } else r.skip(k & 7, at);
  }
  return cells;
}

function decodeCell(buf: Buffer, start: number, end: number): string {
  // Fast path: exactly one string_value with a one-byte length (tag 0x0a, len < 128).
  if (end - start >= 2 && buf[start] === 0x0a && buf[start + 1] < 0x80 && start + 2 + buf[start + 1] === end) {
    return utf8(buf, start + 2, end);
  }
  let value = '';
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const at = r.pos;
    const k = key(r);
    if (k >>> 3 === 1) {
      expectWire(k & 7, WIRE_LEN, 'ColumnData.string_value', at);
      value = r.string(); // last one wins, as for any proto3 scalar
    } else r.skip(k & 7, at);
  }
  return value;
}

function decodeJobConfig(buf: Buffer, start: number, end: number, jc: JobConfigMessage): void {
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const at = r.pos;
    const k = key(r);
    const field = k >>> 3;
    const wireType = k & 7;
    const str = (name: string): string => {
      expectWire(wireType, WIRE_LEN, `JobConfig.${name}`, at);
      return r.string();
    };
    const num = (name: string): number => {
      expectWire(wireType, WIRE_VARINT, `JobConfig.${name}`, at);
      return r.int32();
    };
    const bool = (name: string): boolean => {
      expectWire(wireType, WIRE_VARINT, `JobConfig.${name}`, at);
      return r.varint() !== 0;
    };
    switch (field) {
      case 1: jc.configuration_name = str('configuration_name'); break;
      case 2: jc.job_type = str('job_type'); break;
      case 3: jc.dataset_type = str('dataset_type'); break;
      case 4: jc.data_owning_country_code = str('data_owning_country_code'); break;
      case 5: jc.country_code = str('country_code'); break;
      case 6: jc.data_usage_id = num('data_usage_id'); break;
      case 7: jc.third_party_id = num('third_party_id'); break;
      case 8: jc.execution_context = str('execution_context'); break;
      case 9: jc.silent_mode = bool('silent_mode'); break;
      case 10: {
        expectWire(wireType, WIRE_LEN, 'JobConfig.matching_rule', at);
        const s = r.lengthDelimited();
        jc.matching_rule ??= { claims: [] };
        decodeMatchingRule(buf, s, r.pos, jc.matching_rule.claims);
        break;
      }
      case 11: jc.protect_null_values = bool('protect_null_values'); break;
      case 12: jc.preserve_string_length = bool('preserve_string_length'); break;
      case 13: jc.use_restricted_text = bool('use_restricted_text'); break;
      case 14: jc.restricted_text = str('restricted_text'); break;
      case 15: jc.is_data_consistent_across_organization = bool('is_data_consistent_across_organization'); break;
      case 16: jc.snapshot_date = str('snapshot_date'); break;
      case 17: jc.api_type = str('api_type'); break;
      default: r.skip(wireType, at);
    }
  }
}

function decodeMatchingRule(
  buf: Buffer,
  start: number,
  end: number,
  claims: { attribute_name: string; attribute_value: string }[],
): void {
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const at = r.pos;
    const k = key(r);
    if (k >>> 3 !== 1) {
      r.skip(k & 7, at);
      continue;
    }
    expectWire(k & 7, WIRE_LEN, 'MatchingRule.claims', at);
    const s = r.lengthDelimited();
    const claim = { attribute_name: '', attribute_value: '' };
    const cr = new Reader(buf, s, r.pos);
    while (cr.pos < cr.end) {
      const cat = cr.pos;
      const ck = key(cr);
      const f = ck >>> 3;
      if (f === 1 || f === 2) {
        expectWire(ck & 7, WIRE_LEN, f === 1 ? 'Claim.attribute_name' : 'Claim.attribute_value', cat);
        if (f === 1) claim.attribute_name = cr.string();
        else claim.attribute_value = cr.string();
      } else cr.skip(ck & 7, cat);
    }
    claims.push(claim);
  }
}

function varintLength(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
  return pos;
}

/** Growable output buffer: sized from character counts, grown only for multi-byte text. */
class Writer {
  buf: Buffer;
  pos = 0;
  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 64));
  }
  ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + extra));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  /**
   * Writes `tag len` before content already written at `contentStart + reserved`; moves the content
   * when the length needs more than the `reserved - 1` bytes that were kept for it.
   */
  closeLengthDelimited(headerAt: number, reserved: number): void {
    const contentStart = headerAt + reserved;
    const len = this.pos - contentStart;
    const header = 1 + varintLength(len);
    if (header !== reserved) {
      this.ensure(header - reserved);
      this.buf.copyWithin(headerAt + header, contentStart, this.pos);
      this.pos += header - reserved;
    }
    this.buf[headerAt] = 0x0a; // field 1, length-delimited: the tag of every level here
    writeVarint(this.buf, headerAt + 1, len);
  }
}

/**
 * Encodes a ProtectValuesResponse from protected rows. Every cell is written with its oneof set,
 * so '' arrives as string_value '' rather than an unset value. Each level (rows, columns,
 * string_value) is field 1, so every header is 0x0a plus a length.
 */
export function encodeProtectValuesResponse(rows: readonly (readonly string[])[]): Buffer {
  let estimate = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    estimate += 4;
    for (let j = 0; j < row.length; j++) estimate += row[j].length + 6;
  }
  const w = new Writer(estimate);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    w.ensure(2);
    const rowAt = w.pos;
    w.pos += 2;
    for (let j = 0; j < row.length; j++) {
      const value = row[j];
      w.ensure(value.length * 3 + 4);
      const cellAt = w.pos;
      const textAt = cellAt + 4;
      const n = w.buf.write(value, textAt, 'utf8');
      if (n < 126) {
        // Common case: both lengths fit in one byte, the 4 reserved header bytes are exact.
        w.buf[cellAt] = 0x0a;
        w.buf[cellAt + 1] = n + 2;
        w.buf[cellAt + 2] = 0x0a;
        w.buf[cellAt + 3] = n;
        w.pos = textAt + n;
      } else {
        const inner = 1 + varintLength(n);
        const cellLen = inner + n;
        const header = 1 + varintLength(cellLen) + inner;
        w.pos = textAt + n;
        w.ensure(header - 4);
        w.buf.copyWithin(cellAt + header, textAt, textAt + n);
        let p = cellAt;
        w.buf[p++] = 0x0a;
        p = writeVarint(w.buf, p, cellLen);
        w.buf[p++] = 0x0a;
        writeVarint(w.buf, p, n);
        w.pos = cellAt + header + n;
      }
    }
    w.closeLengthDelimited(rowAt, 2);
  }
  return w.buf.subarray(0, w.pos);
}
