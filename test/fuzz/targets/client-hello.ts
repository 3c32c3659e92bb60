// The transparent listener's ClientHello reader (src/proxy/transparent/client-hello.ts): hellos
// built field by field (session ids, suites, extensions, server_name lists, ECH), split across
// records of random sizes, damaged, cut short, and raw bytes. Never throws; a hello split any way
// reads the same; every strict prefix of a well-formed hello is `need-more`.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseClientHello } from '../../../src/proxy/transparent/client-hello.ts';
import type { FuzzTarget } from '../harness.ts';

const u16 = (n: number): Buffer => Buffer.from([(n >> 8) & 255, n & 255]);
const vec16 = (b: Buffer): Buffer => Buffer.concat([u16(b.length), b]);

interface Hello {
  names: string[];
  echo: boolean;
  sessionId: number;
  suites: number;
  extra: number[];
  records: number[];
  edits: [number, number][];
  cut: number;
}

function helloBytes(h: Hello): { message: Buffer; wire: Buffer } {
  const exts: Buffer[] = [];
  if (h.names.length > 0) {
    const list = Buffer.concat(h.names.map((n) => Buffer.concat([Buffer.from([0]), vec16(Buffer.from(n, 'latin1'))])));
    exts.push(Buffer.concat([u16(0), vec16(vec16(list))]));
  }
  if (h.echo) exts.push(Buffer.concat([u16(0xfe0d), vec16(Buffer.alloc(8, 7))]));
  for (const t of h.extra) exts.push(Buffer.concat([u16(t), vec16(Buffer.alloc(t % 5, 1))]));
  const body = Buffer.concat([
    Buffer.from([3, 3]),
    Buffer.alloc(32, 9),
    Buffer.from([h.sessionId]),
    Buffer.alloc(h.sessionId, 2),
    vec16(Buffer.alloc(h.suites * 2, 0x13)),
    Buffer.from([1, 0]),
    vec16(Buffer.concat(exts)),
  ]);
  const message = Buffer.concat([Buffer.from([1, (body.length >> 16) & 255, (body.length >> 8) & 255, body.length & 255]), body]);
  const records: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < message.length; i++) {
    const size = Math.max(1, h.records[i % Math.max(1, h.records.length)] ?? message.length);
    const piece = message.subarray(at, at + size);
    records.push(Buffer.concat([Buffer.from([22, 3, 1]), u16(piece.length), piece]));
    at += piece.length;
  }
  const wire = Buffer.concat(records);
  for (const [pos, byte] of h.edits) wire[pos % wire.length] = byte;
  return { message, wire };
}

const helloArb: fc.Arbitrary<Hello> = fc.record({
  names: fc.array(fc.oneof(fc.constantFrom('api.example', 'API.Example.', 'a', '', 'x'.repeat(256), 'é.example', 'a b', 'xn--nxasmq6b'), fc.string({ maxLength: 10 })), { maxLength: 2 }),
  echo: fc.boolean(),
  sessionId: fc.constantFrom(0, 32),
  suites: fc.integer({ min: 0, max: 4 }),
  extra: fc.array(fc.constantFrom(0, 10, 13, 43, 51, 0xfe0d, 65281), { maxLength: 4 }),
  records: fc.array(fc.integer({ min: 1, max: 400 }), { maxLength: 4 }),
  edits: fc.oneof({ weight: 3, arbitrary: fc.constant([] as [number, number][]) }, { weight: 1, arbitrary: fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 3 }) }),
  cut: fc.nat(),
});

export const clientHelloTarget: FuzzTarget<Hello | Buffer> = {
  name: 'client-hello',
  covers: 'transparent listener ClientHello reader (src/proxy/transparent/client-hello.ts): parseClientHello over split, cut and damaged hellos',
  arbitrary: fc.oneof({ weight: 5, arbitrary: helloArb }, { weight: 1, arbitrary: fc.uint8Array({ maxLength: 80 }).map((u) => Buffer.from(u)) }),
  check(input) {
    if (Buffer.isBuffer(input)) {
      parseClientHello(input);
      return;
    }
    const { wire, message } = helloBytes(input);
    const whole = parseClientHello(wire);
    // The same message in one record reads the same as split across many.
    if (input.edits.length === 0) {
      const one = parseClientHello(Buffer.concat([Buffer.from([22, 3, 1]), u16(message.length), message]));
      if (message.length <= 16384) assert.deepEqual(whole, one, 'a split hello reads differently');
      assert.equal(parseClientHello(wire.subarray(0, input.cut % wire.length)).kind, 'need-more', 'a cut hello is not need-more');
    }
    if (whole.kind === 'hello' && whole.serverName !== undefined) assert.ok(/^[a-z0-9._-]{1,255}$/.test(whole.serverName), 'a server name outside DNS characters');
  },
  cost: 0.5,
};

export default clientHelloTarget;
