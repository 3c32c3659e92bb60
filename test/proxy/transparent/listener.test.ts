// The transparent listener on loopback, its original destinations given by the test instead of a
// kernel redirect (test/capture/ proves the redirect itself): what is spliced, what is read as HTTP,
// what is intercepted, and that a name never takes a request around its route.

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { CARD, route, startUpstream, tempDir, type TestPki, type Upstream } from '../helpers.ts';
import type { OriginalDestination } from '../../../src/core/original-destination.ts';
import { namedPki, startTransparentProxy, startUpstreamOn, type TransparentProxy } from './helpers.ts';

const MASKED = '************1111';
const body = JSON.stringify({ cardNumber: CARD, note: 'hello' });

/** Writes raw bytes to the listener and collects everything until the other side closes (or `ms`). */
function raw(port: number, payload: string | Buffer, ms = 1500): Promise<{ data: Buffer; reset: boolean }> {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let reset = false;
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET') reset = true;
    });
    const timer = setTimeout(() => s.destroy(), ms);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(chunks), reset });
    });
    s.write(payload);
  });
}

const post = (host: string, path = '/v1/customers'): string =>
  `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;

describe('transparent listener (loopback, injected original destinations)', () => {
  let http: Upstream;
  let other: Upstream;
  let https: Upstream;
  let pki: TestPki;
  let tp: TransparentProxy;

  before(async () => {
    pki = namedPki(tempDir(), ['api.partner.test', 'other.test', 'localhost', '127.0.0.1']);
    http = await startUpstreamOn(['127.0.0.1', '127.0.0.2']);
    other = await startUpstream();
    https = await startUpstream({ tls: pki });
    tp = await startTransparentProxy({
      routes: [
        route('partner-http', { match: { host: 'api.partner.test', port: http.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
        route('partner-https', { match: { host: 'api.partner.test', port: https.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
      ],
      upstreamCa: pki.caFile,
      hosts: { 'api.partner.test': ['127.0.0.2'] },
    });
  });
  after(async () => {
    await tp.close();
    await Promise.all([http.close(), other.close(), https.close()]);
  });

  test('a port no route names is spliced byte for byte, not parsed', async () => {
    const payload = post('api.partner.test') + 'TRAILING-NOT-HTTP\r\n';
    tp.redirectNext({ address: '127.0.0.1', port: other.port, family: 4 });
    const before = other.rawBytes().length;
    await raw(tp.port, payload, 500);
    assert.equal(other.rawBytes().subarray(before).toString('latin1'), payload);
  });

  test('routed Host on a covered port: the body arrives masked at the original destination', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const res = await raw(tp.port, post('api.partner.test'));
    assert.match(res.data.toString(), /^HTTP\/1\.1 200/);
    const got = http.received.at(-1);
    assert.equal(JSON.parse(got?.body.toString() ?? '{}').cardNumber, MASKED);
    assert.equal(got?.headers.host, 'api.partner.test');
  });

  test('unrouted Host on a covered port is relayed byte-equal', async () => {
    const payload = post('unrouted.test');
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const before = http.rawBytes().length;
    const res = await raw(tp.port, payload);
    assert.match(res.data.toString(), /^HTTP\/1\.1 200/);
    assert.equal(http.rawBytes().subarray(before).toString('latin1'), payload);
  });

  test('a request naming another host at an address the routed name resolves to is protected', async () => {
    // api.partner.test resolves to 127.0.0.2 for the gateway: that address is the routed host.
    tp.redirectNext({ address: '127.0.0.2', port: http.port, family: 4 });
    const res = await raw(tp.port, post('innocent.test'));
    assert.match(res.data.toString(), /^HTTP\/1\.1 200/);
    assert.equal(JSON.parse(http.received.at(-1)?.body.toString() ?? '{}').cardNumber, MASKED);
    assert.equal(http.received.at(-1)?.headers.host, 'innocent.test');
  });

  test('unusual heads (absolute-form, duplicate Host) are read in full and routed on every name', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const abs = post('unrouted.test').replace('POST /v1/customers', `POST http://api.partner.test:${http.port}/v1/customers`);
    assert.match((await raw(tp.port, abs)).data.toString(), /^HTTP\/1\.1 200/);
    assert.equal(JSON.parse(http.received.at(-1)?.body.toString() ?? '{}').cardNumber, MASKED);
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const twoHosts = post('unrouted.test').replace('Host: unrouted.test', 'Host: unrouted.test\r\nHost: api.partner.test');
    const before = http.received.length;
    const res = await raw(tp.port, twoHosts);
    assert.match(res.data.toString(), /^HTTP\/1\.1 400/);
    assert.match(res.data.toString(), /More than one Host header/);
    assert.equal(http.received.length, before, 'nothing reached the upstream');
  });

  test('every request of a kept-alive connection is routed, not just the first', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const first = post('api.partner.test').replace('Connection: close\r\n', '');
    const res = await raw(tp.port, first + post('api.partner.test'));
    assert.equal((res.data.toString().match(/HTTP\/1\.1 200/g) ?? []).length, 2);
    for (const r of http.received.slice(-2)) assert.equal(JSON.parse(r.body.toString()).cardNumber, MASKED);
  });

  test('TLS to a routed server name is intercepted: gateway leaf to the app, verified upstream, masked body', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    const { status, peerSubject } = await new Promise<{ status: number; peerSubject: string }>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: tp.port, servername: 'api.partner.test', ca: tp.caPem, method: 'POST', path: '/v1/customers', agent: false, headers: { host: 'api.partner.test', 'content-type': 'application/json' } },
        (res) => {
          const cert = (res.socket as unknown as { getPeerX509Certificate(): X509Certificate }).getPeerX509Certificate();
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, peerSubject: cert.issuer }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(status, 200);
    assert.match(peerSubject, /DPG Egress Proxy CA/);
    assert.equal(JSON.parse(https.received.at(-1)?.body.toString() ?? '{}').cardNumber, MASKED);
  });

  test('TLS to an unrouted server name is spliced: the app sees the upstream certificate', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    const issuer = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port: tp.port, servername: 'other.test', ca: pki.caPem }, () => {
        resolve(s.getPeerX509Certificate()?.issuer ?? '');
        s.destroy();
      });
      s.on('error', reject);
    });
    assert.match(issuer, /Upstream Test CA/);
  });

  test('a malformed ClientHello on a covered port is reset, nothing sent upstream', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    // A handshake record whose ClientHello has two server_name extensions would be read two ways.
    const res = await raw(tp.port, Buffer.from('16030100050100000100', 'hex'));
    assert.equal(res.data.length, 0);
    assert.equal(res.reset, true);
  });

  test('a connection that was not redirected is reset', async () => {
    tp.redirectNext(undefined);
    const res = await raw(tp.port, post('api.partner.test'));
    assert.equal(res.reset, true);
    assert.match(tp.logText(), /not a redirected connection/);
  });

  test('HTTP/2 prior knowledge to a routed address is read as HTTP/2 (the listener answers with its SETTINGS; ./http2.test.ts reads it)', async () => {
    tp.redirectNext({ address: '127.0.0.2', port: http.port, family: 4 });
    const res = await raw(tp.port, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    // A SETTINGS frame (type 4 on stream 0) comes back: nothing was relayed to the upstream unread.
    assert.equal(res.data[3], 4);
  });

  test('a server-speaks-first protocol on a covered port works: silent client, banner relayed, then spliced', async () => {
    const banner = createNetServer((s: Socket) => {
      s.write('220 hello\r\n');
      s.on('data', (d) => s.end(`echo:${d.toString()}`));
    });
    await new Promise<void>((r) => banner.listen(0, '127.0.0.1', r));
    const port = (banner.address() as AddressInfo).port;
    const tp2 = await startTransparentProxy({ routes: [route('any-host', { match: { host: 'api.partner.test' }, request: { manifest: 'customer', jobType: 'Mask' } })] });
    try {
      tp2.redirectNext({ address: '127.0.0.1', port, family: 4 });
      const got = await new Promise<string>((resolve) => {
        const s = netConnect(tp2.port, '127.0.0.1');
        let text = '';
        s.on('data', (d) => {
          text += d.toString();
          if (text === '220 hello\r\n') s.write('EHLO me\r\n');
        });
        s.on('close', () => resolve(text));
      });
      assert.equal(got, '220 hello\r\necho:EHLO me\r\n');
    } finally {
      await tp2.close();
      banner.close();
    }
  });

  test('closing the proxy ends undecided and spliced connections by the drain, not by the grace timer', async () => {
    const tp3 = await startTransparentProxy({ routes: [route('r', { match: { host: 'api.partner.test', port: http.port }, request: { manifest: 'customer', jobType: 'Mask' } })] });
    // Each destination says when the listener has taken it (read its address): the connection is accepted.
    let taken = 0;
    const counted = (port: number): OriginalDestination => {
      let seen = false;
      return {
        port,
        family: 4,
        get address() {
          if (!seen) taken++;
          seen = true;
          return '127.0.0.1';
        },
      };
    };
    tp3.redirectNext(counted(http.port)); // covered: waits for bytes
    tp3.redirectNext(counted(other.port)); // not covered: spliced
    // One after the other, so they are accepted in the order of their destinations.
    const silent = netConnect(tp3.port, '127.0.0.1');
    await new Promise((r) => silent.once('connect', r));
    const spliced = netConnect(tp3.port, '127.0.0.1');
    const ended = [silent, spliced].map((s) => {
      s.on('error', () => undefined);
      return new Promise<void>((r) => s.once('close', () => r()));
    });
    while (taken < 2) await new Promise((r) => setTimeout(r, 10));
    // The default grace period (10 s): the drain closes both silent connections itself
    // (tunnel-drain.ts: silent through its first second, taken as idle), so nothing is left for the
    // grace timer to cut. Counted from the log, not timed.
    await tp3.proxy.close(10_000);
    await Promise.all(ended);
    const cut = tp3.logText().split('\n').filter((l) => l.includes('grace period over')).length;
    assert.equal(cut, 0, 'the grace timer had connections left to cut');
  });
});
