// The gRPC ProtectValues wire decoder (src/transport/grpc/wire.ts): messages encoded by protobufjs
// (what any client sends), the same with bytes changed, cut or appended, and raw bytes. Never
// throws — a bad message comes back `malformed` (offset only, no content); an untouched message
// decodes to exactly what was encoded; the row limit holds.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeProtectValuesRequest } from '../../../src/transport/grpc/wire.ts';
import { protectValuesMethod } from '../../transport/grpc/client.ts';
import type { FuzzTarget } from '../harness.ts';

const serialize = protectValuesMethod.requestSerialize as (m: unknown) => Buffer;
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('', '4111 1111 1111 1111', 'é😀', 'x'.repeat(130)));
const messageArb = fc.record({
  request_id: text,
  job_config: fc.record({ configuration_name: text, job_type: text, dataset_type: text, silent_mode: fc.boolean(), data_usage_id: fc.integer() }, { requiredKeys: [] }),
  labels: fc.array(text, { maxLength: 3 }),
  rows: fc.array(fc.array(text, { maxLength: 3 }), { maxLength: 5 }),
});
const MAX_ROWS = 3;

interface WireInput {
  message: { request_id: string; labels: string[]; rows: string[][] } | undefined;
  bytes: Buffer;
}

const wellFormed = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');

const inputArb: fc.Arbitrary<WireInput> = fc.oneof(
  { weight: 2, arbitrary: messageArb.map((m) => ({ message: m, bytes: serialize({ ...m, rows: m.rows.map((r) => ({ columns: r.map((s) => ({ string_value: s })) })) }) })) },
  {
    weight: 3,
    arbitrary: fc.tuple(messageArb, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }), fc.nat(), fc.uint8Array({ maxLength: 6 })).map(([m, edits, cut, tail]) => {
      const b = Buffer.from(serialize({ ...m, rows: m.rows.map((r) => ({ columns: r.map((s) => ({ string_value: s })) })) }));
      for (const [pos, v] of edits) if (b.length > 0) b[pos % b.length] = v;
      return { message: undefined, bytes: Buffer.concat([b.subarray(0, b.length === 0 ? 0 : cut % (b.length + 1)), Buffer.from(tail)]) };
    }),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((u) => ({ message: undefined, bytes: Buffer.from(u) })) },
);

export const grpcWireTarget: FuzzTarget<WireInput> = {
  name: 'grpc-wire',
  covers: 'gRPC wire decoder (src/transport/grpc/wire.ts): decodeProtectValuesRequest',
  arbitrary: inputArb,
  check({ message, bytes }) {
    const d = decodeProtectValuesRequest(bytes, { maxRows: MAX_ROWS });
    assert.ok(d.rows.length <= MAX_ROWS, 'more rows than the limit');
    if (d.malformed !== undefined) assert.match(d.malformed, /byte|offset|wire|field|length|varint|truncated|end/i);
    if (message === undefined) return;
    assert.equal(d.malformed, undefined, 'a message protobufjs encoded is malformed');
    assert.equal(d.request_id, wellFormed(message.request_id));
    assert.deepEqual(d.labels, message.labels.map(wellFormed));
    assert.deepEqual(d.rows, message.rows.slice(0, MAX_ROWS).map((r) => r.map(wellFormed)));
  },
  cost: 0.5,
};

export default grpcWireTarget;
