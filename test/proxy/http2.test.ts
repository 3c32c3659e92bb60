// HTTP/2 on intercepted CONNECT connections (REST): ALPN offers h2 and http/1.1; routed h2
// requests are read and protected as HTTP/1.1 ones; unrouted ones pass untouched; upstreams are
// spoken to in h2 when they offer it (one pooled session), else HTTP/1.1. Real node:http2 clients
// and servers, and curl --http2 when it is installed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CARD, proxyConfig, route, startTestProxy, startUpstream, tempDir, upstreamPki, type TestPki, type TestProxy, type Upstream } from './helpers.ts';
import { h2Request, h2ThroughConnect, startH2Upstream, type H2Upstream } from './http2-helpers.ts';

const customer = JSON.stringify({ name: 'Ada', cardNumber: CARD, note: 'kept' });

describe('HTTP/2 on intercepted CONNECT connections', { timeout: 20_000 }, () => {
  let pki: TestPki;
  let h2: H2Upstream;
  let h1only: Upstream;
  let p: TestProxy;

  before(async () => {
    const dir = tempDir();
    pki = upstreamPki(dir);
    h2 = await startH2Upstream({ tls: pki });
    h1only = await startUpstream({ tls: pki });
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: pki.caFile,
        routes: [
          route('h2-customers', { match: { host: '127.0.0.1', port: h2.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' }, maxBodyBytes: 4096 }),
          route('h1-customers', { match: { host: '127.0.0.1', port: h1only.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
        ],
      }),
    );
  });
  after(async () => {
    await p.close();
    await h2.close();
    await h1only.close();
  });

  const post = (path: string, authority: string, extra: Record<string, string> = {}): Record<string, string> => ({
    ':method': 'POST',
    ':path': path,
    ':authority': authority,
    ':scheme': 'https',
    'content-type': 'application/json',
    ...extra,
  });

  test('a client offering only h2: routed body protected, upstream gets every other byte; unrouted passes untouched', async () => {
    const authority = `127.0.0.1:${h2.port}`;
    const session = await h2ThroughConnect(p.proxy.address.port, authority, p.proxy.caPem, ['h2']);
    try {
      const before = h2.received.length;
      const routed = await h2Request(session, post('/v1/customers/1?x=1', authority, { 'x-trace': 'abc' }), customer);
      assert.equal(routed.status, 200);
      assert.equal(routed.headers['x-upstream'], 'h2');
      const got = h2.received[before]!;
      const sent = JSON.parse(got.body.toString('utf8')) as Record<string, string>;
      assert.notEqual(sent.cardNumber, CARD);
      assert.equal(sent.cardNumber.length, CARD.length);
      assert.equal(sent.note, 'kept');
      assert.equal(got.headers[':path'], '/v1/customers/1?x=1');
      assert.equal(got.headers[':authority'], authority);
      assert.equal(got.headers['x-trace'], 'abc');

      const unrouted = await h2Request(session, post('/v2/other', authority), customer);
      assert.equal(unrouted.status, 200);
      assert.equal(h2.received.at(-1)!.body.toString('utf8'), customer);
      // A GET without a body stays one.
      const get = await h2Request(session, { ':method': 'GET', ':path': '/v1/customers/2', ':authority': authority, ':scheme': 'https' });
      assert.equal(get.status, 200);
      assert.equal(h2.received.at(-1)!.body.length, 0);
    } finally {
      session.close();
    }
  });

  test('upstream HTTP/2 sessions are pooled: requests from two app connections, one after another, share one', async () => {
    const authority = `127.0.0.1:${h2.port}`;
    const sessionsBefore = h2.sessions();
    const apps = await Promise.all([0, 1].map(() => h2ThroughConnect(p.proxy.address.port, authority, p.proxy.caPem)));
    try {
      for (let i = 0; i < 6; i++) assert.equal((await h2Request(apps[i % 2]!, post(`/v2/pool/${i}`, authority), 'x')).status, 200);
      // undici's pool keeps one request per session (pipelining 1): concurrent ones open more (docs/proxy.md).
      assert.ok(h2.sessions() - sessionsBefore <= 1, `upstream sessions opened: ${h2.sessions() - sessionsBefore}`);
    } finally {
      for (const s of apps) s.close();
    }
  });

  test('an upstream offering only HTTP/1.1 gets HTTP/1.1; the app keeps h2', async () => {
    const authority = `127.0.0.1:${h1only.port}`;
    const session = await h2ThroughConnect(p.proxy.address.port, authority, p.proxy.caPem, ['h2', 'http/1.1']);
    try {
      const r = await h2Request(session, post('/v1/customers/9', authority), customer);
      assert.equal(r.status, 200);
      const got = h1only.received.at(-1)!;
      assert.ok(!got.body.toString('utf8').includes(CARD));
      assert.equal(JSON.parse(got.body.toString('utf8')).note, 'kept');
      assert.equal(got.headers.host, authority);
    } finally {
      session.close();
    }
  });

  test('reading rules: :authority and Host disagreeing, a foreign host, a bad path, a body over the limit, bad JSON — refused, nothing upstream', async () => {
    const authority = `127.0.0.1:${h2.port}`;
    const session = await h2ThroughConnect(p.proxy.address.port, authority, p.proxy.caPem);
    try {
      const before = h2.received.length;
      const disagree = await h2Request(session, post('/v1/customers/1', authority, { host: 'other.example' }), customer);
      assert.equal(disagree.status, 400);
      assert.match(disagree.body.toString('utf8'), /:authority and Host/);
      const foreign = await h2Request(session, post('/v1/customers/1', 'evil.example:443'), customer);
      assert.equal(foreign.status, 400);
      const badPath = await h2Request(session, post('/v1/customers/a%2Fb', authority), customer);
      assert.equal(badPath.status, 400);
      const big = await h2Request(session, post('/v1/customers/1', authority), JSON.stringify({ cardNumber: CARD, pad: 'x'.repeat(5000) }));
      assert.equal(big.status, 413);
      const bad = await h2Request(session, post('/v1/customers/1', authority), `{"cardNumber":"${CARD}"`);
      assert.equal(bad.status, 400);
      assert.ok(!bad.body.toString('utf8').includes(CARD));
      assert.equal(h2.received.length, before, 'nothing reached the upstream');
      assert.ok(!p.logText().includes(CARD));
      // The connection still serves after the refusals.
      const ok = await h2Request(session, post('/v1/customers/1', authority), customer);
      assert.equal(ok.status, 200);
    } finally {
      session.close();
    }
  });

  test('curl --http2 through CONNECT with the gateway CA', async (t) => {
    const version = spawnSync('curl', ['--version'], { encoding: 'utf8' });
    if (version.status !== 0 || !/HTTP2/.test(version.stdout)) {
      t.skip('curl with HTTP/2 is not installed (apt-get install curl)');
      console.log('# SKIP curl --http2 test: curl with HTTP/2 is not installed');
      return;
    }
    const dir = tempDir();
    const caFile = join(dir, 'gateway-ca.pem');
    writeFileSync(caFile, p.proxy.caPem);
    const before = h2.received.length;
    // Not spawnSync: the proxy answering curl runs in this process.
    const run = await promisify(execFile)(
      'curl',
      ['-sS', '--http2', '--proxy', p.url, '--cacert', caFile, '-o', '/dev/null', '-w', '%{http_version} %{http_code}', '-H', 'content-type: application/json', '--data-binary', customer, `https://127.0.0.1:${h2.port}/v1/customers/7`],
      { encoding: 'utf8', timeout: 10_000 },
    ).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? String(err) }));
    assert.equal(run.stdout, '2 200', run.stderr);
    assert.ok(!h2.received[before]!.body.toString('utf8').includes(CARD));
  });
});
