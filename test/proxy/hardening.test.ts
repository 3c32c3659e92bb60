// Regressions from the security review of the proxy: upgrades on routed requests, nested form keys,
// trailing-dot hosts, response phases on non-2xx responses, and `;params` in paths.

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ProxyAgent, request } from 'undici';
import { CARD, proxyConfig, route, startTestProxy, startUpstream, tempDir, upstreamPki, type TestPki, type TestProxy, type Upstream } from './helpers.ts';

const MASKED = '************1111';
const json = (o: unknown): string => JSON.stringify(o);

/** Writes `payload` on an open socket and collects what comes back until `until` matches, close, or `ms`. */
function exchangeOn(s: Socket | TLSSocket, payload: string, until: RegExp = /$^/, ms = 1500): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = (): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(text);
    };
    const timer = setTimeout(done, ms);
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (until.test(text)) done();
    });
    s.on('error', () => undefined);
    s.on('close', done);
    s.write(payload);
  });
}

function connectTo(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Opens `CONNECT authority` through the proxy; resolves with the socket once 200 arrived, or the refusal text. */
function connectThrough(proxyPort: number, authority: string): Promise<{ socket: Socket; status: string }> {
  return new Promise((resolve, reject) => {
    const s = netConnect(proxyPort, '127.0.0.1');
    s.once('error', reject);
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    s.once('data', (d: Buffer) => resolve({ socket: s, status: d.toString('latin1').split('\r\n')[0] }));
  });
}

/** The JSON body of a raw HTTP/1.1 response (Content-Length or chunked). */
function bodyOf(raw: string): unknown {
  const split = raw.indexOf('\r\n\r\n');
  let rest = raw.slice(split + 4);
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(raw.slice(0, split + 2))) return JSON.parse(rest);
  let out = '';
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (size === 0) return JSON.parse(out);
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 4 + size);
  }
}

const h2cHead = (requestTarget: string, host: string, body: string): string =>
  `POST ${requestTarget} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
  `HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

const wsHead = (method: string, requestTarget: string, host: string): string =>
  `${method} ${requestTarget} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
  `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;

const COMPLETE = /\r\n\r\n[^]*(\}|\r\n0\r\n\r\n)$/;

describe('proxy hardening (security review)', () => {
  let pki: TestPki;
  let plain: Upstream;
  let secure: Upstream;
  let errors: Upstream;
  let ws: Server; // answers 101 to any upgrade, then echoes
  let wsPort: number;
  let p: TestProxy;
  let absoluteAgent: ProxyAgent;

  before(async () => {
    pki = upstreamPki(tempDir());
    plain = await startUpstream();
    secure = await startUpstream({ tls: pki });
    errors = await startUpstream({
      handler: (req, res) => {
        const status = Number(/\/(\d{3})/.exec(req.url ?? '')?.[1] ?? 200);
        if (req.url?.includes('text')) {
          res.writeHead(status, { 'content-type': 'text/plain' });
          res.end(`card ${CARD} declined`);
        } else {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(json({ error: 'declined', cardNumber: CARD }));
        }
      },
    });
    ws = createServer();
    ws.on('upgrade', (_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
    });
    await new Promise<void>((r) => ws.listen(0, '127.0.0.1', r));
    wsPort = (ws.address() as AddressInfo).port;
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: pki.caFile,
        routes: [
          route('customers', {
            match: { host: '127.0.0.1', port: plain.port, methods: ['POST', 'PUT'], path: '/v1/customers/**' },
            request: { manifest: 'customer', jobType: 'Mask' },
          }),
          route('forms', {
            match: { host: '127.0.0.1', port: plain.port, path: '/form' },
            request: { manifest: 'customer', jobType: 'Mask' },
          }),
          route('secure', { match: { host: '127.0.0.1', port: secure.port, path: '/v1/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('ws-covered', { match: { host: '127.0.0.1', port: wsPort, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('dotted', { match: { host: 'localhost', path: '/v1/strict/**' }, request: { manifest: 'customer', jobType: 'Pseudonymise' } }),
          route('errors-masked', { match: { port: errors.port, path: '/mask/**' }, response: { manifest: 'customer', jobType: 'Mask' } }),
          route('errors-restored', { match: { port: errors.port, path: '/restore/**' }, response: { manifest: 'customer', jobType: 'Reconstruct' } }),
        ],
        reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: `${plain.origin}/v1` }],
      }),
    );
    absoluteAgent = new ProxyAgent({ uri: p.url, proxyTunnel: false });
  });

  after(async () => {
    await absoluteAgent.close();
    await p.close();
    ws.close();
    ws.closeAllConnections();
    await Promise.all([plain.close(), secure.close(), errors.close()]);
  });

  const body = json({ customer: { cardNumber: CARD } });
  const assertNoCardUpstream = (u: Upstream, rawBefore: number): void => assert.ok(!u.rawBytes().subarray(rawBefore).includes(CARD), 'card reached the upstream');

  describe('finding 1: an Upgrade header never skips protection', () => {
    test('h2c upgrade with a body on a routed path: forward proxy serves it as HTTP/1.1, protected', async () => {
      const rawBefore = plain.rawBytes().length;
      const out = await exchangeOn(await connectTo(p.proxy.address.port), h2cHead(`${plain.origin}/v1/customers/1`, `127.0.0.1:${plain.port}`, body), COMPLETE);
      assert.match(out, /^HTTP\/1\.1 200 /);
      assert.deepEqual(bodyOf(out), { customer: { cardNumber: MASKED } });
      assertNoCardUpstream(plain, rawBefore);
      const got = plain.received[plain.received.length - 1];
      assert.equal(got.headers.upgrade, undefined);
      assert.equal(got.headers['http2-settings'], undefined);
    });

    test('h2c upgrade on a routed path: reverse listener and intercepted CONNECT (plain and TLS) too', async () => {
      const rawBefore = plain.rawBytes().length;
      const rev = await exchangeOn(await connectTo(p.proxy.reverse[0].port), h2cHead('/customers/2', 'localhost', body), COMPLETE);
      assert.match(rev, /^HTTP\/1\.1 200 /);
      assert.deepEqual(bodyOf(rev), { customer: { cardNumber: MASKED } });

      const tunnel = await connectThrough(p.proxy.address.port, `127.0.0.1:${plain.port}`);
      assert.match(tunnel.status, / 200 /);
      const viaTunnel = await exchangeOn(tunnel.socket, h2cHead('/v1/customers/3', `127.0.0.1:${plain.port}`, body), COMPLETE);
      assert.deepEqual(bodyOf(viaTunnel), { customer: { cardNumber: MASKED } });
      assertNoCardUpstream(plain, rawBefore);

      const secureBefore = secure.rawBytes().length;
      const tls = await connectThrough(p.proxy.address.port, `127.0.0.1:${secure.port}`);
      const t = tlsConnect({ socket: tls.socket, ca: p.proxy.caPem, host: '127.0.0.1' });
      await new Promise<void>((resolve, reject) => t.once('secureConnect', resolve).once('error', reject));
      const viaTls = await exchangeOn(t, h2cHead('/v1/customers/4', `127.0.0.1:${secure.port}`, body), COMPLETE);
      assert.deepEqual(bodyOf(viaTls), { customer: { cardNumber: MASKED } });
      assertNoCardUpstream(secure, secureBefore);
    });

    test('other upgrades on a routed request are refused on every listener, nothing sent upstream', async () => {
      const before = plain.received.length;
      const rawBefore = plain.rawBytes().length;
      const outs = [
        await exchangeOn(await connectTo(p.proxy.address.port), wsHead('POST', `${plain.origin}/v1/customers/1`, `127.0.0.1:${plain.port}`)),
        await exchangeOn(await connectTo(p.proxy.reverse[0].port), wsHead('PUT', '/customers/1', 'localhost')),
        await exchangeOn((await connectThrough(p.proxy.address.port, `127.0.0.1:${plain.port}`)).socket, wsHead('POST', '/v1/customers/1', 'x')),
      ];
      for (const out of outs) {
        assert.match(out, /^HTTP\/1\.1 400 /);
        assert.match(out, /"code":"INVALID_REQUEST"/);
      }
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(plain.received.length, before);
      assert.equal(plain.rawBytes().length, rawBefore);
    });

    test('an unrouted upgrade to a covered host: the splice opens only after 101; otherwise nothing more reaches the upstream', async () => {
      // The upstream switches: the WebSocket works.
      const s = await connectTo(p.proxy.address.port);
      const switched = await new Promise<string>((resolve) => {
        let text = '';
        s.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('\r\n\r\n') && !text.includes('echo:')) s.write('ping');
          if (text.includes('echo:ping')) {
            s.destroy();
            resolve(text);
          }
        });
        s.write(wsHead('GET', `http://127.0.0.1:${wsPort}/ws`, `127.0.0.1:${wsPort}`));
      });
      assert.match(switched, /^HTTP\/1\.1 101 /);

      // The upstream declines (plain HTTP 200): a pipelined routed POST must not ride the spliced connection.
      const rawBefore = plain.rawBytes().length;
      const c = await connectTo(p.proxy.address.port);
      const declined = await new Promise<string>((resolve) => {
        let text = '';
        c.on('data', (d: Buffer) => {
          text += d.toString();
          if (/^HTTP\/1\.1 200 /.test(text) && text.includes('\r\n\r\n')) {
            c.write(`POST /v1/customers/9 HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
          }
        });
        c.on('close', () => resolve(text));
        c.on('error', () => undefined);
        setTimeout(() => c.destroy(), 1500);
        c.write(wsHead('GET', `${plain.origin}/v1/other`, `127.0.0.1:${plain.port}`));
      });
      assert.match(declined, /^HTTP\/1\.1 200 /);
      await new Promise((r) => setTimeout(r, 50));
      assertNoCardUpstream(plain, rawBefore);
    });

    test('an unrouted upgrade with a body to a covered host is refused', async () => {
      const out = await exchangeOn(
        await connectTo(p.proxy.address.port),
        `POST ${plain.origin}/v1/other HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\n{}`,
      );
      assert.match(out, /^HTTP\/1\.1 400 /);
      assert.match(out, /"code":"INVALID_REQUEST"/);
    });
  });

  test('finding 2: nested form keys are protected end to end', async () => {
    const rawBefore = plain.rawBytes().length;
    const res = await request(`${plain.origin}/form`, {
      dispatcher: absoluteAgent,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `customer[cardNumber]=${CARD}&customer.cardNumber=${CARD}&note=kept`,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), `customer[cardNumber]=${MASKED}&customer.cardNumber=${MASKED}&note=kept`);
    assertNoCardUpstream(plain, rawBefore);
  });

  describe('finding 3: a trailing dot does not take a host out of its routes', () => {
    test('absolute-form http://localhost./… is routed (protection fails closed before any connect)', async () => {
      const res = await request(`http://localhost.:${plain.port}/v1/strict/a`, {
        dispatcher: absoluteAgent,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: json({ iban: 'DE00 1234 5678' }),
      });
      assert.equal(res.statusCode, 422);
      assert.equal(JSON.parse(await res.body.text()).code, 'VALUE_NOT_PROTECTABLE');
    });

    test('CONNECT localhost.:port is intercepted with a leaf for localhost, not a blind tunnel', async () => {
      const { socket, status } = await connectThrough(p.proxy.address.port, `localhost.:${secure.port}`);
      assert.match(status, / 200 /);
      const t = tlsConnect({ socket, ca: p.proxy.caPem, servername: 'localhost' });
      const cert = await new Promise<X509Certificate>((resolve, reject) => {
        t.once('secureConnect', () => resolve(t.getPeerX509Certificate() as X509Certificate));
        t.once('error', reject);
      });
      t.destroy();
      assert.ok(cert.checkIssued(new X509Certificate(p.proxy.caPem)));
      assert.match(cert.subjectAltName ?? '', /DNS:localhost(,|$)/);
    });
  });

  describe('finding 4: a forward response phase protects non-2xx bodies too', () => {
    test('4xx/5xx JSON bodies are masked, status kept', async () => {
      for (const status of [400, 404, 500]) {
        const res = await request(`${errors.origin}/mask/${status}`, { dispatcher: absoluteAgent });
        assert.equal(res.statusCode, status);
        assert.deepEqual(JSON.parse(await res.body.text()), { error: 'declined', cardNumber: MASKED });
      }
    });

    test('a non-2xx body of a type the phase cannot read is withheld with a 502 problem', async () => {
      const res = await request(`${errors.origin}/mask/500/text`, { dispatcher: absoluteAgent });
      assert.equal(res.statusCode, 502);
      const text = await res.body.text();
      assert.equal(JSON.parse(text).code, 'UNSUPPORTED_DATA_SET_TYPE');
      assert.ok(!text.includes(CARD));
    });

    test('a reverse response phase (Reconstruct) leaves non-2xx responses as they are', async () => {
      const res = await request(`${errors.origin}/restore/404/text`, { dispatcher: absoluteAgent });
      assert.equal(res.statusCode, 404);
      assert.equal(await res.body.text(), `card ${CARD} declined`);
    });
  });

  test('finding 5: ;params in a path segment do not escape the route; the path is forwarded as sent', async () => {
    const rawBefore = plain.rawBytes().length;
    for (const path of ['/v1/customers;x=1', '/v1;v=2/customers/7', '/v1/customers;jsessionid=abc/8']) {
      const res = await request(`${plain.origin}${path}`, {
        dispatcher: absoluteAgent,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      assert.equal(res.statusCode, 200, path);
      assert.deepEqual(JSON.parse(await res.body.text()), { customer: { cardNumber: MASKED } }, path);
      assert.equal(plain.received[plain.received.length - 1].url, path);
    }
    assertNoCardUpstream(plain, rawBefore);
  });
});
