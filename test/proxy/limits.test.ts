// Issue 8 class 8: tunnels and connections have limits. Idle tunnels (blind and intercepted) are
// closed, an exchange waiting on its upstream is not, a listener over its connection cap refuses
// new connections, and readiness (RunningProxy.ready and the gateway's /readyz) says so.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { createLogger } from '../../src/core/logger.ts';
import { startGateway } from '../../src/main.ts';
import { testGatewayConfig } from '../helpers/gateway-config.ts';
import { healthCheck } from '../transport/grpc/client.ts';
import {
  CARD,
  connectTcp,
  exchangeRaw,
  openTunnel,
  proxyConfig,
  rawPost,
  route,
  startTestProxy,
  startUpstream,
  tempDir,
  upstreamPki,
  type TestPki,
  type TestProxy,
  type Upstream,
  type UpstreamHandler,
} from './helpers.ts';

const BODY = JSON.stringify({ cardNumber: CARD });
const MASKED_BODY = JSON.stringify({ cardNumber: '************1111' });

/** Resolves with how long `socket` stayed open, or 'open' if it still is after `ms`. */
function closedWithin(socket: Duplex, ms: number): Promise<number | 'open'> {
  const started = Date.now();
  return new Promise((resolve) => {
    if (socket.destroyed) resolve(0);
    const timer = setTimeout(() => resolve('open'), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

async function until(condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('idle timeouts', () => {
  let pki: TestPki;
  let routed: Upstream; // plain, routed; answers after 700 ms on /slow
  let secure: Upstream; // TLS, routed; answers after 700 ms on /slow
  let unrouted: Upstream;
  let p: TestProxy;
  const slow: UpstreamHandler = (req, res, body) => {
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
    if (req.url?.startsWith('/slow')) setTimeout(answer, 700);
    else answer();
  };

  before(async () => {
    pki = upstreamPki(tempDir());
    routed = await startUpstream({ handler: slow });
    secure = await startUpstream({ tls: pki, handler: slow });
    unrouted = await startUpstream();
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: pki.caFile,
        idleTimeoutMs: 300,
        responseTimeoutMs: 3000,
        routes: [
          route('routed', { match: { host: '127.0.0.1', port: routed.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('secure', { match: { host: '127.0.0.1', port: secure.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
        ],
      }),
    );
  });

  after(async () => {
    await p.close();
    await Promise.all([routed.close(), secure.close(), unrouted.close()]);
  });

  test('an idle blind tunnel is closed after idleTimeoutMs', async () => {
    const t = await openTunnel(p.proxy.address.port, `127.0.0.1:${unrouted.port}`);
    const open = await closedWithin(t, 6000); // 20× the 300 ms idle timeout: a watchdog, not a bound
    assert.notEqual(open, 'open');
    assert.ok((open as number) >= 250, `closed after ${open} ms`);
  });

  test('idle intercepted tunnels (plain and TLS) are closed too, also before their first byte', async () => {
    const plain = await openTunnel(p.proxy.address.port, `127.0.0.1:${routed.port}`);
    const tls = await openTunnel(p.proxy.address.port, `127.0.0.1:${secure.port}`, { ca: p.proxy.caPem });
    const [a, b] = await Promise.all([closedWithin(plain, 6000), closedWithin(tls, 6000)]);
    assert.notEqual(a, 'open');
    assert.notEqual(b, 'open');
  });

  test('traffic keeps a blind tunnel open', async () => {
    const t = await openTunnel(p.proxy.address.port, `127.0.0.1:${unrouted.port}`);
    try {
      for (let i = 0; i < 6; i++) {
        const res = await exchangeRaw(t, rawPost('/ping', `127.0.0.1:${unrouted.port}`, '{}'));
        assert.equal(res.status, 200);
        await new Promise((r) => setTimeout(r, 150));
      }
      assert.equal(t.destroyed, false);
    } finally {
      t.destroy();
    }
  });

  test('an exchange waiting longer than idleTimeoutMs for its upstream is not cut (plain and TLS)', async () => {
    for (const [u, tls] of [[routed, false], [secure, true]] as const) {
      const t = await openTunnel(p.proxy.address.port, `127.0.0.1:${u.port}`, tls ? { ca: p.proxy.caPem } : undefined);
      try {
        const res = await exchangeRaw(t, rawPost('/slow', `127.0.0.1:${u.port}`, BODY));
        assert.equal(res.status, 200);
        assert.equal(res.body.toString(), MASKED_BODY);
      } finally {
        t.destroy();
      }
    }
  });
});

describe('connection cap and readiness', () => {
  let upstream: Upstream;
  let p: TestProxy;

  before(async () => {
    upstream = await startUpstream();
    p = await startTestProxy(
      proxyConfig({
        maxConnections: 2,
        idleTimeoutMs: 60_000,
        routes: [route('routed', { match: { host: '127.0.0.1', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } })],
        reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: upstream.origin }],
      }),
    );
  });

  after(async () => {
    await p.close();
    await upstream.close();
  });

  test('over maxConnections new connections are refused and the proxy is not ready; it recovers', async () => {
    await until(() => p.proxy.ready());
    const held = [await connectTcp(p.proxy.address.port), await openTunnel(p.proxy.address.port, `127.0.0.1:${upstream.port}`)];
    await until(() => !p.proxy.ready());
    assert.match(p.proxy.notReadyReason() ?? '', /proxy is at its maxConnections \(2\)/);

    // The next connection is closed at accept: no byte of a response, nothing upstream.
    const before = upstream.rawBytes().length;
    const extra = await connectTcp(p.proxy.address.port);
    extra.on('error', () => undefined);
    extra.write(rawPost(`http://127.0.0.1:${upstream.port}/x`, 'x', BODY));
    const received: Buffer[] = [];
    extra.on('data', (d: Buffer) => received.push(d));
    assert.notEqual(await closedWithin(extra, 10_000), 'open'); // a watchdog: it closes at once
    assert.equal(Buffer.concat(received).length, 0);
    assert.equal(upstream.rawBytes().length, before);

    // Each listener has its own cap: the reverse listener still serves.
    const rev = await connectTcp(p.proxy.reverse[0].port);
    try {
      const res = await exchangeRaw(rev, rawPost('/x', 'localhost', BODY));
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), MASKED_BODY);
    } finally {
      rev.destroy();
    }

    for (const s of held) s.destroy();
    await until(() => p.proxy.ready());
    const again = await connectTcp(p.proxy.address.port);
    try {
      const res = await exchangeRaw(again, rawPost(`http://127.0.0.1:${upstream.port}/x`, 'x', BODY));
      assert.equal(res.status, 200);
    } finally {
      again.destroy();
    }
    assert.match(p.logText(), /connection refused, the listener is at its maxConnections/);
  });
});

test('the gateway /readyz and gRPC health reflect a proxy that cannot take work (main.ts wiring)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dpg-ready-'));
  const base = testGatewayConfig(dataDir);
  const config = {
    ...base,
    manifests: resolve('config/manifests'),
    proxy: { ...base.proxy, enabled: true, maxConnections: 2, idleTimeoutMs: 60_000 },
  };
  const gateway = await startGateway(config, { logger: createLogger({ level: 'silent' }) });
  const held: Duplex[] = [];
  try {
    const readyz = async (): Promise<number> => {
      const res = await request(`http://127.0.0.1:${gateway.addresses.http.port}/readyz`);
      await res.body.dump();
      return res.statusCode;
    };
    const health = () => healthCheck(gateway.addresses.grpc.port);
    await until(async () => (await readyz()) === 200);
    assert.equal(await health(), 'SERVING');
    assert.equal(await healthCheck(gateway.addresses.grpc.port, 'com.vendor.gateway.ProtectService'), 'SERVING');
    held.push(await connectTcp(gateway.addresses.proxy.port), await connectTcp(gateway.addresses.proxy.port));
    await until(async () => (await readyz()) === 503);
    // gRPC health follows the same readiness: the server as a whole and its service.
    assert.equal(await health(), 'NOT_SERVING');
    assert.equal(await healthCheck(gateway.addresses.grpc.port, 'com.vendor.gateway.ProtectService'), 'NOT_SERVING');
    for (const s of held) s.destroy();
    await until(async () => (await readyz()) === 200);
    assert.equal(await health(), 'SERVING');
  } finally {
    for (const s of held) s.destroy();
    await gateway.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
