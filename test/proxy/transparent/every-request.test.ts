// Issue 16, classes 7, 8 and 11: every request on a captured connection is read. The real
// transparent listener on loopback, original destinations injected (test/capture/ proves the
// kernel redirect; capture.test.ts there runs one of these through it), real Node clients: the
// keep-alive agent, TLS without a server name, domain fronting under `inspect: all`, and HTTP/2
// with prior knowledge through node:http2. Each asserts what the upstream received: protected
// bytes, or nothing.

import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { rng } from '../../helpers/rng.ts';
import { CARD, route, startUpstream, tempDir, type TestPki, type Upstream } from '../helpers.ts';
import { namedPki, startTransparentProxy, type TransparentProxy } from './helpers.ts';

const MASKED = '************1111';
const body = JSON.stringify({ cardNumber: CARD, note: 'hello' });

interface Reply {
  readonly status: number;
  readonly reused: boolean;
  readonly text: string;
}

function send(options: HttpsRequestOptions, payload = body, tls = false): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)({ method: 'POST', path: '/v1/customers', ...options }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const cardOf = (u: Upstream, i = -1): string | undefined => JSON.parse(u.received.at(i)?.body.toString() || '{}').cardNumber;

describe('every request on a captured connection is read (issue 16)', () => {
  let http: Upstream;
  let https: Upstream;
  let h2: H2cUpstream;
  let pki: TestPki;
  let tp: TransparentProxy;

  before(async () => {
    pki = namedPki(tempDir(), ['api.partner.test', 'other.test', '127.0.0.1']);
    http = await startUpstream();
    https = await startUpstream({ tls: pki });
    h2 = await startH2cUpstream();
    tp = await startTransparentProxy({
      routes: [
        route('partner-h2', { match: { host: 'api.partner.test', port: h2.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
        route('partner-http', { match: { host: 'api.partner.test', port: http.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
        route('partner-https', { match: { host: 'api.partner.test', port: https.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
      ],
      upstreamCa: pki.caFile,
    });
  });
  after(async () => {
    await tp.close();
    await Promise.all([http.close(), https.close(), h2.close()]);
  });

  test('class 8: Node keep-alive agent by address, an unrouted request then a routed one on one connection: the second is masked', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const base = { host: '127.0.0.1', port: tp.port, agent, headers: { 'content-type': 'application/json' } };
    const first = await send({ ...base, headers: { ...base.headers, host: 'unrouted.test' } });
    assert.equal(first.status, 200);
    assert.equal(cardOf(http), CARD, 'the unrouted request went on untouched');
    const second = await send({ ...base, headers: { ...base.headers, host: 'api.partner.test' } });
    assert.equal(second.status, 200);
    assert.equal(second.reused, true, 'one connection');
    assert.equal(cardOf(http), MASKED);
    assert.equal(http.received.at(-1)?.headers.host, 'api.partner.test');
    // And back: the full path serves the rest of the connection, unrouted requests included.
    const third = await send({ ...base, headers: { ...base.headers, host: 'unrouted.test' } });
    assert.equal(third.status, 200);
    assert.equal(third.reused, true);
    assert.equal(cardOf(http), CARD);
    agent.destroy();
  });

  test('class 8: unrouted requests stay relayed byte for byte over one upstream connection; chunked responses framed', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const base = { host: '127.0.0.1', port: tp.port, agent, headers: { 'content-type': 'application/json', host: 'unrouted.test' } };
    const before = http.rawBytes().length;
    for (let i = 0; i < 3; i++) assert.equal((await send(base)).status, 200);
    const relayed = http.rawBytes().subarray(before).toString('latin1');
    assert.equal(relayed.split('POST /v1/customers HTTP/1.1\r\n').length - 1, 3, 'three heads, as the client sent them');
    assert.equal(relayed.split(body).length - 1, 3, 'three bodies untouched');
    // The echo upstream answers chunked: the last chunk was framed, so the switch happens at once.
    const routed = await send({ ...base, headers: { ...base.headers, host: 'api.partner.test' } });
    assert.equal(routed.status, 200);
    assert.equal(routed.reused, true);
    assert.equal(cardOf(http), MASKED);
    agent.destroy();
  });

  test('class 8: pipelined in one write — an unrouted POST, an unrouted HEAD, then a routed POST: the last is masked', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: http.port, family: 4 });
    const post = (host: string, close = false) =>
      `POST /v1/customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
    const head = 'HEAD /v1/customers HTTP/1.1\r\nHost: unrouted.test\r\n\r\n';
    const count = http.received.length;
    const text = await new Promise<string>((resolve) => {
      const s = netConnect(tp.port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => resolve(got));
      s.write(post('unrouted.test') + head + post('api.partner.test', true));
    });
    assert.equal((text.match(/HTTP\/1\.1 200/g) ?? []).length, 3);
    assert.equal(http.received.length, count + 3);
    assert.equal(cardOf(http, -3), CARD);
    assert.equal(http.received.at(-2)?.method, 'HEAD');
    assert.equal(cardOf(http, -1), MASKED);
  });

  test('class 8: when the relayed responses cannot be framed, a later routed request resets the connection; it never leaves', async () => {
    // An upstream whose answer has an unreadable status line: where it ends is unknowable.
    const odd = createNetServer((s) => {
      s.on('data', () => s.write('XTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    });
    await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
    const port = (odd.address() as AddressInfo).port;
    const tp2 = await startTransparentProxy({ routes: [route('r', { match: { host: 'api.partner.test', port }, request: { manifest: 'customer', jobType: 'Mask' } })] });
    const arrived: Buffer[] = [];
    odd.on('connection', (s) => s.on('data', (d: Buffer) => arrived.push(d)));
    try {
      tp2.redirectNext({ address: '127.0.0.1', port, family: 4 });
      const post = (host: string) => `POST /v1/customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const reset = await new Promise<boolean>((resolve) => {
        const s = netConnect(tp2.port, '127.0.0.1');
        let wrote = false;
        s.on('data', () => {
          if (wrote) return;
          wrote = true;
          s.write(post('api.partner.test'));
        });
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNRESET'));
        s.on('close', () => resolve(false));
        s.write(post('unrouted.test'));
      });
      assert.equal(reset, true);
      const seen = Buffer.concat(arrived).toString('latin1');
      assert.equal(seen.split('POST /v1/customers').length - 1, 1, 'only the unrouted request reached the upstream');
      assert.equal(seen.includes('api.partner.test'), false);
      assert.match(tp2.logText(), /responses could not be framed/);
    } finally {
      await tp2.close();
      odd.close();
    }
  });

  test('class 7: TLS without a server name (an IP URL) to an unrouted address is intercepted; the routed Host is masked', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    // servername '': Node would otherwise send the Host header as the server name.
    const reply = await send({ host: '127.0.0.1', port: tp.port, servername: '', ca: tp.caPem, agent: false, headers: { host: 'api.partner.test', 'content-type': 'application/json' } }, body, true);
    assert.equal(reply.status, 200);
    assert.equal(cardOf(https), MASKED);
  });

  test('class 7: without a server name and an unrouted Host, the request goes on untouched over TLS verified for the address', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    const reply = await send({ host: '127.0.0.1', port: tp.port, servername: '', ca: tp.caPem, agent: false, headers: { host: 'other.test', 'content-type': 'application/json' } }, body, true);
    assert.equal(reply.status, 200);
    assert.equal(cardOf(https), CARD);
    assert.equal(https.received.at(-1)?.headers.host, 'other.test');
  });

  test('class 7 (default inspect: routed): domain fronting is still spliced — the app sees the upstream certificate', async () => {
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

  test('class 11: h2c prior knowledge to an unrouted address — a routed :authority resets the connection, nothing reaches the upstream', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: h2.port, family: 4 });
    const outcome = await h2cPost(tp.port, 'api.partner.test');
    assert.notEqual(outcome, 200);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(h2.authorities, [], 'no stream reached the upstream');
    assert.match(tp.logText(), /HTTP\/2 stream for a routed host/);
  });

  test('class 11: an unrouted :authority passes untouched; a routed one later on the same connection is refused before its frames leave', async () => {
    {
      tp.redirectNext({ address: '127.0.0.1', port: h2.port, family: 4 });
      const session = http2Connect(`http://127.0.0.1:${tp.port}`);
      session.on('error', () => undefined);
      const post = (authority: string): Promise<number | string> =>
        new Promise((resolve) => {
          const s = session.request({ ':method': 'POST', ':path': '/v1/customers', ':authority': authority, 'content-type': 'application/json' });
          s.on('response', (h) => resolve(Number(h[':status'])));
          s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
          s.on('close', () => resolve('closed'));
          s.resume();
          s.end(body);
        });
      assert.equal(await post('unrouted.test'), 200);
      assert.deepEqual(h2.authorities, ['unrouted.test']);
      assert.equal(h2.bodies[0], body);
      assert.notEqual(await post(`api.partner.test:${h2.port}`), 200);
      session.destroy();
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(h2.authorities, ['unrouted.test'], 'the routed stream never reached the upstream');
    }
  });

  test('class 11 property: streams opened at once — only streams before the first routed one can reach the upstream, all of them when none is routed', async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const random = rng(seed * 104729);
      const authorities = Array.from({ length: 2 + Math.floor(random() * 5) }, () => (random() < 0.3 ? 'api.partner.test' : `u${Math.floor(random() * 9)}.test`));
      const firstRouted = authorities.indexOf('api.partner.test');
      const expected = firstRouted === -1 ? authorities : authorities.slice(0, firstRouted);
      h2.authorities.length = 0;
      tp.redirectNext({ address: '127.0.0.1', port: h2.port, family: 4 });
      const session = http2Connect(`http://127.0.0.1:${tp.port}`);
      session.on('error', () => undefined);
      const outcomes = await Promise.all(
        authorities.map(
          (authority) =>
            new Promise<number | string>((resolve) => {
              const s = session.request({ ':method': 'POST', ':path': '/v1/customers', ':authority': authority });
              s.on('response', (h) => resolve(Number(h[':status'])));
              s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
              s.on('close', () => resolve('closed'));
              s.resume();
              s.end(body);
            }),
        ),
      );
      session.destroy();
      await new Promise((r) => setTimeout(r, 50));
      // A prefix: frames released before the refusal may still be cut by the reset that follows it.
      const what = `seed ${seed}: ${authorities.join(',')} → ${outcomes.join(',')}, upstream saw ${h2.authorities.join(',')}`;
      assert.deepEqual(h2.authorities, expected.slice(0, h2.authorities.length), what);
      assert.equal(h2.authorities.includes('api.partner.test'), false, what);
      if (firstRouted === -1) assert.deepEqual(h2.authorities, expected, what);
      if (firstRouted !== -1) assert.notEqual(outcomes[firstRouted], 200);
    }
  });
});

describe('strict mode: proxy.transparent.inspect: all (issue 16 class 7, domain fronting)', () => {
  let https: Upstream;
  let pki: TestPki;
  let tp: TransparentProxy;

  before(async () => {
    pki = namedPki(tempDir(), ['api.partner.test', 'cdn.front.test', 'other.test']);
    https = await startUpstream({ tls: pki });
    tp = await startTransparentProxy({
      routes: [route('partner', { match: { host: 'api.partner.test', port: https.port, path: '/v1/customers/**' }, request: { manifest: 'customer', jobType: 'Mask' } })],
      upstreamCa: pki.caFile,
      transparent: { inspect: 'all' },
    });
  });
  after(async () => {
    await tp.close();
    await https.close();
  });

  test('an unrouted server name carrying Host: api.partner.test is intercepted and masked', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    const reply = await send({ host: '127.0.0.1', port: tp.port, servername: 'cdn.front.test', ca: tp.caPem, agent: false, headers: { host: 'api.partner.test', 'content-type': 'application/json' } }, body, true);
    assert.equal(reply.status, 200);
    assert.equal(cardOf(https), MASKED);
  });

  test('Host and server name both unrouted: forwarded untouched, re-encrypted to the server name', async () => {
    tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
    const reply = await send({ host: '127.0.0.1', port: tp.port, servername: 'cdn.front.test', ca: tp.caPem, agent: false, headers: { host: 'other.test', 'content-type': 'application/json' } }, body, true);
    assert.equal(reply.status, 200);
    assert.equal(cardOf(https), CARD);
    assert.equal(https.received.at(-1)?.headers.host, 'other.test');
  });

  test('ALPN: the listener offers h2 and http/1.1 — each client gets the protocol it prefers (h2 is read too: ./http2.test.ts)', async () => {
    const negotiated = (protocols: string[]): Promise<string | false | 'failed'> =>
      new Promise((resolve) => {
        tp.redirectNext({ address: '127.0.0.1', port: https.port, family: 4 });
        const s = tlsConnect({ host: '127.0.0.1', port: tp.port, servername: 'cdn.front.test', ca: tp.caPem, ALPNProtocols: protocols }, () => {
          resolve(s.alpnProtocol ?? false);
          s.destroy();
        });
        s.on('error', () => resolve('failed'));
      });
    assert.equal(await negotiated(['h2', 'http/1.1']), 'h2');
    assert.equal(await negotiated(['h2']), 'h2');
    assert.equal(await negotiated(['http/1.1']), 'http/1.1');
  });
});

/** An h2c POST through the listener; its :status, or how it failed. */
function h2cPost(port: number, authority: string): Promise<number | string> {
  return new Promise((resolve) => {
    const session = http2Connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const s = session.request({ ':method': 'POST', ':path': '/v1/customers', ':authority': authority, 'content-type': 'application/json' });
    const done = (v: number | string): void => {
      session.destroy();
      resolve(v);
    };
    s.on('response', (h) => done(Number(h[':status'])));
    s.on('error', (e: NodeJS.ErrnoException) => done(e.code ?? 'error'));
    s.on('close', () => done('closed'));
    s.end(body);
  });
}

interface H2cUpstream {
  readonly port: number;
  readonly authorities: string[];
  readonly bodies: string[];
  close(): Promise<void>;
}

/** A plain HTTP/2 (h2c) upstream recording each stream's :authority and body. */
async function startH2cUpstream(): Promise<H2cUpstream> {
  const { createServer } = await import('node:http2');
  const authorities: string[] = [];
  const bodies: string[] = [];
  const server = createServer();
  server.on('stream', (stream, headers) => {
    authorities.push(String(headers[':authority']));
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString());
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    port,
    authorities,
    bodies,
    close: () => {
      for (const s of sessions) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
