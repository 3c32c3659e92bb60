// Unrouted requests through the forward proxy (exchange/upstream-relay.ts: undici's dispatch() with a
// handler writing straight to the app's response): what the app gets back is the upstream's answer,
// without hop-by-hop headers, byte for byte, with backpressure; failures are 502 before the head and
// a cut connection after it. And the process setting `dpg serve` makes for young garbage.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { growYoungGenerationInOneStep, keepRequestGarbageYoung } from '../../src/core/young-garbage.ts';
import { endToEndRawHeaders } from '../../src/proxy/exchange/headers.ts';
import { exchangeRaw, proxyConfig, readUntilClosed, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';

const BIG = Buffer.alloc(3 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789');

let upstream: Upstream;
let p: TestProxy;

before(async () => {
  upstream = await startUpstream({
    handler: (req, res) => {
      if (req.url === '/cookies') {
        // Two Set-Cookie lines, a header the Connection header names, and hop-by-hop ones.
        res.writeHead(200, [
          'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2',
          'Connection', 'keep-alive, X-Hop-Secret',
          'X-Hop-Secret', 'only-for-this-hop',
          'Keep-Alive', 'timeout=5',
          'X-End', 'kept',
          'Content-Length', '2',
        ]);
        res.end('ok');
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG.length });
        res.end(BIG);
      } else if (req.url === '/cut') {
        // A head announcing 1000 bytes, then 10 and the connection gone.
        res.writeHead(200, { 'content-length': 1000 });
        res.write('0123456789');
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 4 });
        res.end('pass');
      }
    },
  });
  p = await startTestProxy(proxyConfig({ routes: [] }));
});

after(async () => {
  await p.close();
  await upstream.close();
});

const openProxy = async (): Promise<Socket> => {
  const socket = netConnect(p.proxy.address.port, '127.0.0.1');
  socket.on('error', () => socket.destroy());
  await new Promise((r) => socket.once('connect', r));
  return socket;
};

const get = (path: string, port = upstream.port): string => `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;

test('response headers: hop-by-hop and Connection-named ones dropped, repeated Set-Cookie kept in order', async () => {
  const socket = await openProxy();
  const res = await exchangeRaw(socket, get('/cookies'), 15_000);
  socket.destroy();
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'ok');
  const head = res.raw.subarray(0, res.raw.indexOf('\r\n\r\n')).toString('latin1').toLowerCase();
  assert.deepEqual(head.match(/^set-cookie: .*$/gm), ['set-cookie: a=1', 'set-cookie: b=2']);
  assert.match(head, /^x-end: kept$/m);
  assert.doesNotMatch(head, /x-hop-secret|only-for-this-hop|timeout=5/);
});

test('endToEndRawHeaders: the same rules on undici\'s raw list, and a bodiless answer loses Content-Length', () => {
  const raw = ['Connection', 'x-a, Keep-Alive', 'X-A', '1', 'Keep-Alive', 't', 'Transfer-Encoding', 'chunked', 'Content-Length', '5', 'Set-Cookie', 'a', 'set-cookie', 'b'].map((s) => Buffer.from(s));
  assert.deepEqual(endToEndRawHeaders(raw, false), ['content-length', '5', 'set-cookie', 'a', 'set-cookie', 'b']);
  assert.deepEqual(endToEndRawHeaders(raw, true), ['set-cookie', 'a', 'set-cookie', 'b']);
  assert.deepEqual(endToEndRawHeaders([], false), []);
});

test('a 3 MB response read slowly arrives byte for byte (backpressure), and the connection serves the next request', async () => {
  const socket = await openProxy();
  socket.pause();
  socket.write(get('/big'));
  // Let the proxy fill the socket's buffers while the app reads nothing.
  await new Promise((r) => setTimeout(r, 300));
  socket.resume();
  const res = await exchangeRaw(socket, '', 20_000);
  assert.equal(res.status, 200);
  assert.equal(res.body.length, BIG.length);
  assert.equal(createHash('sha256').update(res.body).digest('hex'), createHash('sha256').update(BIG).digest('hex'));
  const next = await exchangeRaw(socket, get('/plain'), 15_000);
  assert.equal(next.body.toString(), 'pass');
  socket.destroy();
});

test('an upstream that dies mid-body: the app\'s connection is cut, never a complete-looking response', async () => {
  const text = (await readUntilClosed(p.proxy.address.port, get('/cut'))).toString('latin1');
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.ok(text.endsWith('0123456789'), 'the 10 bytes sent, then the connection closed');
});

test('an upstream that cannot be reached: 502 UPSTREAM_UNREACHABLE, and the connection goes on', async () => {
  const dead = await startUpstream();
  const port = dead.port;
  await dead.close();
  const socket = await openProxy();
  const res = await exchangeRaw(socket, get('/x', port), 15_000);
  assert.equal(res.status, 502);
  assert.equal(JSON.parse(res.body.toString()).code, 'UPSTREAM_UNREACHABLE');
  const next = await exchangeRaw(socket, get('/plain'), 15_000);
  assert.equal(next.body.toString(), 'pass');
  socket.destroy();
});

test('dpg serve turns V8 allocation-site pretenuring off and grows the young generation sixteenfold, unless node was started with its own setting', () => {
  assert.equal(keepRequestGarbageYoung(['--allocation-site-pretenuring']), false);
  assert.equal(keepRequestGarbageYoung(['--max-old-space-size=512']), true);
  assert.equal(growYoungGenerationInOneStep(['--semi-space-growth-factor=4']), false);
  assert.equal(growYoungGenerationInOneStep(['--max-old-space-size=512']), true);
});
