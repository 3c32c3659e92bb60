// Body handling of a route phase, without servers: content codings, limits, data type inference,
// forms and query parameters with the real engine.

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DpgError } from '../../src/core/errors.ts';
import { BodyAbortedError, decodeContent, encodeContent, parseContentEncoding, readBody } from '../../src/proxy/exchange/body.ts';
import { endToEndHeaders } from '../../src/proxy/exchange/headers.ts';
import { compilePhase, inferBodyKind } from '../../src/proxy/exchange/phase.ts';
import { forwardTarget } from '../../src/proxy/reading/request-target.ts';
import { parseAuthority } from '../../src/proxy/forwarding/tunnel.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const code = (c: string) => (err: unknown) => err instanceof DpgError && err.code === c;

test('content codings round-trip in order; unknown codings are refused', () => {
  const body = Buffer.from('{"a":"b"}');
  for (const header of ['gzip', 'deflate', 'br', 'gzip, br', 'identity']) {
    const codings = parseContentEncoding(header);
    assert.deepEqual(decodeContent(encodeContent(body, codings), codings, 1024), body, header);
  }
  assert.throws(() => parseContentEncoding('compress'), code('UNSUPPORTED_DATA_SET_TYPE'));
  assert.throws(() => decodeContent(Buffer.from('not gzip'), ['gzip'], 1024), code('MALFORMED_DATA_SET'));
});

test('a decompression bomb stops at the limit (413)', () => {
  const bomb = gzipSync(Buffer.alloc(1024 * 1024));
  assert.ok(bomb.length < 2048);
  assert.throws(() => decodeContent(bomb, ['gzip'], 64 * 1024), code('PAYLOAD_TOO_LARGE'));
});

test('readBody: limit, abort', async () => {
  const s = new PassThrough();
  const p = readBody(s, 4);
  s.write('12345');
  await assert.rejects(p, code('PAYLOAD_TOO_LARGE'));
  const t = new PassThrough();
  const q = readBody(t, 100);
  t.write('12');
  t.destroy();
  await assert.rejects(q, (e) => e instanceof BodyAbortedError);
});

test('data set type inference from the media type', () => {
  assert.equal(inferBodyKind('application/json'), 'JSON');
  assert.equal(inferBodyKind('application/problem+json'), 'JSON');
  assert.equal(inferBodyKind('text/xml'), 'XML');
  assert.equal(inferBodyKind('application/soap+xml'), 'XML');
  assert.equal(inferBodyKind('text/csv'), 'LIST');
  assert.equal(inferBodyKind('application/x-www-form-urlencoded'), 'FORM');
  assert.equal(inferBodyKind('text/plain'), undefined);
});

test('phase: JSON body, charset checked, bad UTF-8 refused', () => {
  const phase = compilePhase({ manifest: 'customer', jobType: 'Mask' }, engine);
  const out = phase.protectBody(Buffer.from('{"cardNumber":"4111111111111111"}'), 'application/json; charset=UTF-8', 'r1');
  assert.equal(out.body.toString(), '{"cardNumber":"************1111"}');
  assert.equal(out.outcome.valuesProtected, 1);
  assert.throws(() => phase.protectBody(Buffer.from('{}'), 'application/json; charset=latin1', 'r'), code('UNSUPPORTED_DATA_SET_TYPE'));
  assert.throws(() => phase.protectBody(Buffer.from([0x7b, 0xff, 0x7d]), 'application/json', 'r'), code('MALFORMED_DATA_SET'));
  assert.equal(phase.protectBody(Buffer.alloc(0), undefined, 'r').body.length, 0);
});

test('phase: form fields by name, duplicates and order kept, __proto__ is data', () => {
  const phase = compilePhase({ manifest: 'customer', jobType: 'Mask' }, engine);
  const out = phase.protectBody(
    Buffer.from('__proto__=x&cardNumber=4111111111111111&cardNumber=5555555555554444&salary=5'),
    'application/x-www-form-urlencoded',
    'r',
  );
  assert.equal(out.body.toString(), '__proto__=x&cardNumber=************1111&cardNumber=************4444&salary=5');
  assert.throws(() => phase.protectBody(Buffer.from('cardNumber=%E0%A4%A'), 'application/x-www-form-urlencoded', 'r'), code('MALFORMED_DATA_SET'));
  const restrict = compilePhase({ manifest: 'customer', jobType: 'Restrict' }, engine);
  assert.equal(restrict.protectBody(Buffer.from('a=1&salary=50000&b=2'), 'application/x-www-form-urlencoded', 'r').body.toString(), 'a=1&b=2');
});

test('phase: only the selected query parameters are protected', () => {
  const phase = compilePhase({ manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] }, engine);
  const q = phase.protectQuery('cardNumber=4111111111111111&phone=5551234567&x=%20', 'r');
  assert.equal(q.query, 'cardNumber=************1111&phone=5551234567&x=%20');
  assert.equal(q.valuesProtected, 1);
});

test('phase config is validated once, with the same rules as every door', () => {
  assert.throws(() => compilePhase({ manifest: 'customer', jobType: 'Scramble' }, engine), code('INVALID_REQUEST'));
  assert.throws(() => compilePhase({ manifest: 'customer', jobType: 'Mask', countryCode: 'USA' }, engine), code('INVALID_REQUEST'));
});

test('hop-by-hop headers, including Connection-listed ones, are dropped', () => {
  const h = endToEndHeaders({ connection: 'keep-alive, x-hop', 'x-hop': '1', 'keep-alive': 't=5', te: 'trailers', 'x-end': '2', host: 'a' }, 'b');
  assert.deepEqual({ ...h }, { 'x-end': '2', host: 'b' });
});

test('request targets: absolute-form is read canonically (issue 8: fragments refused, dot segments resolved); CONNECT authorities', () => {
  const target = (url: string) => {
    const r = forwardTarget(url);
    return r.ok ? r.target : undefined;
  };
  assert.deepEqual(target('http://Example.com/a/../b%20?q=1'), {
    scheme: 'http', host: 'example.com', port: 80, path: '/b%20?q=1', hostHeader: 'example.com',
  });
  assert.equal(target('http://Example.com/a/../b%20?q=1#frag'), undefined);
  assert.equal(target('https://[::1]:8443?x')?.path, '/?x');
  assert.equal(target('https://[::1]:8443?x')?.host, '::1');
  assert.equal(target('/relative'), undefined);
  assert.deepEqual(parseAuthority('[::1]:443'), { host: '::1', port: 443 });
  assert.deepEqual(parseAuthority('API.example:8443'), { host: 'api.example', port: 8443 });
  assert.equal(parseAuthority('example.com'), undefined);
  assert.equal(parseAuthority('a:99999'), undefined);
});

test('phase: nested form keys (brackets, dots, indexes) are protected by their innermost or enclosing name', () => {
  const phase = compilePhase({ manifest: 'customer', jobType: 'Mask' }, engine);
  const form = (body: string) => phase.protectBody(Buffer.from(body), 'application/x-www-form-urlencoded', 'r').body.toString();
  assert.equal(form('customer[cardNumber]=4111111111111111&x=1'), 'customer[cardNumber]=************1111&x=1');
  assert.equal(form('customer%5BcardNumber%5D=4111111111111111'), 'customer%5BcardNumber%5D=************1111');
  assert.equal(form('customer.cardNumber=4111111111111111'), 'customer.cardNumber=************1111');
  assert.equal(form('cards[0][cardNumber]=4111111111111111&cardNumber[]=5555555555554444'), 'cards[0][cardNumber]=************1111&cardNumber[]=************4444');
  // A rule on an enclosing name covers the fields beneath it, as for a JSON object value.
  assert.equal(form('name[first]=Ada&other[note]=kept'), 'name[first]=A**&other[note]=kept');
  const restrict = compilePhase({ manifest: 'customer', jobType: 'Restrict' }, engine);
  assert.equal(restrict.protectBody(Buffer.from('a=1&employee[salary]=50000&b=2'), 'application/x-www-form-urlencoded', 'r').body.toString(), 'a=1&b=2');
  // Query parameters: a listed name is selected wherever it is nested.
  const query = compilePhase({ manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] }, engine);
  assert.equal(query.protectQuery('filter[cardNumber]=4111111111111111&phone=5551234567', 'r').query, 'filter[cardNumber]=************1111&phone=5551234567');
});
