// Issue 16 class 9: one matching on every listener. Loopback is exempt from capture, so a captured
// app can reach the forward proxy on 127.0.0.1:15001; there a name that resolves to a routed
// address must be routed exactly as the transparent listener routes a connection to that address.
// The same request, by a name the route does not spell, through capture and through the forward
// proxy (absolute-form and CONNECT): masked every way.

import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { CARD, route, startUpstream, tempDir, type TestPki, type Upstream } from '../helpers.ts';
import { namedPki, startTransparentProxy, startUpstreamOn, type TransparentProxy } from './helpers.ts';

const MASKED = '************1111';
const body = JSON.stringify({ cardNumber: CARD });
const cardOf = (u: Upstream): unknown => JSON.parse(u.received.at(-1)?.body.toString() || '{}').cardNumber;

describe('the forward listener treats names as the transparent listener does', () => {
  let http: Upstream;
  let https: Upstream;
  let pki: TestPki;
  let tp: TransparentProxy;

  before(async () => {
    pki = namedPki(tempDir(), ['api.partner.test', 'ingress.test']);
    http = await startUpstreamOn(['127.0.0.2']);
    https = await startUpstream({ tls: pki, host: '127.0.0.2' });
    tp = await startTransparentProxy({
      routes: [
        route('partner-http', { match: { host: 'api.partner.test', port: http.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
        route('partner-https', { match: { host: 'api.partner.test', port: https.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
      ],
      upstreamCa: pki.caFile,
      // Both names resolve to the one address the upstream listens on.
      hosts: { 'api.partner.test': ['127.0.0.2'], 'ingress.test': ['127.0.0.2'] },
    });
    // Readiness: route host names looked up once.
    for (let i = 0; i < 50 && !tp.proxy.ready(); i++) await new Promise((r) => setTimeout(r, 20));
  });
  after(async () => {
    await tp.close();
    await Promise.all([http.close(), https.close()]);
  });

  test('through capture: Host ingress.test to the routed address is masked', async () => {
    tp.redirectNext({ address: '127.0.0.2', port: http.port, family: 4 });
    const text = await new Promise<string>((resolve) => {
      const s = netConnect(tp.port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => resolve(got));
      s.write(`POST /v1/customers HTTP/1.1\r\nHost: ingress.test:${http.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.equal(cardOf(http), MASKED);
  });

  test('through the forward proxy on 127.0.0.1: http://ingress.test/… is masked, dialled at the routed address', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: tp.proxy.address.port, method: 'POST', path: `http://ingress.test:${http.port}/v1/customers`, headers: { host: `ingress.test:${http.port}`, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(status, 200);
    assert.equal(cardOf(http), MASKED);
    assert.equal(http.received.at(-1)?.headers.host, `ingress.test:${http.port}`);
  });

  test('through the forward proxy: CONNECT ingress.test is intercepted (gateway certificate) and masked', async () => {
    const socket = netConnect(tp.proxy.address.port, '127.0.0.1');
    socket.write(`CONNECT ingress.test:${https.port} HTTP/1.1\r\nHost: ingress.test:${https.port}\r\n\r\n`);
    await new Promise<void>((resolve) => {
      let got = '';
      const onData = (d: Buffer): void => {
        got += d.toString('latin1');
        if (!got.includes('\r\n\r\n')) return;
        socket.off('data', onData);
        assert.match(got, /^HTTP\/1\.1 200/);
        resolve();
      };
      socket.on('data', onData);
    });
    const tls = tlsConnect({ socket, servername: 'ingress.test', ca: tp.caPem });
    await new Promise<void>((resolve, reject) => {
      tls.once('secureConnect', () => resolve());
      tls.once('error', reject);
    });
    assert.match(tls.getPeerX509Certificate()?.issuer ?? '', /DPG Egress Proxy CA/);
    const text = await new Promise<string>((resolve) => {
      let got = '';
      tls.on('data', (d) => (got += d.toString()));
      tls.on('close', () => resolve(got));
      tls.write(`POST /v1/customers HTTP/1.1\r\nHost: ingress.test:${https.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.equal(cardOf(https), MASKED);
  });
});
