// Routed requests whose route has no response phase: the protected body goes upstream and the
// answer is relayed as it comes, through the same dispatch() handler as pass-through
// (exchange/upstream-relay.ts). What the app gets: the upstream's answer without hop-by-hop headers,
// its own X-Request-Id kept or the gateway's added, 204/304 without a body, 1xx not relayed; a
// failure after the head cuts the connection; the audit line and metric say how it went.

import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { CARD, connectTcp, exchangeRaw, proxyConfig, rawPost, readUntilClosed, route, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';

let upstream: Upstream;
let p: TestProxy;

before(async () => {
  upstream = await startUpstream({
    handler: (req, res, body) => {
      if (req.url === '/v1/headers') {
        res.writeHead(200, [
          'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2',
          'Connection', 'keep-alive, X-Hop-Secret',
          'X-Hop-Secret', 'only-for-this-hop',
          'X-Request-Id', 'from-upstream',
          'Content-Length', String(body.length),
        ]);
        res.end(body);
      } else if (req.url === '/v1/no-content') {
        res.writeHead(204, { 'x-end': 'kept' });
        res.end();
      } else if (req.url === '/v1/early-hints') {
        res.writeEarlyHints({ link: '</style.css>; rel=preload' });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      } else if (req.url === '/v1/cut') {
        res.writeHead(200, { 'content-length': 1000 });
        res.write('0123456789');
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      }
    },
  });
  p = await startTestProxy(
    proxyConfig({ routes: [route('relay', { match: { port: upstream.port, path: '/v1/**' }, request: { manifest: 'customer', jobType: 'Mask' } })] }),
  );
});

after(async () => {
  await p.close();
  await upstream.close();
});

const BODY = JSON.stringify({ cardNumber: CARD, note: 'x' });
const post = (path: string): Buffer => rawPost(`http://127.0.0.1:${upstream.port}${path}`, `127.0.0.1:${upstream.port}`, BODY);

const openProxy = (): Promise<Socket> => connectTcp(p.proxy.address.port);

const headOf = (raw: Buffer): string => raw.subarray(0, raw.indexOf('\r\n\r\n')).toString('latin1').toLowerCase();

test('the masked body goes upstream; the answer comes back without hop-by-hop headers, the upstream\'s X-Request-Id kept', async () => {
  const socket = await openProxy();
  const res = await exchangeRaw(socket, post('/v1/headers'), 15_000);
  assert.equal(res.status, 200);
  assert.ok(!res.body.includes(CARD), 'the card came back in clear: it went upstream unmasked');
  assert.equal(JSON.parse(res.body.toString()).note, 'x');
  const head = headOf(res.raw);
  assert.deepEqual(head.match(/^set-cookie: .*$/gm), ['set-cookie: a=1', 'set-cookie: b=2']);
  assert.deepEqual(head.match(/^x-request-id: .*$/gm), ['x-request-id: from-upstream']);
  assert.doesNotMatch(head, /x-hop-secret|only-for-this-hop/);
  // The connection serves the next request, which gets the gateway's request id.
  const next = await exchangeRaw(socket, post('/v1/plain'), 15_000);
  socket.destroy();
  assert.equal(next.status, 200);
  assert.match(headOf(next.raw), /^x-request-id: [0-9a-f-]{36}$/m);
  assert.equal((p.logText().match(/"route":"relay"[^\n]*"outcome":"ok"/g) ?? []).length, 2);
});

test('a 204 is answered without a body, a 103 is not relayed', async () => {
  const socket = await openProxy();
  const empty = await exchangeRaw(socket, post('/v1/no-content'), 15_000);
  assert.equal(empty.status, 204);
  assert.equal(empty.body.length, 0);
  assert.match(headOf(empty.raw), /^x-end: kept$/m);
  const hinted = await exchangeRaw(socket, post('/v1/early-hints'), 15_000);
  socket.destroy();
  assert.equal(hinted.status, 200);
  assert.doesNotMatch(hinted.raw.toString('latin1'), /^HTTP\/1\.1 103/m);
  assert.ok(!hinted.body.includes(CARD));
});

test('an upstream that dies after its head: the app\'s connection is cut, the audit line says UPSTREAM_UNREACHABLE', async () => {
  const text = (await readUntilClosed(p.proxy.address.port, post('/v1/cut'))).toString('latin1');
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.ok(text.endsWith('0123456789'), 'the 10 bytes sent, then the connection closed');
  assert.match(p.logText(), /"route":"relay"[^\n]*"outcome":"UPSTREAM_UNREACHABLE"/);
});
