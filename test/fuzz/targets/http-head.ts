// The transparent listener's first look at clear bytes (src/proxy/transparent/http-head.ts):
// request lines and headers built from the pieces servers read differently (bare LF, folding,
// two Hosts, Transfer-Encoding, odd whitespace, HTTP/0.9, the h2 preface), damaged or cut short.
// Never throws; a clear head has a well-formed host and lengths inside the data, and is read the
// same from its own bytes; no prefix of a clear head is taken for another protocol.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { peekHttpHead } from '../../../src/proxy/transparent/http-head.ts';
import type { FuzzTarget } from '../harness.ts';
import { anyCodePoints } from './code-points.ts';

const MAX_HEAD = 16 * 1024;
const eol = fc.constantFrom('\r\n', '\r\n', '\n', '\r', '\r\r\n');
const sp = fc.constantFrom(' ', ' ', '  ', '\t', '\u000b', '\u00a0');
const line = fc.oneof(
  fc.constantFrom('Host: api.example', 'Host: [::1]:8080', 'host:a.b:99999', 'Host:  x ', 'Host: a b', 'Content-Length: 5', 'Content-Length: 5, 5', 'content-length:0', 'Transfer-Encoding: chunked', 'Upgrade: websocket', ' folded', 'X: é', 'X:\u0000', ': empty', 'Bad Name: x', 'Host: 127.0.0.1'),
  fc.string({ maxLength: 12 }).map((s) => `X-${s}: v`),
);
const headArb = fc
  .tuple(
    fc.constantFrom('', '\r\n', '\n', ' '),
    fc.constantFrom('GET', 'POST', 'get', 'PRI', 'M-SEARCH', 'G\u00e9T', ''),
    sp,
    fc.constantFrom('/', '/v1/customers?a=1', '*', 'http://h/x', '/a b', '/é', ''),
    fc.option(fc.tuple(sp, fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'http/1.1', 'HTTP/1.1 ')), { nil: undefined }),
    fc.array(fc.tuple(line, eol), { maxLength: 6 }),
    eol,
    eol,
    anyCodePoints(8),
  )
  .map(([lead, method, s, target, version, headers, e1, e2, body]) => {
    const requestLine = `${lead}${method}${s}${target}${version === undefined ? '' : version.join('')}${e1}`;
    return Buffer.from(requestLine + headers.map(([l, e]) => l + e).join('') + e2 + body, 'latin1');
  });
const bytesArb = fc.oneof(
  { weight: 4, arbitrary: headArb },
  { weight: 1, arbitrary: fc.constant(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u)) },
);

export const httpHeadTarget: FuzzTarget<{ data: Buffer; cut: number }> = {
  name: 'http-head',
  covers: 'transparent listener head reader (src/proxy/transparent/http-head.ts): peekHttpHead over whole and cut data',
  arbitrary: fc.record({ data: bytesArb, cut: fc.nat() }),
  check({ data, cut }) {
    const r = peekHttpHead(data, MAX_HEAD);
    const prefix = peekHttpHead(data.subarray(0, data.length === 0 ? 0 : cut % data.length), MAX_HEAD);
    if (r.kind !== 'http' || !r.clear) return;
    assert.ok(/^(?:[a-z0-9._-]+|[0-9a-f:.]+)$/.test(r.host), 'a clear head with a malformed host');
    assert.ok(r.headLength > 0 && r.headLength <= data.length && data[r.headLength - 1] === 0x0a, 'head length outside the data');
    assert.ok(Number.isSafeInteger(r.bodyLength) && r.bodyLength >= 0, 'bad body length');
    assert.deepEqual(peekHttpHead(data.subarray(0, r.headLength), MAX_HEAD), r, 'the head reads differently from its own bytes');
    assert.notEqual(prefix.kind, 'not-http', 'a prefix of a clear HTTP head was taken for another protocol');
  },
  cost: 0.3,
};

export default httpHeadTarget;
