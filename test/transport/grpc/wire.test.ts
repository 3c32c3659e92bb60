// The hand-written ProtectValues codec must agree byte-for-meaning with protobufjs (what any
// proto-loader client uses) on every message, and must never throw on hostile bytes.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeProtectValuesRequest, emptyJobConfig, encodeProtectValuesResponse } from '../../../src/transport/grpc/wire.ts';
import { protectValuesMethod } from './client.ts';

const serializeRequest = protectValuesMethod.requestSerialize as (m: unknown) => Buffer;
const deserializeResponse = protectValuesMethod.responseDeserialize as (b: Buffer) => { rows: { columns: { string_value?: string }[] }[] };

/** Strings across the UTF-8 length classes: empty, ASCII, multi-byte, astral, and long enough for 2- and 3-byte varints. */
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', 'x'.repeat(125), 'x'.repeat(126), 'é'.repeat(64), 'y'.repeat(20000), '😀'.repeat(40)),
);

const jobConfig = fc.record(
  {
    configuration_name: text,
    job_type: text,
    dataset_type: text,
    data_owning_country_code: text,
    country_code: text,
    data_usage_id: fc.integer({ min: -2147483648, max: 2147483647 }),
    third_party_id: fc.integer({ min: -2147483648, max: 2147483647 }),
    execution_context: text,
    silent_mode: fc.boolean(),
    matching_rule: fc.record({ claims: fc.array(fc.record({ attribute_name: text, attribute_value: text }), { maxLength: 3 }) }),
    protect_null_values: fc.boolean(),
    preserve_string_length: fc.boolean(),
    use_restricted_text: fc.boolean(),
    restricted_text: text,
    is_data_consistent_across_organization: fc.boolean(),
    snapshot_date: text,
    api_type: text,
  },
  { requiredKeys: [] },
);

const request = fc.record(
  {
    request_id: text,
    job_config: jobConfig,
    labels: fc.array(text, { maxLength: 4 }),
    rows: fc.array(fc.array(fc.option(text, { nil: undefined }), { maxLength: 4 }), { maxLength: 6 }),
  },
  { requiredKeys: [] },
);

/** protobufjs replaces lone surrogates with U+FFFD when it encodes; compare against what went on the wire. */
function wellFormed(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

describe('decodeProtectValuesRequest', () => {
  test('decodes whatever protobufjs encodes, with proto3 defaults for absent fields', () => {
    fc.assert(
      fc.property(request, (req) => {
        const wire = {
          ...req,
          rows: req.rows?.map((r) => ({ columns: r.map((v) => (v === undefined ? {} : { string_value: v })) })),
        };
        const decoded = decodeProtectValuesRequest(serializeRequest(wire), { maxRows: 1000 });
        assert.equal(decoded.malformed, undefined);
        assert.equal(decoded.request_id, wellFormed(req.request_id ?? ''));
        assert.deepEqual(decoded.labels, (req.labels ?? []).map(wellFormed));
        assert.deepEqual(decoded.rows, (req.rows ?? []).map((r) => r.map((v) => wellFormed(v ?? ''))));
        if (req.job_config === undefined) {
          assert.equal(decoded.job_config, undefined);
        } else {
          const expected = { ...emptyJobConfig() } as Record<string, unknown>;
          for (const [k, v] of Object.entries(req.job_config)) {
            expected[k] = typeof v === 'string' ? wellFormed(v) : v;
          }
          const mr = req.job_config.matching_rule;
          if (mr !== undefined) {
            expected.matching_rule = { claims: mr.claims.map((c) => ({ attribute_name: wellFormed(c.attribute_name), attribute_value: wellFormed(c.attribute_value) })) };
          }
          assert.deepEqual(decoded.job_config, expected);
        }
      }),
      { numRuns: 400 },
    );
  });

  test('never throws on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const decoded = decodeProtectValuesRequest(Buffer.from(bytes), { maxRows: 10 });
        assert.ok(Array.isArray(decoded.rows));
      }),
      { numRuns: 3000 },
    );
  });

  test('never throws on truncated or bit-flipped valid messages', () => {
    const valid = serializeRequest({
      request_id: 'r',
      job_config: { configuration_name: 'customer', job_type: 'Mask', matching_rule: { claims: [{ attribute_name: 'a', attribute_value: 'b' }] } },
      labels: ['name', 'cardNumber'],
      rows: [{ columns: [{ string_value: 'Jane' }, { string_value: '4111' }] }],
    });
    for (let cut = 0; cut < valid.length; cut++) decodeProtectValuesRequest(valid.subarray(0, cut), { maxRows: 10 });
    for (let i = 0; i < valid.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(valid);
        copy[i] ^= 1 << bit;
        decodeProtectValuesRequest(copy, { maxRows: 10 });
      }
    }
  });

  test('flags a truncated message with its offset only', () => {
    const decoded = decodeProtectValuesRequest(Buffer.from([0x22, 0x10, 0x0a, 0x05]), { maxRows: 10 });
    assert.match(decoded.malformed ?? '', /^length 16 at byte 2 runs past the message end$/);
  });

  test('stops at maxRows + 1 and flags tooManyRows', () => {
    const rows = Array.from({ length: 5 }, () => ({ columns: [{ string_value: 'v' }] }));
    const decoded = decodeProtectValuesRequest(serializeRequest({ labels: ['a'], rows }), { maxRows: 4 });
    assert.equal(decoded.tooManyRows, true);
    assert.equal(decoded.rows.length, 4);
    assert.equal(decodeProtectValuesRequest(serializeRequest({ labels: ['a'], rows }), { maxRows: 5 }).tooManyRows, undefined);
  });

  test('skips unknown fields of every wire type and merges a repeated job_config', () => {
    const known = serializeRequest({ job_config: { configuration_name: 'customer' }, labels: ['a'] });
    const extra = Buffer.from([
      0x28, 0x96, 0x01, // field 5 varint
      0x31, 1, 2, 3, 4, 5, 6, 7, 8, // field 6 fixed64
      0x3a, 0x02, 0x68, 0x69, // field 7 bytes
      0x45, 1, 2, 3, 4, // field 8 fixed32
      0x12, 0x06, 0x12, 0x04, 0x4d, 0x61, 0x73, 0x6b, // job_config again: job_type "Mask"
    ]);
    const decoded = decodeProtectValuesRequest(Buffer.concat([known, extra]), { maxRows: 10 });
    assert.equal(decoded.malformed, undefined);
    assert.equal(decoded.job_config?.configuration_name, 'customer');
    assert.equal(decoded.job_config?.job_type, 'Mask');
    assert.deepEqual(decoded.labels, ['a']);
  });

  test('rejects a known field sent with the wrong wire type', () => {
    const decoded = decodeProtectValuesRequest(Buffer.from([0x20, 0x01]), { maxRows: 10 }); // rows as varint
    assert.match(decoded.malformed ?? '', /field rows has wire type 0 at byte 0/);
  });
});

describe('encodeProtectValuesResponse', () => {
  test('protobufjs decodes exactly the rows that were encoded, empty strings included', () => {
    fc.assert(
      fc.property(fc.array(fc.array(text, { maxLength: 5 }), { maxLength: 8 }), (rows) => {
        const decoded = deserializeResponse(encodeProtectValuesResponse(rows));
        assert.deepEqual(
          decoded.rows.map((r) => r.columns.map((c) => c.string_value)),
          rows.map((r) => r.map(wellFormed)),
        );
      }),
      { numRuns: 400 },
    );
  });

  test('a row longer than 127 bytes and a 1 MB cell keep their framing', () => {
    const rows = [['a'.repeat(200), ''], ['b'.repeat(1_000_000)], Array.from({ length: 300 }, (_, i) => `€${i}`)];
    const decoded = deserializeResponse(encodeProtectValuesResponse(rows));
    assert.deepEqual(decoded.rows.map((r) => r.columns.map((c) => c.string_value)), rows);
  });
});
