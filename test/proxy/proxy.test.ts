// Whole-proxy tests on loopback: real upstreams (HTTP and HTTPS), real clients (undici ProxyAgent,
// raw sockets, curl when installed), the real engine over the default manifests.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { brotliCompressSync, brotliDecompressSync, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { ProxyAgent, request } from 'undici';
import {
  CARD,
  proxyConfig,
  route,
  startTestProxy,
  startUpstream,
  tempDir,
  upstreamPki,
  type TestPki,
  type TestProxy,
  type Upstream,
} from './helpers.ts';

const MASKED = '************1111';
const json = (o: unknown): string => JSON.stringify(o);

/** Sends raw bytes to a port and collects everything until the server closes or `ms` pass. */
function rawExchange(port: number, payload: string | Buffer, ms = 500): Promise<string> {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    const done = (): void => {
      s.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    s.on('close', done);
    setTimeout(done, ms);
    s.write(payload);
  });
}

describe('egress proxy', () => {
  let pki: TestPki;
  let plain: Upstream; // routed for /v1/customers/** and forms
  let secure: Upstream; // HTTPS, routed (intercepted)
  let unrouted: Upstream; // HTTPS, no route: blind tunnel
  let slow: Upstream;
  let p: TestProxy;
  let agent: ProxyAgent; // CONNECT for everything
  let absoluteAgent: ProxyAgent; // absolute-form for http://

  before(async () => {
    const dir = tempDir();
    pki = upstreamPki(dir);
    plain = await startUpstream();
    secure = await startUpstream({ tls: pki });
    unrouted = await startUpstream({ tls: pki });
    slow = await startUpstream({
      handler: (_req, res) => {
        const t = setTimeout(() => res.end('late'), 1500);
        res.on('close', () => clearTimeout(t));
      },
    });
    const deadPort = await (async () => {
      const u = await startUpstream();
      await u.close();
      return u.port;
    })();
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: pki.caFile,
        responseTimeoutMs: 400,
        routes: [
          route('strict-errors', {
            match: { host: '127.0.0.1', port: plain.port, path: '/v1/strict/**' },
            request: { manifest: 'customer', jobType: 'Pseudonymise' },
          }),
          route('lenient', {
            match: { host: '127.0.0.1', port: plain.port, path: '/v1/lenient' },
            request: { manifest: 'customer', jobType: 'Pseudonymise' },
            onError: 'passthrough',
          }),
          route('round-trip', {
            match: { host: '127.0.0.1', port: plain.port, path: '/v1/echo' },
            request: { manifest: 'customer', jobType: 'Pseudonymise' },
            response: { manifest: 'customer', jobType: 'Reconstruct' },
          }),
          route('customers', {
            match: { host: '127.0.0.1', port: plain.port, methods: ['POST', 'PUT'], path: '/v1/customers/**' },
            request: { manifest: 'customer', jobType: 'Mask', queryParams: ['cardNumber'] },
            maxBodyBytes: 2048,
          }),
          route('forms', {
            match: { host: '127.0.0.1', port: plain.port, path: '/form', contentType: 'application/x-www-form-urlencoded' },
            request: { manifest: 'customer', jobType: 'Mask' },
          }),
          route('secure', {
            match: { host: '127.0.0.1', port: secure.port, path: '/v1/**' },
            request: { manifest: 'customer', jobType: 'Mask' },
          }),
          route('by-name', {
            match: { host: 'localhost', port: secure.port },
            request: { manifest: 'customer', jobType: 'Mask' },
          }),
          route('slow', { match: { port: slow.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('down', { match: { port: deadPort }, request: { manifest: 'customer', jobType: 'Mask' } }),
        ],
        reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: `${plain.origin}/v1` }],
      }),
    );
    agent = new ProxyAgent({ uri: p.url, requestTls: { ca: p.proxy.caPem } });
    absoluteAgent = new ProxyAgent({ uri: p.url, proxyTunnel: false });
    (globalThis as { deadPort?: number }).deadPort = deadPort;
  });

  after(async () => {
    await agent.close();
    await absoluteAgent.close();
    await p.close();
    await Promise.all([plain.close(), secure.close(), unrouted.close(), slow.close()]);
  });

  const lastReceived = (u: Upstream) => u.received[u.received.length - 1];

  test('absolute-form HTTP: the upstream receives the masked body, the app gets a request id', async () => {
    const body = json({ customer: { name: 'Ada Lovelace', cardNumber: CARD }, note: 'kept' });
    const rawBefore = plain.rawBytes().length;
    const res = await request(`${plain.origin}/v1/customers/42?cardNumber=${CARD}&x=1`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-abs-1' },
      body,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-request-id'], 'req-abs-1');
    const echoed = JSON.parse(await res.body.text());
    assert.equal(echoed.customer.cardNumber, MASKED);
    assert.equal(echoed.note, 'kept');
    const got = lastReceived(plain);
    assert.equal(got.url, `/v1/customers/42?cardNumber=${MASKED}&x=1`);
    assert.equal(got.headers['content-length'], String(got.body.length));
    assert.ok(!plain.rawBytes().subarray(rawBefore).includes(CARD));
    assert.match(p.logText(), /"route":"customers".*"outcome":"ok"|"outcome":"ok".*"route":"customers"/);
    const metrics = (await p.metrics.render()).body;
    assert.match(metrics, /dpg_proxy_requests_total\{route="customers",outcome="ok"\} 1/);
  });

  test('non-matching traffic passes untouched, byte for byte', async () => {
    const body = json({ cardNumber: CARD });
    const res = await request(`${plain.origin}/v1/other`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-custom': 'a' },
      body,
    });
    assert.equal(await res.body.text(), body);
    const got = lastReceived(plain);
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['x-custom'], 'a');
    // GET on a POST/PUT-only route is not matched either.
    const get = await request(`${plain.origin}/v1/customers/1`, { dispatcher: absoluteAgent });
    assert.equal(get.statusCode, 200);
    await get.body.text();
  });

  test('HEAD passes through without a body', async () => {
    const res = await request(`${plain.origin}/v1/other`, { dispatcher: absoluteAgent, method: 'HEAD' });
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), '');
  });

  test('CONNECT to a routed IP is intercepted with a leaf for the IP (SAN IP); upstream TLS is verified with upstreamCa', async () => {
    const res = await request(`${secure.origin}/v1/customers`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json([{ cardNumber: CARD }, { cardNumber: '5555 5555 5555 4444' }]),
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(JSON.parse(await res.body.text()), [{ cardNumber: MASKED }, { cardNumber: '**** **** **** 4444' }]);
    assert.ok(!secure.rawBytes().includes(CARD));

    // The certificate the app sees is the gateway's, for the IP address.
    const cert = await peerCertificateThroughProxy(p.proxy.address.port, '127.0.0.1', secure.port, p.proxy.caPem);
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.ok(cert.checkIssued(new X509Certificate(p.proxy.caPem)));
  });

  test('CONNECT to a routed DNS name gets a leaf with SAN DNS', async () => {
    const cert = await peerCertificateThroughProxy(p.proxy.address.port, 'localhost', secure.port, p.proxy.caPem, 'localhost');
    assert.match(cert.subjectAltName ?? '', /DNS:localhost/);
  });

  test('CONNECT to an unrouted host is a blind tunnel: the app sees the upstream\'s own certificate', async () => {
    const cert = await peerCertificateThroughProxy(p.proxy.address.port, '127.0.0.1', unrouted.port, pki.caPem);
    assert.ok(cert.checkIssued(new X509Certificate(pki.caPem)));
    const body = json({ cardNumber: CARD });
    const tunnelled = new ProxyAgent({ uri: p.url, requestTls: { ca: pki.caPem } });
    const res = await request(`${unrouted.origin}/v1/x`, { dispatcher: tunnelled, method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(await res.body.text(), body);
    await tunnelled.close();
  });

  test('plain HTTP tunnelled through CONNECT to a routed host is intercepted too', async () => {
    const res = await request(`${plain.origin}/v1/customers/7`, {
      dispatcher: agent,
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: json({ cardNumber: CARD }),
    });
    assert.deepEqual(JSON.parse(await res.body.text()), { cardNumber: MASKED });
  });

  for (const [coding, encode, decode] of [
    ['gzip', gzipSync, gunzipSync],
    ['deflate', deflateSync, inflateSync],
    ['br', brotliCompressSync, brotliDecompressSync],
  ] as const) {
    test(`${coding} bodies are decoded, protected and re-encoded with the same coding`, async () => {
      const res = await request(`${plain.origin}/v1/customers/z`, {
        dispatcher: absoluteAgent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': coding },
        body: encode(Buffer.from(json({ cardNumber: CARD }))),
      });
      assert.equal(res.statusCode, 200);
      await res.body.arrayBuffer();
      const got = lastReceived(plain);
      assert.equal(got.headers['content-encoding'], coding);
      assert.equal(got.headers['content-length'], String(got.body.length));
      assert.deepEqual(JSON.parse(decode(got.body).toString()), { cardNumber: MASKED });
    });
  }

  test('chunked request bodies are accepted and forwarded with a Content-Length', async () => {
    const res = await request(`${plain.origin}/v1/customers/c`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Readable.from([Buffer.from('{"cardNum'), Buffer.from(`ber":"${CARD}"}`)]),
    });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = lastReceived(plain);
    assert.equal(got.headers['transfer-encoding'], undefined);
    assert.deepEqual(JSON.parse(got.body.toString()), { cardNumber: MASKED });
  });

  test('form bodies: named fields protected, order and other fields kept byte for byte', async () => {
    const res = await request(`${plain.origin}/form`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `a=%7Ekeep+me&cardNumber=${CARD}&card_number=4111+1111+1111+1111&z=`,
    });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    assert.equal(
      lastReceived(plain).body.toString(),
      'a=%7Ekeep+me&cardNumber=************1111&card_number=****+****+****+1111&z=',
    );
  });

  test('response phase: Pseudonymise on the way out, Reconstruct on the way back', async () => {
    const original = { name: 'Ada Lovelace', cardNumber: CARD, email: 'ada.lovelace@example.com' };
    const res = await request(`${plain.origin}/v1/echo`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json(original),
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(JSON.parse(await res.body.text()), original);
    const sent = JSON.parse(lastReceived(plain).body.toString());
    assert.notEqual(sent.cardNumber, CARD);
    assert.equal(sent.cardNumber.length, CARD.length);
  });

  test('reverse listener maps a local port to the upstream base URL', async () => {
    const rev = p.proxy.reverse[0];
    const res = await request(`http://127.0.0.1:${rev.port}/customers/9`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json({ cardNumber: CARD }),
    });
    assert.deepEqual(JSON.parse(await res.body.text()), { cardNumber: MASKED });
    const got = lastReceived(plain);
    assert.equal(got.url, '/v1/customers/9');
    assert.equal(got.headers.host, `127.0.0.1:${plain.port}`);
  });

  test('Expect: 100-continue: an oversized declared body is refused before it is sent', async () => {
    const before = plain.received.length;
    const out = await rawExchange(
      p.proxy.address.port,
      `POST ${plain.origin}/v1/customers/big HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n`,
    );
    assert.match(out, /^HTTP\/1\.1 413 /);
    assert.match(out, /"code":"PAYLOAD_TOO_LARGE"/);
    assert.equal(plain.received.length, before);
    // Within the limit: 100 Continue, then the exchange.
    const ok = await rawExchange(
      p.proxy.address.port,
      `POST ${plain.origin}/v1/customers/small HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n{}`,
    );
    assert.match(ok, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  test('WebSocket-style upgrades are spliced through untouched', async () => {
    const { createServer } = await import('node:http');
    const ws = createServer();
    ws.on('upgrade', (_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
    });
    await new Promise<void>((r) => ws.listen(0, '127.0.0.1', r));
    const port = (ws.address() as { port: number }).port;
    const out = await new Promise<string>((resolve) => {
      const s = netConnect(p.proxy.address.port, '127.0.0.1');
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n') && !text.includes('echo:')) s.write('ping');
        if (text.includes('echo:ping')) {
          s.destroy();
          resolve(text);
        }
      });
      s.write(`GET http://127.0.0.1:${port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n`);
    });
    assert.match(out, /^HTTP\/1\.1 101 /);
    ws.close();
    ws.closeAllConnections();
  });

  test('the CA is served on the proxy listener too', async () => {
    const res = await request(`${p.url}/proxy/ca.pem`);
    assert.equal(await res.body.text(), p.proxy.caPem);
  });

  test('curl through the proxy trusts the gateway CA', async (t) => {
    const run = promisify(execFile);
    try {
      await run('curl', ['--version']);
    } catch {
      t.skip('curl is not installed');
      return;
    }
    const dir = tempDir();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${dir}/ca.pem`, p.proxy.caPem);
    const { stdout } = await run('curl', [
      '-sS', '--noproxy', '', '-x', p.url, '--cacert', `${dir}/ca.pem`,
      '-H', 'content-type: application/json', '--data', json({ cardNumber: CARD }),
      `${secure.origin}/v1/curl`,
    ]);
    assert.deepEqual(JSON.parse(stdout), { cardNumber: MASKED });
  });

  describe('fault matrix: the upstream receives zero unprotected bytes', () => {
    const post = (url: string, body: string | Readable, headers: Record<string, string> = {}) =>
      request(url, { dispatcher: absoluteAgent, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

    test('protection error → 422 with the catalogue code, nothing sent', async () => {
      const before = plain.received.length;
      const res = await post(`${plain.origin}/v1/strict/a`, json({ iban: 'DE00 1234 5678' }));
      assert.equal(res.statusCode, 422);
      assert.equal(res.headers['content-type'], 'application/problem+json');
      const problem = JSON.parse(await res.body.text());
      assert.equal(problem.code, 'VALUE_NOT_PROTECTABLE');
      assert.ok(problem.requestId);
      assert.equal(plain.received.length, before);
    });

    test('oversized body → 413, nothing sent', async () => {
      const before = plain.received.length;
      const rawBefore = plain.rawBytes().length;
      const res = await post(`${plain.origin}/v1/customers/big`, json({ cardNumber: CARD, pad: 'x'.repeat(4096) }));
      assert.equal(res.statusCode, 413);
      assert.equal(JSON.parse(await res.body.text()).code, 'PAYLOAD_TOO_LARGE');
      assert.equal(plain.received.length, before);
      // Chunked (no declared length) is cut at the limit as well.
      const chunked = await post(`${plain.origin}/v1/customers/big`, Readable.from([Buffer.from(`{"cardNumber":"${CARD}","pad":"`), Buffer.alloc(4096, 0x78), Buffer.from('"}')]));
      assert.equal(chunked.statusCode, 413);
      await chunked.body.text();
      assert.equal(plain.received.length, before);
      assert.equal(plain.rawBytes().length, rawBefore);
    });

    test('malformed body → 400 MALFORMED_DATA_SET, nothing sent', async () => {
      const before = plain.received.length;
      const res = await post(`${plain.origin}/v1/customers/bad`, `{"cardNumber":"${CARD}"`);
      assert.equal(res.statusCode, 400);
      const text = await res.body.text();
      assert.equal(JSON.parse(text).code, 'MALFORMED_DATA_SET');
      assert.ok(!text.includes(CARD));
      assert.equal(plain.received.length, before);
    });

    test('unknown content type on a route without dataSetType → 415, nothing sent', async () => {
      const before = plain.received.length;
      const res = await post(`${plain.origin}/v1/customers/t`, `cardNumber=${CARD}`, { 'content-type': 'text/plain' });
      assert.equal(res.statusCode, 415);
      await res.body.text();
      assert.equal(plain.received.length, before);
    });

    test('upstream down → 502', async () => {
      const port = (globalThis as { deadPort?: number }).deadPort as number;
      const res = await post(`http://127.0.0.1:${port}/x`, json({ cardNumber: CARD }));
      assert.equal(res.statusCode, 502);
      assert.equal(JSON.parse(await res.body.text()).code, 'UPSTREAM_UNREACHABLE');
    });

    test('upstream slow → 504', async () => {
      const res = await post(`${slow.origin}/x`, json({ cardNumber: CARD }));
      assert.equal(res.statusCode, 504);
      assert.equal(JSON.parse(await res.body.text()).code, 'UPSTREAM_TIMEOUT');
      assert.ok(!slow.rawBytes().includes(CARD));
    });

    test('client abort mid-body → nothing sent upstream', async () => {
      const before = plain.received.length;
      const rawBefore = plain.rawBytes().length;
      await new Promise<void>((resolve) => {
        const s = netConnect(p.proxy.address.port, '127.0.0.1', () => {
          s.write(`POST ${plain.origin}/v1/customers/abort HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"cardNumber":"${CARD}",`);
          setTimeout(() => {
            s.destroy();
            resolve();
          }, 100);
        });
      });
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(plain.received.length, before);
      assert.equal(plain.rawBytes().length, rawBefore);
      assert.match(p.logText(), /"outcome":"CLIENT_ABORTED"/);
    });

    test('onError: passthrough forwards the original body, explicitly and audited', async () => {
      const res = await post(`${plain.origin}/v1/lenient`, json({ iban: 'DE00 1234 5678' }));
      assert.equal(res.statusCode, 200);
      await res.body.text();
      assert.deepEqual(JSON.parse(lastReceived(plain).body.toString()), { iban: 'DE00 1234 5678' });
      assert.match(p.logText(), /"outcome":"passthrough"/);
    });

    test('no card number ever reaches the log', () => {
      assert.ok(!p.logText().includes(CARD));
      assert.ok(!p.logText().includes('1111 1111'));
    });
  });
});

/** Opens CONNECT through the proxy, then TLS, and returns the certificate presented. */
function peerCertificateThroughProxy(
  proxyPort: number,
  host: string,
  port: number,
  ca: string,
  servername?: string,
): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = netConnect(proxyPort, '127.0.0.1');
    s.once('error', reject);
    s.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
    s.once('data', (d: Buffer) => {
      if (!d.toString().startsWith('HTTP/1.1 200')) {
        reject(new Error(`CONNECT refused: ${d.toString().split('\r\n')[0]}`));
        return;
      }
      const t = tlsConnect({ socket: s, ca, servername, host: servername ? undefined : host });
      t.once('secureConnect', () => {
        const cert = t.getPeerX509Certificate();
        t.destroy();
        if (cert) resolve(cert);
        else reject(new Error('no certificate'));
      });
      t.once('error', reject);
    });
  });
}
