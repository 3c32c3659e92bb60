// The app going away cancels the upstream request (UpstreamCancel, the per-exchange signal handed to
// undici), on pass-through and on routed exchanges alike.

import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { connect as netConnect } from 'node:net';
import { after, before, test } from 'node:test';
import { UpstreamCancel } from '../../src/proxy/exchange/exchange.ts';
import { proxyConfig, route, startTestProxy, startUpstream, type TestProxy, type Upstream } from './helpers.ts';

/** Upstream that never answers; resolves `closed` when the proxy drops the request. */
let upstream: Upstream;
let p: TestProxy;
const waiting: { res: ServerResponse; closed: Promise<void> }[] = [];

before(async () => {
  upstream = await startUpstream({
    handler: (_req, res) => {
      waiting.push({ res, closed: new Promise((resolve) => res.once('close', () => resolve())) });
    },
  });
  p = await startTestProxy(
    proxyConfig({
      responseTimeoutMs: 30_000,
      routes: [route('protect', { match: { port: upstream.port, path: '/protect/**' }, request: { manifest: 'customer', jobType: 'Mask' } })],
    }),
  );
});

after(async () => {
  for (const w of waiting) w.res.destroy();
  await p.close();
  await upstream.close();
});

/** Sends one request through the forward proxy, waits until the upstream holds it, then hangs up. */
async function hangUpWhileUpstreamThinks(path: string): Promise<void> {
  const count = waiting.length;
  const body = '{"cardNumber":"4111111111111111"}';
  const socket = netConnect(p.proxy.address.port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(`POST ${upstream.origin}${path} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  for (let i = 0; i < 200 && waiting.length === count; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(waiting.length, count + 1, 'the upstream received the request');
  socket.destroy();
  const timeout = new Promise<string>((r) => setTimeout(() => r('still open'), 2000).unref());
  assert.equal(await Promise.race([waiting[count].closed.then(() => 'closed'), timeout]), 'closed');
}

test('pass-through: the app hanging up cancels the upstream request', async () => {
  await hangUpWhileUpstreamThinks('/pass/x');
});

test('routed: the app hanging up cancels the upstream request', async () => {
  await hangUpWhileUpstreamThinks('/protect/x');
  await new Promise((r) => setTimeout(r, 50));
  assert.match(p.logText(), /"outcome":"CLIENT_ABORTED"/);
});

test('UpstreamCancel: aborts once', () => {
  const cancel = new UpstreamCancel();
  let events = 0;
  cancel.on('abort', () => events++);
  cancel.abort();
  cancel.abort();
  assert.equal(cancel.aborted, true);
  assert.equal(events, 1);
});
