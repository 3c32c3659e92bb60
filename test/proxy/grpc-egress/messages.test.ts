// gRPC message protection (src/proxy/grpc-egress/) without servers: messages encoded by protobufjs
// as a client encodes them, protected by a route phase with the real engine, framed as on the wire.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { loadGrpcMethods } from '../../../src/proxy/grpc-egress/route-descriptors.ts';
import { lengthVarint } from '../../../src/proxy/grpc-egress/wire.ts';
import { testEngine } from '../../helpers/engine.ts';
import { CHAT, FIXTURES, frame, PUT, runCall, SHOP_FILES, shopPhase, shopRoot, unframe } from './helpers.ts';

const engine = testEngine();
const testManifests = testEngine(join(FIXTURES, 'manifests'));
const root = shopRoot();
const Customer = root.lookupType('shop.v1.Customer');
const Card = root.lookupType('shop.v1.Card');
const mask = shopPhase(engine, { manifest: 'customer', jobType: 'Mask' });

const encode = (obj: Record<string, unknown>): Buffer => Buffer.from(Customer.encode(Customer.fromObject(obj)).finish());
const decode = (bytes: Buffer): Record<string, unknown> => Customer.toObject(Customer.decode(bytes), { longs: String, bytes: String }) as Record<string, unknown>;
const only = (out: Buffer): Buffer => {
  const messages = unframe(out);
  assert.equal(messages.length, 1);
  return messages[0]!.message;
};

const PERSON = {
  name: 'Jane Doe',
  email: 'jane.doe@example.com',
  cards: [{ card_number: '4111 1111 1111 1111', id: 7 }, { card_number: '5500 0000 0000 0004', id: -3 }],
  attributes: { email: 'a.b@example.com', color: 'red' },
  scores: [1, 2, 300000],
  kind: 1,
  inner: { ssn: '123-45-6789', next: { ssn: '987-65-4321' } },
  salary: 52000,
  salaries: [1, 2],
  notes: 'call 4111 1111 1111 1111 today',
  tags: ['plain', 'j@example.com'],
  cards_by_id: { k1: { card_number: '4111 1111 1111 1111', id: 1 } },
  photo: Buffer.from([0, 1, 2]),
};
const VALUES = ['Jane Doe', 'jane.doe@example.com', '4111 1111 1111 1111', '5500 0000 0000 0004', 'a.b@example.com', '123-45-6789', '987-65-4321', 'j@example.com'];

/** Unknown fields (numbers the descriptor lacks) of every wire type, a group among them. */
const UNKNOWN = Buffer.concat([
  Buffer.from([0xb8, 0x06, 0x96, 0x01]), // 103: varint 150
  Buffer.from([0xc2, 0x06, 0x03, 0x61, 0x62, 0x63]), // 104: "abc"
  Buffer.from([0xcd, 0x06, 1, 2, 3, 4]), // 105: fixed32
  Buffer.from([0xd1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]), // 106: fixed64
  Buffer.from([0xdb, 0x06, 0x08, 0x01, 0xdc, 0x06]), // 107: group { 1: 1 }
]);

test('Mask: names, oneof, nested, repeated, map values by key, detection in strings; the rest as it was', async () => {
  const { out, error } = await runCall(mask, Buffer.concat([frame(encode(PERSON)), frame(encode({ name: 'Jo Bo' }))]));
  assert.equal(error, undefined);
  const [first, second] = unframe(out);
  const got = decode(first!.message);
  assert.equal(got.name, 'J*** D**');
  assert.equal(got.email, 'j***@example.com');
  assert.deepEqual(got.cards, [{ card_number: '**** **** **** 1111', id: '7' }, { card_number: '**** **** **** 0004', id: '-3' }]);
  assert.deepEqual(got.attributes, { email: 'a***@example.com', color: 'red' });
  assert.deepEqual(got.inner, { ssn: '***-**-6789', next: { ssn: '***-**-4321' } });
  assert.equal(got.notes, 'call **** **** **** 1111 today');
  assert.deepEqual(got.tags, ['plain', '***@example.com']);
  assert.deepEqual(got.cards_by_id, { k1: { card_number: '**** **** **** 1111', id: '1' } });
  // Mask keeps salary (Keep); numbers, enums and bytes are never read by detection.
  assert.equal(got.salary, '52000');
  assert.deepEqual(got.scores, [1, 2, 300000]);
  assert.deepEqual(got.salaries, ['1', '2']);
  assert.equal(got.kind, 1);
  assert.equal(got.photo, Buffer.from([0, 1, 2]).toString('base64'));
  assert.equal(decode(second!.message).name, 'J* B*');
  for (const v of VALUES) assert.ok(!first!.message.includes(v), 'no selected value left in clear');
});

test('a message with nothing to protect comes back byte for byte, unknown fields and all', async () => {
  const bytes = Buffer.concat([encode({ scores: [5, 6], salaries: [9], kind: 1, photo: Buffer.from('x'), cards: [{ id: 4 }] }), UNKNOWN]);
  const input = frame(bytes);
  const { out, error } = await runCall(mask, input);
  assert.equal(error, undefined);
  assert.deepEqual(out, input);
});

test('every scalar type around a selected field keeps its bytes; only the selected one changes', async () => {
  const scalars = {
    d: -1.5, f: 2.25, i32: -7, i64: '-9007199254740993', u32: 4294967295, u64: '18446744073709551615', s32: -123, s64: '-9223372036854775808',
    fx32: 4000000000, fx64: '18446744073709551614', sfx32: -2, sfx64: '-5', b: true, email: 'jane.doe@example.com', raw: Buffer.from([255, 0]), kind: 1, note: 'nothing here',
  };
  const { out, error } = await runCall(mask, frame(encode({ scalars, name: 'Al' })));
  assert.equal(error, undefined);
  // protobufjs writes fields in number order; the protector keeps order, so the expected bytes are
  // the same message with only the protected values changed.
  assert.deepEqual(only(out), encode({ scalars: { ...scalars, email: 'j***@example.com' }, name: 'A*' }));
});

test('unknown fields stay in place, at the top and inside nested messages whose length changes', async () => {
  const card = Buffer.concat([Buffer.from(Card.encode(Card.fromObject({ card_number: '4111 1111 1111 1111' })).finish()), UNKNOWN]);
  const cardField = Buffer.concat([Buffer.from([0x12, card.length]), card]);
  const bytes = Buffer.concat([UNKNOWN, encode({ name: 'Jane Doe' }), cardField, UNKNOWN]);
  const { out, error } = await runCall(mask, frame(bytes));
  assert.equal(error, undefined);
  const masked = Buffer.from(Card.encode(Card.fromObject({ card_number: '**** **** **** 1111' })).finish());
  const maskedCard = Buffer.concat([masked, UNKNOWN]);
  assert.deepEqual(only(out), Buffer.concat([UNKNOWN, encode({ name: 'J*** D**' }), Buffer.from([0x12, maskedCard.length]), maskedCard, UNKNOWN]));
});

test('Pseudonymise then Reconstruct gives back the exact bytes (request and response phases)', async () => {
  const bytes = Buffer.concat([encode(PERSON), UNKNOWN]);
  const pseudonymise = shopPhase(engine, { manifest: 'customer', jobType: 'Pseudonymise' });
  const reconstruct = shopPhase(engine, { manifest: 'customer', jobType: 'Reconstruct' }, 'response');
  const there = await runCall(pseudonymise, frame(bytes), { path: CHAT });
  assert.equal(there.error, undefined);
  const got = decode(only(there.out));
  const cards = got.cards as { card_number: string }[];
  const changed = [got.name, got.email, cards[0]!.card_number, cards[1]!.card_number, (got.attributes as { email: string }).email, (got.tags as string[])[1]];
  assert.deepEqual(changed.filter((v, i) => v === [PERSON.name, PERSON.email, PERSON.cards[0]!.card_number, PERSON.cards[1]!.card_number, 'a.b@example.com', 'j@example.com'][i]), []);
  const back = await runCall(reconstruct, there.out, { path: CHAT });
  assert.equal(back.error, undefined);
  assert.deepEqual(only(back.out), bytes);
});

test('streaming: messages split at every byte come out the same as whole', async () => {
  const input = Buffer.concat([frame(encode(PERSON)), frame(encode({})), frame(encode({ name: 'Jane Doe' }))]);
  const whole = await runCall(mask, input, { path: CHAT });
  const bytewise = await runCall(mask, input, { path: CHAT, chunk: 1 });
  assert.equal(bytewise.error, undefined);
  assert.deepEqual(bytewise.out, whole.out);
  assert.equal(unframe(whole.out).length, 3);
});

test('Restrict removes fields, packed runs and map entries; Anonymise of an int64 into text ends the call', async () => {
  const restrict = shopPhase(engine, { manifest: 'customer', jobType: 'Restrict' });
  const r = await runCall(restrict, frame(encode(PERSON)));
  assert.equal(r.error, undefined);
  const got = decode(only(r.out));
  assert.equal(got.salary, undefined);
  assert.deepEqual(got.inner, { next: {} });
  assert.equal(got.name, 'Jane Doe');

  const bytes = encode({ name: 'Jane Doe', salary: 52000 });
  const anonymise = shopPhase(engine, { manifest: 'customer', jobType: 'Anonymise' });
  const a = await runCall(anonymise, Buffer.concat([frame(encode({ name: 'Al' })), frame(bytes), frame(encode({ name: 'Bo' }))]), { path: CHAT });
  assert.equal(a.error?.status, 9);
  assert.match(a.error!.grpcMessage, /^message 2: \$\.salary is of type int64/);
  assert.ok(!a.error!.grpcMessage.includes('52000') && !a.error!.grpcMessage.includes('Jane'));
  assert.equal(unframe(a.out).length, 1, 'the message before is sent, nothing of the failed one or after');
});

test('bytes, enum and packed numeric fields a rule selects: removed by Restrict, else the call ends', async () => {
  const rules = (jobType: string) => shopPhase(testManifests, { manifest: 'grpc-test', jobType });
  const r = await runCall(rules('Restrict'), frame(encode({ kind: 1, scores: [1, 2], photo: Buffer.from('a'), name: 'n', cards: [{ card_number: '4111', id: 3 }] })));
  assert.equal(r.error, undefined);
  assert.deepEqual(decode(only(r.out)), { name: 'n', cards: [{ id: '3' }] });
  for (const [obj, where] of [[{ photo: Buffer.from('ab') }, '$.photo is of type bytes'], [{ kind: 1 }, '$.kind is of type enum'], [{ scores: [1, 2] }, '$.scores[0] is of type int32']] as const) {
    const m = await runCall(rules('Mask'), frame(encode(obj)));
    assert.equal(m.error?.status, 9, where);
    assert.ok(m.error!.grpcMessage.includes(where), m.error!.grpcMessage);
    assert.equal(m.out.length, 0);
  }
  // A rule on a message field covers everything beneath it; path selectors use the .proto names.
  const m = await runCall(rules('Mask'), frame(encode({ inner: { ssn: '123-45-6789', next: { ssn: 'ab' } }, cards: [{ card_number: '4111 1111 1111 1111' }] })));
  assert.deepEqual(decode(only(m.out)), { inner: { ssn: '***-**-****', next: { ssn: '**' } }, cards: [{ card_number: '**** **** **** 1111' }] });
});

test('gzip and deflate messages are decompressed, protected and compressed again; others are refused', async () => {
  const input = frame(gzipSync(encode(PERSON)), 1);
  const { out, error } = await runCall(mask, input, { encoding: 'gzip' });
  assert.equal(error, undefined);
  const [m] = unframe(out);
  assert.equal(m!.flag, 1);
  assert.equal(decode(gunzipSync(m!.message)).name, 'J*** D**');
  // Nothing changed: the client's compressed bytes go on as they were.
  const plain = frame(gzipSync(encode({ scores: [1], notes: 'detection reads this and finds nothing' })), 1);
  assert.deepEqual((await runCall(mask, plain, { encoding: 'gzip' })).out, plain);

  const snappy = await runCall(mask, input, { encoding: 'snappy' });
  assert.equal(snappy.error?.status, 12);
  assert.equal(snappy.out.length, 0);
  const undeclared = await runCall(mask, input);
  assert.equal(undeclared.error?.status, 13);
  const bomb = await runCall(shopPhase(engine, { manifest: 'customer', jobType: 'Mask' }, 'request', 4096), frame(gzipSync(Buffer.alloc(1 << 20)), 1), { encoding: 'gzip' });
  assert.equal(bomb.error?.status, 8);
  const notGzip = await runCall(mask, frame(Buffer.from('not gzip at all'), 1), { encoding: 'gzip' });
  assert.equal(notGzip.error?.status, 13);
});

test('truncated, oversized and malformed messages end the call with a status and no payload in it', async () => {
  const good = frame(encode(PERSON));
  const truncated = await runCall(mask, Buffer.concat([good, good.subarray(0, good.length - 3)]), { path: CHAT });
  assert.equal(truncated.error?.status, 13);
  assert.match(truncated.error!.grpcMessage, /message 2 is truncated/);
  assert.equal(unframe(truncated.out).length, 1);

  const small = shopPhase(engine, { manifest: 'customer', jobType: 'Mask' }, 'request', 64);
  const big = await runCall(small, good);
  assert.equal(big.error?.status, 8);

  const cases: [string, Buffer][] = [
    ['name field cut short', Buffer.concat([Buffer.from([0x0a, 0x20]), Buffer.from('Jane Doe')])],
    ['name sent as a varint', Buffer.from([0x08, 0x01])],
    ['invalid UTF-8 in a selected string', Buffer.from([0x0a, 0x02, 0xc3, 0x28])],
    ['field number 0', Buffer.from([0x02, 0x00])],
    ['nested card overruns', Buffer.concat([Buffer.from([0x12, 0x09, 0x0a, 0x10]), Buffer.from('4111 1111')])],
    ['unterminated group', Buffer.from([0xdb, 0x06, 0x08, 0x01])],
    ['varint too long', Buffer.from([0x50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])],
  ];
  for (const [what, bytes] of cases) {
    const r = await runCall(mask, frame(bytes));
    assert.equal(r.error?.status, 13, what);
    assert.match(r.error!.grpcMessage, /^message 1 is not a valid shop\.v1\.Customer: /, what);
    assert.ok(!/Jane|4111/.test(r.error!.grpcMessage), what);
    assert.equal(r.out.length, 0, what);
  }
  const badFlag = await runCall(mask, Buffer.concat([Buffer.from([2, 0, 0, 0, 0])]));
  assert.equal(badFlag.error?.status, 13);
});

test('nesting is bounded', async () => {
  // Built by hand: protobufjs itself refuses to encode this deep.
  let inner = Buffer.from([0x0a, 0x01, 0x41]); // Inner { ssn: "A" }
  for (let i = 0; i < 120; i++) inner = Buffer.concat([Buffer.from([0x12]), lengthVarint(inner.length), inner]);
  const r = await runCall(mask, frame(Buffer.concat([Buffer.from([0x42]), lengthVarint(inner.length), inner])));
  assert.equal(r.error?.status, 13);
  assert.match(r.error!.grpcMessage, /nested deeper than 100/);
});

test('a call to a method the descriptors do not define is refused (UNIMPLEMENTED)', async () => {
  const r = await runCall(mask, frame(encode(PERSON)), { path: '/shop.v1.Customers/Delete' });
  assert.equal(r.error?.status, 12);
  assert.equal(r.out.length, 0);
});

test('descriptors: a descriptor set reads like the .proto files; errors name the file and line', () => {
  const fromFiles = loadGrpcMethods(SHOP_FILES, (p) => p === PUT);
  assert.deepEqual([...fromFiles.keys()], [PUT]);
  const dir = mkdtempSync(join(tmpdir(), 'dpg-grpc-'));
  const set = root.toDescriptor('proto3');
  const setFile = join(dir, 'shop.pb');
  writeFileSync(setFile, (set.constructor as unknown as { encode(m: unknown): { finish(): Uint8Array } }).encode(set).finish());
  const fromSet = loadGrpcMethods({ descriptorSet: setFile }, () => true);
  assert.deepEqual([...fromSet.keys()].sort(), [CHAT, PUT]);
  const fields = (m: typeof fromSet) => [...m.get(PUT)!.request.fields.values()].map((f) => [f.name, f.kind, f.repeated, f.map?.key ?? null]);
  assert.deepEqual(fields(fromSet), fields(fromFiles));

  assert.throws(() => loadGrpcMethods(SHOP_FILES, (p) => p.endsWith('/Nope')), /match\.path matches none of the 2 method\(s\)/);
  assert.throws(() => loadGrpcMethods({ protoFiles: [join(dir, 'missing.proto')] }, () => true), /file not found: .*missing\.proto/);
  const bad = join(dir, 'bad.proto');
  writeFileSync(bad, 'syntax = "proto3";\nmessage A {\n  string x = ;\n}\n');
  assert.throws(() => loadGrpcMethods({ protoFiles: [bad] }, () => true), /bad\.proto, line 3/);
  assert.throws(() => loadGrpcMethods({ protoFiles: [join(FIXTURES, 'include/common/kind.proto')] }, () => true), /define no service/);
});

test('grpc-js encodes the same bytes the tests use (a real client library)', async () => {
  // @grpc/proto-loader serialises with protobufjs too; its serializer is what a grpc-js client sends.
  const loader = await import('@grpc/proto-loader');
  const def = loader.loadSync(SHOP_FILES.protoFiles, { includeDirs: SHOP_FILES.includeDirs, keepCase: true });
  const put = (def['shop.v1.Customers'] as Record<string, { requestSerialize(v: unknown): Buffer }>).Put!;
  const bytes = put.requestSerialize({ name: 'Jane Doe', cards: [{ card_number: '4111 1111 1111 1111' }], attributes: { k: 'v' } });
  const { out } = await runCall(mask, frame(bytes));
  assert.deepEqual(decode(only(out)), { name: 'J*** D**', cards: [{ card_number: '**** **** **** 1111' }], attributes: { k: 'v' } });
});

test('map keys are never rewritten: a key that is detected personal data ends the call, or in silent mode goes with its entry', async () => {
  const input = frame(encode({ attributes: { 'jane.doe@example.com': 'gold', tier: 'silver' } }));
  const strict = await runCall(mask, input);
  assert.equal(strict.error?.status, 9);
  assert.equal(strict.error!.grpcMessage, 'message 1: 1 value(s) could not be processed');
  assert.equal(strict.out.length, 0);
  const silent = await runCall(shopPhase(engine, { manifest: 'customer', jobType: 'Mask', silentMode: true }), input);
  assert.equal(silent.error, undefined);
  assert.deepEqual(decode(only(silent.out)), { attributes: { tier: 'silver' } });
});

test('unpacked repeated numerics (proto2 style) are read one by one; a key after its value is still the key', async () => {
  const rules = shopPhase(testManifests, { manifest: 'grpc-test', jobType: 'Restrict' });
  // scores (6) as two separate varint fields, then name; Restrict removes every score.
  const unpacked = Buffer.from([0x30, 0x01, 0x30, 0x02, 0x0a, 0x01, 0x41]);
  const r = await runCall(rules, frame(unpacked));
  assert.deepEqual(only(r.out), Buffer.from([0x0a, 0x01, 0x41]));
  // attributes (3) entry written value first: { 2: "a.b@example.com", 1: "email" }
  const value = Buffer.from('a.b@example.com');
  const entry = Buffer.concat([Buffer.from([0x12, value.length]), value, Buffer.from([0x0a, 0x05]), Buffer.from('email')]);
  const m = await runCall(mask, frame(Buffer.concat([Buffer.from([0x1a, entry.length]), entry])));
  assert.deepEqual(decode(only(m.out)), { attributes: { email: 'a***@example.com' } });
});
