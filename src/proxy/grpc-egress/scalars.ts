// The scalar field types of protobuf, as values the engine's techniques take (numbers, booleans;
// 64-bit integers beyond 2^53 as decimal strings so no digit is lost) and back to wire bytes. A
// protected value the field's type cannot hold (a masked number is a string) is reported, never
// written in some other form: the caller ends the call rather than send an altered type upstream.

import type { Scalar } from '../../core/types.ts';
import { varint, WireError, WireType, zigzagDecode, zigzagEncode, type WireReader } from './wire.ts';

export type NumericKind =
  | 'int32'
  | 'int64'
  | 'uint32'
  | 'uint64'
  | 'sint32'
  | 'sint64'
  | 'fixed32'
  | 'fixed64'
  | 'sfixed32'
  | 'sfixed64'
  | 'float'
  | 'double'
  | 'bool';

export type ScalarKind = NumericKind | 'string' | 'bytes' | 'enum';

const NUMERIC: ReadonlySet<string> = new Set([
  'int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64', 'float', 'double', 'bool',
]);

export function isNumericKind(kind: string): kind is NumericKind {
  return NUMERIC.has(kind);
}

/** The wire type a single (unpacked) value of the kind is written with. */
export function wireTypeOf(kind: ScalarKind): WireType {
  switch (kind) {
    case 'string':
    case 'bytes':
      return WireType.Len;
    case 'fixed32':
    case 'sfixed32':
    case 'float':
      return WireType.I32;
    case 'fixed64':
    case 'sfixed64':
    case 'double':
      return WireType.I64;
    default:
      return WireType.Varint;
  }
}

/** A 64-bit integer as the engine takes it: a number when exact, else its decimal digits. */
function integer(v: bigint): number | string {
  return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString();
}

/** Reads one value of a numeric kind at the cursor (wire type already checked). */
export function readNumeric(kind: NumericKind, r: WireReader): Scalar {
  switch (kind) {
    case 'int32':
      return Number(BigInt.asIntN(32, r.uint64()));
    case 'int64':
      return integer(BigInt.asIntN(64, r.uint64()));
    case 'uint32':
      return Number(BigInt.asUintN(32, r.uint64()));
    case 'uint64':
      return integer(r.uint64());
    case 'sint32':
      return Number(BigInt.asIntN(32, zigzagDecode(r.uint64())));
    case 'sint64':
      return integer(zigzagDecode(r.uint64()));
    case 'bool':
      return r.uint64() !== 0n;
    case 'fixed32':
      return r.buf.readUInt32LE(r.fixed(4));
    case 'sfixed32':
      return r.buf.readInt32LE(r.fixed(4));
    case 'float':
      return r.buf.readFloatLE(r.fixed(4));
    case 'fixed64':
      return integer(r.buf.readBigUInt64LE(r.fixed(8)));
    case 'sfixed64':
      return integer(r.buf.readBigInt64LE(r.fixed(8)));
    case 'double':
      return r.buf.readDoubleLE(r.fixed(8));
  }
}

const RANGES: Record<string, readonly [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

// Canonical decimals only: `0123` would lose its zero as a number, and Reconstruct could not undo that.
const DECIMAL = /^-?(?:0|[1-9]\d{0,19})$/;

/** An integer a protected value stands for, or undefined when it is none (a masked `***42`). */
function integerOf(value: Scalar, kind: NumericKind): bigint | undefined {
  let v: bigint;
  if (typeof value === 'number' && Number.isInteger(value)) v = BigInt(value);
  else if (typeof value === 'string' && DECIMAL.test(value)) v = BigInt(value);
  else return undefined;
  const [min, max] = RANGES[kind]!;
  return v < min || v > max ? undefined : v;
}

/** The wire bytes of one numeric value (no tag), or undefined when the kind cannot hold it. */
export function encodeNumeric(kind: NumericKind, value: Scalar): Buffer | undefined {
  switch (kind) {
    case 'bool':
      return typeof value === 'boolean' ? Buffer.from([value ? 1 : 0]) : undefined;
    case 'float':
    case 'double': {
      if (typeof value !== 'number') return undefined;
      const out = Buffer.alloc(kind === 'float' ? 4 : 8);
      if (kind === 'float') out.writeFloatLE(value);
      else out.writeDoubleLE(value);
      return out;
    }
  }
  const v = integerOf(value, kind);
  if (v === undefined) return undefined;
  switch (kind) {
    case 'sint32':
    case 'sint64':
      return varint(zigzagEncode(v));
    case 'fixed32':
    case 'sfixed32': {
      const out = Buffer.alloc(4);
      out.writeUInt32LE(Number(BigInt.asUintN(32, v)));
      return out;
    }
    case 'fixed64':
    case 'sfixed64': {
      const out = Buffer.alloc(8);
      out.writeBigUInt64LE(BigInt.asUintN(64, v));
      return out;
    }
    default:
      // int32 negatives are sign-extended to ten bytes, as every protobuf writer does.
      return varint(BigInt.asUintN(64, v));
  }
}

/** Throws when a packed run does not end exactly where its length says. */
export function checkPackedEnd(r: WireReader, end: number): void {
  if (r.pos !== end) throw new WireError(`packed field overruns its length at byte ${r.pos}`);
}
