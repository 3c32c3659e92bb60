// The proxy's byte bound counts bodies the proxy holds, not bodies it streams: a large unrouted
// upload goes through while a routed request is in flight, where a routed body of the same size is
// refused with 503 + Retry-After before any of it is read. Without this, one large pass-through
// upload filled the forward door's byte bound and shed every other request while it streamed.

import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { Overload } from '../../src/core/overload.ts';
import { startProxy, type RunningProxy } from '../../src/proxy/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { proxyConfig, route, startUpstream, tempDir, type Upstream } from './helpers.ts';

describe('the forward door counts held bytes only', () => {
  let upstream: Upstream;
  let proxy: RunningProxy;
  let overload: Overload;
  const sockets: Socket[] = [];

  before(async () => {
    upstream = await startUpstream();
    overload = new Overload({ maxRequestsInFlight: 16, maxBytesInFlight: 1000, maxEventLoopDelayMs: 0, maxEventLoopLagMs: 0, retryAfterSeconds: 2 });
    proxy = await startProxy({
      config: proxyConfig({
        routes: [route('mask', { match: { host: '127.0.0.1', port: upstream.port, path: '/routed/**' }, request: { manifest: 'customer', jobType: 'Mask' } })],
      }),
      dataDir: tempDir(),
      engine: testEngine(),
      logger: createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
      metrics: new Metrics({ collectDefaults: false }),
      overload,
    });
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    overload.close();
    await proxy.close(100);
    await upstream.close();
  });

  /** Sends `head` + `body` to the forward proxy; resolves with the answer's status line once a head arrives. */
  const send = (head: string, body = ''): Promise<string> => {
    const s = connect(proxy.address.port, '127.0.0.1');
    sockets.push(s);
    s.on('error', () => undefined);
    s.write(head + body);
    return new Promise((resolve) => {
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
  };
  const origin = () => `http://127.0.0.1:${upstream.port}`;

  test('an unrouted 5,000-byte upload passes beside a routed request; a routed one of that size is shed', async () => {
    const gate = overload.gate('proxy');
    // A routed request whose body is still coming: it holds 100 bytes of the door's 1,000.
    const holder = connect(proxy.address.port, '127.0.0.1');
    sockets.push(holder);
    holder.on('error', () => undefined);
    holder.write(`POST ${origin()}/routed/a HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    for (let i = 0; i < 500 && gate.requests === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(gate.requests, 1);
    assert.equal(gate.bytes, 100);

    const big = 'x'.repeat(5000);
    const passed = await send(`POST ${origin()}/plain/upload HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${big.length}\r\nConnection: close\r\n\r\n`, big);
    assert.match(passed, /^HTTP\/1\.1 200/, 'streamed on untouched: its bytes are not held');
    assert.ok(upstream.received.some((r) => r.url === '/plain/upload' && r.body.length === 5000));

    const before = upstream.received.length;
    const shed = await send(`POST ${origin()}/routed/b HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\nConnection: close\r\n\r\n`);
    assert.match(shed, /^HTTP\/1\.1 503/);
    assert.match(shed, /\r\nretry-after: 2\r\n/i);
    assert.equal(upstream.received.length, before, 'nothing of the shed request reached the upstream');
    assert.equal(gate.bytes, 100, 'the pass-through upload left nothing counted behind');
  });
});
