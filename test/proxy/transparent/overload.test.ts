// Overload at the transparent listener (issue 18 item 4): while the door is at its request bound,
// a newly redirected connection is reset at accept, before its original destination is read or any
// upstream is dialled — never spliced unread; a routed request over the bound on an open connection
// gets 503 + Retry-After. Original destinations are injected (no kernel redirect needed on loopback).

import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/core/logger.ts';
import { Metrics } from '../../../src/core/metrics.ts';
import { Overload } from '../../../src/core/overload.ts';
import type { OriginalDestination } from '../../../src/core/original-destination.ts';
import { startProxy, type RunningProxy } from '../../../src/proxy/index.ts';
import { testEngine } from '../../helpers/engine.ts';
import { proxyConfig, route, startUpstream, tempDir, type Upstream } from '../helpers.ts';
import { transparentConfig } from './helpers.ts';

describe('transparent listener under overload', () => {
  let upstream: Upstream;
  let proxy: RunningProxy;
  let overload: Overload;
  const queue: (OriginalDestination | undefined)[] = [];
  const sockets: Socket[] = [];

  before(async () => {
    upstream = await startUpstream();
    overload = new Overload({ maxRequestsInFlight: 1, maxBytesInFlight: 1 << 20, maxEventLoopDelayMs: 0, retryAfterSeconds: 3 });
    proxy = await startProxy({
      config: proxyConfig({
        routes: [route('mask', { match: { host: '127.0.0.1', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } })],
        transparent: transparentConfig(),
      }),
      dataDir: tempDir(),
      engine: testEngine(),
      logger: createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
      metrics: new Metrics({ collectDefaults: false }),
      overload,
      transparentOverrides: { originalDestination: () => queue.shift() },
    });
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    overload.close();
    await proxy.close(100);
    await upstream.close();
  });

  const open = (): Socket => {
    queue.push({ address: '127.0.0.1', port: upstream.port, family: 4 });
    const s = connect(proxy.transparent[0].port, '127.0.0.1');
    s.on('error', () => undefined);
    sockets.push(s);
    return s;
  };

  test('a new connection is reset while the door is full; a request on an open one gets 503 + Retry-After', async () => {
    const gate = overload.gate('transparent');
    // A keep-alive connection opened while the door had room.
    const early = open();
    let earlyText = '';
    early.on('data', (d: Buffer) => (earlyText += d.toString('latin1')));
    early.write(`GET /first HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
    for (let i = 0; i < 400 && !/\r\n\r\n/.test(earlyText); i++) await new Promise((r) => setTimeout(r, 10));
    assert.match(earlyText, /^HTTP\/1\.1 200/);
    for (let i = 0; i < 400 && gate.requests > 0; i++) await new Promise((r) => setTimeout(r, 10));
    earlyText = '';
    // A routed request whose body is still coming holds the door's one slot.
    const holder = open();
    holder.write(`POST /v1 HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    for (let i = 0; i < 400 && gate.requests === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(gate.requests, 1);
    const before = upstream.rawBytes().length;

    const refused = open();
    const outcome = await new Promise<{ bytes: number; reset: boolean }>((resolve) => {
      let bytes = 0;
      let reset = false;
      refused.on('data', (d: Buffer) => (bytes += d.length));
      refused.on('error', (e: NodeJS.ErrnoException) => (reset ||= e.code === 'ECONNRESET'));
      refused.on('close', () => resolve({ bytes, reset }));
      refused.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
    });
    assert.equal(outcome.bytes, 0);
    assert.equal(outcome.reset, true);
    assert.equal(upstream.rawBytes().length, before, 'nothing reached the upstream for the refused connection');
    assert.equal(upstream.received.length, 1);
    // Its original destination was never read: the one queued for it is still there.
    assert.equal(queue.length, 1);
    queue.length = 0;

    // A request on the connection opened earlier: refused with 503 + Retry-After, not queued.
    early.write(`GET /second HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
    for (let i = 0; i < 400 && !/\r\n\r\n\{.*\}$/s.test(earlyText); i++) await new Promise((r) => setTimeout(r, 10));
    assert.match(earlyText, /^HTTP\/1\.1 503 /);
    assert.match(earlyText, /\r\nretry-after: 3\r\n/i);
    assert.match(earlyText, /"code":"OVERLOADED"/);
    assert.equal(upstream.received.length, 1, 'only the first request reached the upstream');

    // Once the slot is free, a new connection is served again.
    holder.destroy();
    for (let i = 0; i < 400 && gate.requests > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(gate.requests, 0);
    const ok = open();
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      ok.on('data', (d: Buffer) => (text += d.toString('latin1')));
      ok.on('close', () => resolve(text));
      ok.write(`POST /v1 HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    });
    assert.match(answer, /^HTTP\/1\.1 200/);
  });
});
