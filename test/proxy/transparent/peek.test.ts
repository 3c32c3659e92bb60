// What the transparent listener reads before deciding: the TLS ClientHello's server name (from a
// real Node client and from hand-built hellos that servers and parsers could read two ways) and the
// first HTTP head's Host; then the decision table over both.

import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { parseClientHello } from '../../../src/proxy/transparent/client-hello.ts';
import { RouteCoverage } from '../../../src/proxy/transparent/coverage.ts';
import { canonicalHostOf } from '../../../src/proxy/reading/canonical-host.ts';
import { decideH2cStream, decideOnAccept, decidePlain, decideTls, type DecisionContext } from '../../../src/proxy/transparent/decide.ts';
import { peekHttpHead } from '../../../src/proxy/transparent/http-head.ts';
import { compileRoutes } from '../../../src/proxy/reading/routes.ts';
import { route } from '../helpers.ts';

/** The first flight of a real Node TLS client asking for `servername`. */
async function realHello(servername: string): Promise<Buffer> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const got = new Promise<Buffer>((resolve) => server.once('connection', (s) => s.once('data', (d: Buffer) => (resolve(d), s.destroy()))));
  const client = tlsConnect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername });
  client.on('error', () => undefined);
  const hello = await got;
  client.destroy();
  server.close();
  return hello;
}

const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff]);
const ext = (type: number, data: Buffer): Buffer => Buffer.concat([u16(type), u16(data.length), data]);
const sni = (...names: string[]): Buffer => {
  const list = Buffer.concat(names.map((n) => Buffer.concat([Buffer.from([0]), u16(n.length), Buffer.from(n, 'latin1')])));
  return ext(0, Buffer.concat([u16(list.length), list]));
};

/** A ClientHello handshake message with the given extensions, in one record or split into several. */
function hello(extensions: Buffer[], recordSizes?: number[]): Buffer {
  const exts = Buffer.concat(extensions);
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32, 7), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(exts.length), exts]);
  const message = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 0xff]), body]);
  const sizes = recordSizes ?? [message.length];
  const records: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    const part = message.subarray(at, at + size);
    records.push(Buffer.concat([Buffer.from([22, 3, 1]), u16(part.length), part]));
    at += size;
  }
  return Buffer.concat(records);
}

describe('ClientHello server name', () => {
  test('a real Node client: the server name it asked for', async () => {
    const data = await realHello('API.Partner.test');
    assert.deepEqual(parseClientHello(data), { kind: 'hello', serverName: 'api.partner.test', encryptedClientHello: false });
    // Any prefix is "need more", never a wrong answer.
    for (const cut of [1, 5, 20, data.length - 1]) assert.equal(parseClientHello(data.subarray(0, cut)).kind, 'need-more');
  });

  test('a hello split across records (and read byte by byte) gives the same name', () => {
    const split = hello([sni('api.partner.test')], [3, 10, 200]);
    assert.deepEqual(parseClientHello(split), { kind: 'hello', serverName: 'api.partner.test', encryptedClientHello: false });
  });

  test('no server_name: no name (the destination address decides)', () => {
    assert.deepEqual(parseClientHello(hello([])), { kind: 'hello', serverName: undefined, encryptedClientHello: false });
  });

  test('ECH is reported so a covered port can refuse it', () => {
    const r = parseClientHello(hello([sni('public.example'), ext(0xfe0d, Buffer.alloc(8))]));
    assert.deepEqual(r, { kind: 'hello', serverName: 'public.example', encryptedClientHello: true });
  });

  const invalid: [string, Buffer][] = [
    ['two server_name extensions', hello([sni('unrouted.test'), sni('api.partner.test')])],
    ['two host names in one extension', hello([sni('unrouted.test', 'api.partner.test')])],
    ['a name with a NUL byte', hello([sni('api.partner.test\u0000.evil')])],
    ['an empty name', hello([sni('')])],
    ['extension lengths that overrun', Buffer.concat([hello([sni('a.test')]).subarray(0, -3), Buffer.from([0xff, 0xff, 0])])],
    ['a record that is not a handshake', Buffer.from('170303000501020304', 'hex')],
    ['a handshake that is not a ClientHello', Buffer.from('16030100050200000100', 'hex')],
  ];
  for (const [name, data] of invalid) {
    test(`refused: ${name}`, () => assert.equal(parseClientHello(data).kind, 'invalid', JSON.stringify(parseClientHello(data))));
  }
});

describe('HTTP head peek', () => {
  const head = (text: string) => peekHttpHead(Buffer.from(text, 'latin1'), 16 * 1024);
  test('a clean request: its Host, lower case, no port, and where it ends', () => {
    const clear = (host: string, method: string, headLength: number, bodyLength = 0, upgrade = false) => ({ kind: 'http', clear: true, host, method, headLength, bodyLength, upgrade });
    const a = 'POST /v1/x HTTP/1.1\r\nHost: API.Partner.test:8080\r\nContent-Length: 0\r\n\r\n';
    assert.deepEqual(head(a), clear('api.partner.test', 'POST', a.length));
    const b = 'GET / HTTP/1.1\r\nhost: [2001:db8::1]\r\n\r\n';
    assert.deepEqual(head(b), clear('2001:db8::1', 'GET', b.length));
    const c = '\r\nGET / HTTP/1.0\r\nHost: a.test\r\n\r\n';
    assert.deepEqual(head(c), clear('a.test', 'GET', c.length));
    const d = 'POST /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\n';
    assert.deepEqual(head(d + '{}'), clear('a.test', 'POST', d.length, 2));
    const e = 'GET /ws HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';
    assert.deepEqual(head(e), clear('a.test', 'GET', e.length, 0, true));
  });
  test('bytes after the body are the next head, read in turn (the relay), not a reason to read in full', () => {
    const first = 'POST /v1 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\n\r\n';
    const next = 'POST /v1 HTTP/1.1\r\nHost: routed.test\r\nContent-Length: 0\r\n\r\n';
    const both = Buffer.from(first + 'x' + next, 'latin1');
    const r = peekHttpHead(both, 16 * 1024);
    assert.ok(r.kind === 'http' && r.clear);
    assert.equal(r.headLength + r.bodyLength, first.length + 1);
    const second = peekHttpHead(both.subarray(r.headLength + r.bodyLength), 16 * 1024);
    assert.ok(second.kind === 'http' && second.clear && second.host === 'routed.test');
  });
  test('incomplete heads wait', () => {
    for (const t of ['', 'PRI * HTTP/2', 'GET / HTTP/1.1\r\nHost: a'] ) assert.equal(head(t).kind, 'need-more', t);
  });
  const unclear = [
    'POST http://api.partner.test/v1 HTTP/1.1\r\nHost: x.test\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a.test\r\n folded\r\n\r\n',
    'GET / HTTP/1.1\r\nHost : a.test\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a b\r\n\r\n',
    'GET\t/ HTTP/1.1\r\nHost: a.test\r\n\r\n',
    'post / http/1.1\r\nHost: a.test\r\n\r\n'.replace('post', 'POST').replace('http/1.1', 'HTTP/1.1').replace('/ ', '/\u00e9 '),
    'GET /x\r\n',
    // Finding 1: what only a lenient server (Python's http.server) reads as a request.
    'GET / HTTP/1.0\r\n\r\n',
    'POST /v1 HTTP/1.10\r\nHost: a.test\r\n\r\n',
    'POST /v1 HTTP/01.1\r\nHost: a.test\r\n\r\n',
    'POST /v1 http/1.1\r\nHost: a.test\r\n\r\n',
    'POST /v1 HTTP/1.1\r\r\nHost: a.test\r\n\r\n',
    'POST\x0b/v1\x0bHTTP/1.1\r\nHost: a.test\r\n\r\n',
    'POST\x1f/v1\x1cHTTP/1.1\r\nHost: a.test\r\n\r\n',
    'POST\xa0/v1\x85HTTP/1.1\r\nHost: a.test\r\n\r\n',
    ' POST /v1 HTTP/1.1\r\nHost: a.test\r\n\r\n',
    'POST /v1 a b HTTP/1.1\r\nHost: a.test\r\n\r\n',
    'GET v1/x\r\n',
    'POST /v1 HTTP/1.1\nHost: a.test\n\n',
    'POST /v1 HTTP/1.1\r\nHost: a.test\nX: 1\r\n\r\n',
    // Framing two servers could read differently: where the next head starts would be in doubt.
    'POST /v1 HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /v1 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx',
  ];
  for (const t of unclear) test(`read in full, not spliced: ${JSON.stringify(t.slice(0, 40))}`, () => assert.deepEqual(head(t), { kind: 'http', host: undefined, clear: false }));
  test('lower-case methods are HTTP too (some frameworks upper-case them)', () => assert.equal(head('post / HTTP/1.1\r\nHost: a.test\r\n\r\n').kind, 'http'));
  test('other protocols are not HTTP (binary ones at once, without waiting for a line); h2c prior knowledge is told apart', () => {
    assert.equal(head('SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n').kind, 'not-http');
    assert.equal(head('\u0000\u0000\u0000\u0008\u0004\u00d2\u0016\u002f').kind, 'not-http', 'PostgreSQL SSLRequest');
    assert.equal(head('\u003a\u0001\u0000\u0000').kind, 'not-http', 'MongoDB message length');
    assert.equal(head('EHLO client.example\r\n').kind, 'not-http');
    assert.equal(head('*1\r\n$4\r\nPING\r\n').kind, 'not-http', 'Redis');
    assert.equal(head('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n').kind, 'h2-preface');
  });
  test('a token and whitespace wait for the line end: it may still become a request', () => {
    for (const t of ['POST', 'POST\x0b/v1/customers', 'A \u0001\u0002']) assert.equal(head(t).kind, 'need-more', JSON.stringify(t));
  });
});

describe('decisions', () => {
  const routes = [
    route('by-name', { match: { host: 'api.partner.test', port: 443 }, request: { manifest: 'customer', jobType: 'Mask' } }),
    route('by-ip', { match: { host: '0x7f000002', port: 80 }, request: { manifest: 'customer', jobType: 'Mask' } }),
  ];
  // api.partner.test resolves to 198.51.100.10 (route-host-addresses.ts gives the table these aliases).
  const table = compileRoutes(routes, { namesFor: (a) => (a === '198.51.100.10' ? ['api.partner.test'] : []) });
  const coverage = new RouteCoverage(routes);
  const ctx: DecisionContext = { coverage, intercepts: (h, p) => table.intercepts(h, p), encryptedClientHello: 'refuse', inspect: 'routed' };
  const dst = (address: string, port: number) => ({ address, port, family: 4 as const });

  test('an IP-literal route in any spelling covers that one address', () => {
    for (const spelling of ['127.2', '0x7f000002', '2130706434', '0177.0.0.2']) {
      const r = [route('ip', { match: { host: spelling, port: 80 }, request: { manifest: 'customer', jobType: 'Mask' } })];
      assert.equal(new RouteCoverage(r).covers(canonicalHostOf('127.0.0.2')!, 80), true, spelling);
      assert.equal(new RouteCoverage(r).covers('127.0.0.3', 80), false, spelling);
    }
  });

  test('ports and addresses no route can concern are spliced at once', () => {
    assert.equal(decideOnAccept(ctx, dst('203.0.113.5', 8443)).action, 'splice');
    assert.equal(decideOnAccept(ctx, dst('203.0.113.5', 80)).action, 'splice', 'the IP route covers only its address');
    assert.equal(decideOnAccept(ctx, dst('127.0.0.2', 80)).action, 'peek');
    assert.equal(decideOnAccept(ctx, dst('203.0.113.5', 443)).action, 'peek', 'a name route covers its port on any address');
  });

  test('strict inspection (inspect: all) peeks at every address on a port a route names, and only there', () => {
    const strict = { ...ctx, inspect: 'all' as const };
    assert.equal(decideOnAccept(strict, dst('203.0.113.5', 80)).action, 'peek', 'port 80 is named by the IP route');
    assert.equal(decideOnAccept(strict, dst('203.0.113.5', 8443)).action, 'splice');
  });

  test('TLS: a routed name or address, no server name, or inspect: all intercepts; else splice; ECH refused', async () => {
    const h = (serverName: string | undefined, ech = false) => ({ kind: 'hello' as const, serverName, encryptedClientHello: ech });
    assert.deepEqual(decideTls(ctx, dst('203.0.113.5', 443), h('API.partner.test.')), { action: 'intercept', serverName: 'API.partner.test.', leafName: 'api.partner.test' });
    assert.deepEqual(decideTls(ctx, dst('198.51.100.10', 443), h('innocent.test')), { action: 'intercept', serverName: 'innocent.test', leafName: 'innocent.test' });
    assert.deepEqual(decideTls(ctx, dst('198.51.100.10', 443), h(undefined)), { action: 'intercept', serverName: undefined, leafName: '198.51.100.10' });
    assert.equal(decideTls(ctx, dst('203.0.113.5', 443), h('other.test')).action, 'splice');
    // Issue 16 class 7: no server name (an IP URL) to an unrouted address: each request's Host decides.
    assert.deepEqual(decideTls(ctx, dst('203.0.113.5', 443), h(undefined)), { action: 'intercept', serverName: undefined, leafName: '203.0.113.5' });
    // Domain fronting: strict mode intercepts an unrouted server name too.
    assert.deepEqual(decideTls({ ...ctx, inspect: 'all' }, dst('203.0.113.5', 443), h('Other.test')), { action: 'intercept', serverName: 'Other.test', leafName: 'other.test' });
    assert.equal(decideTls(ctx, dst('203.0.113.5', 443), h('public.example', true)).action, 'refuse');
    assert.equal(decideTls({ ...ctx, encryptedClientHello: 'splice' }, dst('203.0.113.5', 443), h('public.example', true)).action, 'splice');
  });

  test('plain text: routed Host or address → HTTP; unclear or Upgrade → HTTP; clear and unrouted → relayed; other protocols to a routed address → refused', async () => {
    const clear = (host: string, upgrade = false) => ({ kind: 'http' as const, clear: true as const, host, method: 'POST', headLength: 40, bodyLength: 0, upgrade });
    assert.equal(decidePlain(ctx, dst('127.0.0.2', 80), clear('x.test')).action, 'http');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), clear('api.partner.test')).action, 'http');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), clear('other.test')).action, 'relay');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), clear('other.test', true)).action, 'http');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), { kind: 'http', host: undefined, clear: false }).action, 'http');
    assert.equal(decidePlain(ctx, dst('127.0.0.2', 80), { kind: 'not-http' }).action, 'refuse');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), { kind: 'not-http' }).action, 'splice');
    assert.equal(decidePlain(ctx, dst('198.51.100.10', 443), { kind: 'h2-preface' }).action, 'h2');
    assert.equal(decidePlain(ctx, dst('203.0.113.5', 443), { kind: 'h2-preface' }).action, 'h2c');
  });

  test('h2c streams: a routed :authority or none is refused, an unrouted one passes', () => {
    assert.equal(decideH2cStream(ctx, dst('203.0.113.5', 443), 'api.partner.test').action, 'refuse');
    assert.equal(decideH2cStream(ctx, dst('203.0.113.5', 443), undefined).action, 'refuse');
    assert.equal(decideH2cStream(ctx, dst('203.0.113.5', 443), 'other.test').action, 'splice');
  });
});
