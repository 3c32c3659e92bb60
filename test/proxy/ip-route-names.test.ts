// Review finding 12a: a route for an IP literal must also cover a request whose host NAME resolves
// to that address — on the forward proxy (absolute-form and CONNECT), on reverse listeners and on
// upgrades — because the upstream it reaches is the routed address. Names are resolved (cached,
// with the injected resolver) only on ports an IP-literal route covers, and the request is dialled
// at the address it was matched on.

import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { ResolveHost } from '../../src/proxy/reading/route-host-addresses.ts';
import {
  CARD,
  connectTcp,
  exchangeRaw,
  proxyConfig,
  rawPost,
  route,
  sendRaw,
  startTestProxy,
  startUpstream,
  tempDir,
  upstreamPki,
  type TestPki,
  type TestProxy,
  type Upstream,
} from './helpers.ts';

const MASKED = '************1111';
const BODY = JSON.stringify({ cardNumber: CARD });
const mask = { manifest: 'customer', jobType: 'Mask' } as const;
const cardOf = (u: Upstream): unknown => JSON.parse(u.received.at(-1)?.body.toString() || '{}').cardNumber;

describe('a route for an IP literal covers the names that resolve to it', () => {
  let plain: Upstream;
  let tls: Upstream;
  let pki: TestPki;
  let p: TestProxy;
  const lookups: string[] = [];
  const names: Record<string, string[]> = {
    'localhost': ['::1', '127.0.0.1'],
    'partner.test': ['127.0.0.1'],
  };
  const resolve: ResolveHost = async (name) => {
    lookups.push(name);
    const found = names[name];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found;
  };

  before(async () => {
    pki = upstreamPki(tempDir());
    plain = await startUpstream();
    tls = await startUpstream({ tls: pki });
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: pki.caFile,
        routes: [
          route('plain-by-ip', { match: { host: '127.0.0.1', port: plain.port, path: '/v1/customers/**' }, request: mask }),
          route('tls-by-ip', { match: { host: '127.0.0.1', port: tls.port, path: '/v1/customers/**' }, request: mask }),
        ],
        reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: `http://localhost:${plain.port}` }],
      }),
      tempDir(),
      resolve,
    );
  });
  after(async () => {
    await p.close();
    await Promise.all([plain.close(), tls.close()]);
  });

  test('forward proxy, absolute-form by name: masked, dialled at the routed address', async () => {
    for (const name of ['localhost', 'partner.test', 'PARTNER.test.']) {
      const res = await sendRaw(p.proxy.address.port, rawPost(`http://${name}:${plain.port}/v1/customers`, `${name}:${plain.port}`, BODY));
      assert.equal(res.status, 200, `${name}: ${res.body}`);
      assert.equal(cardOf(plain), MASKED, name);
    }
  });

  test('CONNECT by name: intercepted (gateway certificate), masked at the upstream', async () => {
    const socket = await connectTcp(p.proxy.address.port);
    const established = await new Promise<string>((resolveHead) => {
      let text = '';
      socket.on('data', function onData(d: Buffer) {
        text += d.toString('latin1');
        if (!text.includes('\r\n\r\n')) return;
        socket.off('data', onData);
        resolveHead(text);
      });
      socket.write(`CONNECT localhost:${tls.port} HTTP/1.1\r\nHost: localhost:${tls.port}\r\n\r\n`);
    });
    assert.match(established, /^HTTP\/1\.1 200 /);
    // The app trusts both CAs: a blind tunnel (the upstream's certificate) would work as well, and
    // deliver the card in clear; interception shows the gateway's certificate.
    const t = tlsConnect({ socket, servername: 'localhost', ca: [p.proxy.caPem, pki.caPem] });
    await new Promise<void>((ok, fail) => t.once('secureConnect', ok).once('error', fail));
    assert.match(t.getPeerX509Certificate()?.issuer ?? '', /DPG Egress Proxy CA/);
    const res = await exchangeRaw(t, rawPost('/v1/customers', `localhost:${tls.port}`, BODY));
    t.destroy();
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(cardOf(tls), MASKED);
  });

  test('reverse listener whose upstream is a name of the routed address: masked', async () => {
    const reverse = p.proxy.reverse[0];
    const res = await sendRaw(reverse.port, rawPost('/v1/customers', `127.0.0.1:${reverse.port}`, BODY));
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(cardOf(plain), MASKED);
  });

  test('an upgrade by name on a routed path is refused like one by address', async () => {
    const before = plain.received.length;
    const status = await new Promise<number>((resolveStatus, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port: p.proxy.address.port,
        path: `http://localhost:${plain.port}/v1/customers`,
        headers: { host: `localhost:${plain.port}`, connection: 'upgrade', upgrade: 'websocket' },
      });
      req.on('response', (res) => {
        res.resume();
        resolveStatus(res.statusCode ?? 0);
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolveStatus(101);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 400);
    assert.equal(plain.received.length, before, 'nothing reached the upstream');
  });

  test('names are looked up once and cached; only on ports an IP-literal route covers', async () => {
    const seen = lookups.filter((n) => n === 'partner.test').length;
    for (let i = 0; i < 3; i++) await sendRaw(p.proxy.address.port, rawPost(`http://partner.test:${plain.port}/v1/customers`, `partner.test:${plain.port}`, BODY));
    assert.equal(lookups.filter((n) => n === 'partner.test').length, seen, 'served from the cache');
    const other = await startUpstream();
    try {
      const res = await sendRaw(p.proxy.address.port, rawPost(`http://localhost:${other.port}/v1/customers`, `localhost:${other.port}`, BODY));
      assert.equal(res.status, 200);
      assert.equal(cardOf(other), CARD, 'a port no IP-literal route covers is not routed');
    } finally {
      await other.close();
    }
  });

  test('a name that does not resolve on a covered port is refused (502), nothing sent', async () => {
    const before = plain.received.length;
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://unknown.test:${plain.port}/v1/customers`, `unknown.test:${plain.port}`, BODY));
    assert.equal(res.status, 502);
    assert.match(res.body.toString(), /could not be resolved/);
    assert.equal(plain.received.length, before);
  });
});
