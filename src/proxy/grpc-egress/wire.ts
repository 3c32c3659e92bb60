// The protobuf wire format (protobuf.dev/programming-guides/encoding), read and written by hand:
// the message protector must know where each field's bytes start and end so that everything it
// does not change is copied as it came, which no object-decoding library tells. Readers throw
// WireError (a position, never content) on bytes that are not a well-formed message.

export const enum WireType {
  Varint = 0,
  I64 = 1,
  Len = 2,
  StartGroup = 3,
  EndGroup = 4,
  I32 = 5,
}

/** Bytes that are not a well-formed protobuf message; the message says where, never what. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireError';
  }
}

/** A cursor over one message's bytes. */
export class WireReader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint of up to 32 significant bits (tags, lengths); longer or overlong ones are refused. */
  uint32(): number {
    const buf = this.buf;
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 5; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      const b = buf[this.pos++]!;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) {
        if (result > 0xffffffff) throw new WireError(`varint too large at byte ${this.pos - 1}`);
        return result;
      }
      shift += 7;
    }
    throw new WireError(`varint too long at byte ${this.pos}`);
  }

  /** A varint of up to 64 bits, unsigned, exactly. */
  uint64(): bigint {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      const b = buf[this.pos++]!;
      if (i < 4) lo += (b & 0x7f) * 2 ** (7 * i);
      else if (i === 4) {
        lo += (b & 0x0f) * 2 ** 28;
        hi += (b & 0x70) >> 4;
      } else hi += (b & 0x7f) * 2 ** (7 * (i - 5) + 3);
      if (b < 0x80) {
        if (i === 9 && b > 1) throw new WireError(`varint too large at byte ${this.pos - 1}`);
        return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
      }
    }
    throw new WireError(`varint too long at byte ${this.pos}`);
  }

  skipVarint(): void {
    const buf = this.buf;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      if (buf[this.pos++]! < 0x80) return;
    }
    throw new WireError(`varint too long at byte ${this.pos}`);
  }

  /** The end of a length-delimited payload starting at the cursor (after its length). */
  lenEnd(): number {
    const len = this.uint32();
    const end = this.pos + len;
    if (end > this.end) throw new WireError(`length-delimited field overruns its message at byte ${this.pos}`);
    return end;
  }

  fixed(size: 4 | 8): number {
    const start = this.pos;
    if (start + size > this.end) throw new WireError(`truncated fixed-width field at byte ${start}`);
    this.pos = start + size;
    return start;
  }

  /** Skips the value of a field whose tag was just read; groups are skipped whole (nesting bounded). */
  skip(wireType: number, fieldNumber: number, depth: number): void {
    switch (wireType) {
      case WireType.Varint:
        this.skipVarint();
        return;
      case WireType.I64:
        this.fixed(8);
        return;
      case WireType.I32:
        this.fixed(4);
        return;
      case WireType.Len:
        this.pos = this.lenEnd();
        return;
      case WireType.StartGroup:
        this.skipGroup(fieldNumber, depth + 1);
        return;
      default:
        throw new WireError(`invalid wire type ${wireType} at byte ${this.pos}`);
    }
  }

  private skipGroup(fieldNumber: number, depth: number): void {
    if (depth > MAX_WIRE_DEPTH) throw new WireError(`groups nested deeper than ${MAX_WIRE_DEPTH}`);
    for (;;) {
      if (this.pos >= this.end) throw new WireError(`unterminated group at byte ${this.pos}`);
      const tag = this.uint32();
      const wt = tag & 7;
      const n = tag >>> 3;
      if (n === 0) throw new WireError(`field number 0 at byte ${this.pos}`);
      if (wt === WireType.EndGroup) {
        if (n !== fieldNumber) throw new WireError(`mismatched end of group at byte ${this.pos}`);
        return;
      }
      this.skip(wt, n, depth);
    }
  }
}

/** Nesting bound for groups skipped as unknown fields (messages have their own, message-protector.ts). */
const MAX_WIRE_DEPTH = 100;

/** The bytes of a varint holding `value` (0 ≤ value < 2^64). */
export function varint(value: bigint | number): Buffer {
  let v = BigInt(value);
  if (v < 0n) v = BigInt.asUintN(64, v);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

/** The bytes of a length varint (a non-negative safe integer), without going through bigint. */
export function lengthVarint(value: number): Buffer {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}

export function zigzagDecode(v: bigint): bigint {
  return (v >> 1n) ^ -(v & 1n);
}

export function zigzagEncode(v: bigint): bigint {
  return BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
}
