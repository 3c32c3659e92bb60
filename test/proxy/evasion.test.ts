// Issue 8: requests an attacker shapes so that the gateway and the upstream read them differently.
// Each is sent through the real proxy (forward, reverse, and inside CONNECT tunnels, plain and TLS)
// to loopback upstreams that record the bytes they receive; each must come out protected or be
// refused with a problem and nothing sent upstream.

import assert from 'node:assert/strict';
import { createServer as createNetServer, type Server as NetServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  CARD,
  connectTcp,
  exchangeRaw,
  openTunnel,
  proxyConfig,
  rawPost,
  route,
  sendRaw,
  startTestProxy,
  startUpstream,
  tempDir,
  upstreamPki,
  type RawResponse,
  type TestPki,
  type TestProxy,
  type Upstream,
} from './helpers.ts';

const MASKED = '************1111';
const BODY = JSON.stringify({ customer: { cardNumber: CARD } });
const MASKED_BODY = JSON.stringify({ customer: { cardNumber: MASKED } });

/** The listener kinds a request can come in on. */
type Door = 'forward' | 'reverse' | 'tunnel' | 'tls-tunnel';
const DOORS: readonly Door[] = ['forward', 'reverse', 'tunnel', 'tls-tunnel'];

describe('issue 8: what the gateway protects is what the upstream reads', () => {
  let pki: TestPki;
  let plain: Upstream;
  let secure: Upstream;
  let named: Upstream; // routed by a host name only; reached by its address
  let v6: Upstream | undefined; // on ::1 when the machine has IPv6 loopback
  let bodiless: NetServer; // answers 204/304 with a body anyway
  let bodilessPort: number;
  let p: TestProxy;

  before(async () => {
    pki = upstreamPki(tempDir());
    plain = await startUpstream();
    secure = await startUpstream({ tls: pki });
    named = await startUpstream();
    try {
      v6 = await startUpstream({ host: '::1' });
    } catch {
      v6 = undefined;
    }
    bodiless = createNetServer((s) => {
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        while (buf.includes('\r\n\r\n')) {
          const head = buf.slice(0, buf.indexOf('\r\n\r\n'));
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          buf = buf.slice(head.length + 4 + length);
          const leak = JSON.stringify({ cardNumber: CARD });
          const status = /\/304 HTTP/.test(head) ? '304 Not Modified' : '204 No Content';
          s.write(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${leak.length}\r\n\r\n${leak}`);
        }
      });
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => bodiless.listen(0, '127.0.0.1', r));
    bodilessPort = (bodiless.address() as AddressInfo).port;
    const mask = { manifest: 'customer', jobType: 'Mask' } as const;
    const routes = [
      route('customers', { match: { host: '127.0.0.1', port: plain.port, methods: ['POST', 'PUT'], path: '/v1/customers/**' }, request: mask }),
      route('customers-tls', { match: { host: '127.0.0.1', port: secure.port, path: '/v1/customers/**' }, request: mask }),
      route('named', { match: { host: 'api.routed.test', port: named.port, path: '/v1/customers/**' }, request: mask }),
      route('typed', { match: { host: '127.0.0.1', port: plain.port, path: '/typed/**', contentType: 'application/json' }, request: mask }),
      route('typed-tls', { match: { host: '127.0.0.1', port: secure.port, path: '/typed/**', contentType: 'application/json' }, request: mask }),
      route('any', { match: { host: '127.0.0.1', port: plain.port, path: '/any/**' }, request: mask }),
      route('other', { match: { host: '127.0.0.1', port: plain.port, path: '/other/**' }, request: mask, otherContent: 'passthrough' }),
      route('lenient', { match: { host: '127.0.0.1', port: plain.port, path: '/lenient/**' }, request: mask, onError: 'passthrough' }),
      route('query', { match: { host: '127.0.0.1', port: plain.port, path: '/search' }, request: { ...mask, queryParams: ['cardNumber'] } }),
      route('bodiless', { match: { host: '127.0.0.1', port: bodilessPort, path: '/routed/**' }, request: mask, response: mask }),
    ];
    if (v6) routes.push(route('v6', { match: { host: '::1', port: v6.port, path: '/v1/customers/**' }, request: mask }));
    p = await startTestProxy(
      proxyConfig({ upstreamCa: pki.caFile, routes, reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: plain.origin }] }),
      tempDir(),
      async (name) => (name === 'api.routed.test' ? ['::ffff:127.0.0.1'] : []),
    );
  });

  after(async () => {
    await p.close();
    bodiless.close();
    await Promise.all([plain.close(), secure.close(), named.close(), v6?.close()]);
  });

  /** The upstream a door reaches, and how to send `request-target` bytes through that door. */
  function via(door: Door): { upstream: Upstream; send(target: string, body?: string, contentType?: string): Promise<RawResponse> } {
    const upstream = door === 'tls-tunnel' ? secure : plain;
    const authority = `127.0.0.1:${upstream.port}`;
    return {
      upstream,
      async send(target, body = BODY, contentType = 'application/json') {
        if (door === 'forward') return sendRaw(p.proxy.address.port, rawPost(`http://${authority}${target}`, authority, body, contentType));
        if (door === 'reverse') return sendRaw(p.proxy.reverse[0].port, rawPost(target, 'localhost', body, contentType));
        const tunnel = await openTunnel(p.proxy.address.port, authority, door === 'tls-tunnel' ? { ca: p.proxy.caPem } : undefined);
        try {
          return await exchangeRaw(tunnel, rawPost(target, authority, body, contentType));
        } finally {
          tunnel.destroy();
        }
      },
    };
  }

  /** Runs `send`, then checks: the card never reached `upstream`; refused → 4xx problem and nothing at all reached it. */
  async function expectOutcome(
    label: string,
    upstream: Upstream,
    send: () => Promise<RawResponse>,
    expected: { refused: number } | { protectedAs: string; body?: string },
  ): Promise<void> {
    const rawBefore = upstream.rawBytes().length;
    const countBefore = upstream.received.length;
    const res = await send();
    await new Promise((r) => setTimeout(r, 10));
    assert.ok(!upstream.rawBytes().subarray(rawBefore).includes(CARD), `${label}: the card reached the upstream in clear`);
    if ('refused' in expected) {
      assert.equal(res.status, expected.refused, `${label}: ${res.body.toString()}`);
      assert.match(res.headers['content-type'] ?? '', /application\/problem\+json/, label);
      assert.ok(!res.body.includes(CARD), `${label}: echoed`);
      assert.equal(upstream.rawBytes().length, rawBefore, `${label}: bytes reached the upstream`);
    } else {
      assert.equal(res.status, 200, `${label}: ${res.body.toString()}`);
      assert.equal(upstream.received.length, countBefore + 1, label);
      const got = upstream.received[upstream.received.length - 1];
      assert.equal(got.url, expected.protectedAs, `${label}: path sent upstream`);
      assert.equal(got.body.toString(), expected.body ?? MASKED_BODY, label);
    }
  }

  describe('class 1: one canonical path on every listener, the ambiguous refused', () => {
    const refused = [
      '/v1%2Fcustomers/1',
      '/v1%2fcustomers',
      '/v1%5Ccustomers/1',
      '/v1\\customers/1',
      '//x/v1/customers/1',
      '/v1/customers#',
      '/v1/customers/1#frag',
      '/v1/customers/1%00',
      '/v1/customers/%0d%0a1',
      '/v1/x/..;/customers/1',
      '/v1/%252e%252e/customers',
    ];
    const canonical: [string, string][] = [
      ['/v1/%63ustomers/1', '/v1/customers/1'],
      ['/v1/x/../customers/1', '/v1/customers/1'],
      ['/v1/%2e%2e/v1/customers/1', '/v1/customers/1'],
      ['/v1/./customers/%31', '/v1/customers/1'],
      ['/v1//customers/1', '/v1//customers/1'],
      ['/v1/customers;x=1', '/v1/customers;x=1'],
    ];
    for (const door of DOORS) {
      test(`${door}: ambiguous paths are refused with 400, nothing sent`, async () => {
        const d = via(door);
        for (const path of refused) await expectOutcome(`${door} ${path}`, d.upstream, () => d.send(path), { refused: 400 });
      });
      test(`${door}: other spellings are protected and forwarded in their canonical form`, async () => {
        const d = via(door);
        for (const [path, forwarded] of canonical) await expectOutcome(`${door} ${path}`, d.upstream, () => d.send(path), { protectedAs: forwarded });
      });
    }

    test('a raw control byte in the request line: node refuses it, answered as a problem', async () => {
      const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${plain.port}/v1/customers/\x01`, 'x', BODY));
      assert.equal(res.status, 400);
      assert.match(res.headers['content-type'] ?? '', /problem\+json/);
    });
  });

  describe('class 2: absolute-form request lines inside an intercepted tunnel', () => {
    async function inTunnel(authority: string, tls: boolean, bytes: Buffer): Promise<RawResponse> {
      const t = await openTunnel(p.proxy.address.port, authority, tls ? { ca: p.proxy.caPem } : undefined);
      try {
        return await exchangeRaw(t, bytes);
      } finally {
        t.destroy();
      }
    }

    for (const tls of [false, true]) {
      const kind = tls ? 'TLS' : 'plain';
      test(`${kind}: its path is used when it names the tunnel's own authority, in any spelling`, async () => {
        const u = tls ? secure : plain;
        const scheme = tls ? 'https' : 'http';
        for (const host of ['127.0.0.1', '2130706433', '[::ffff:127.0.0.1]']) {
          await expectOutcome(`${kind} ${host}`, u, () => inTunnel(`127.0.0.1:${u.port}`, tls, rawPost(`${scheme}://${host}:${u.port}/v1/customers/7`, `127.0.0.1:${u.port}`, BODY)), {
            protectedAs: '/v1/customers/7',
          });
        }
      });

      test(`${kind}: another authority, or a Host header naming another host, is refused`, async () => {
        const u = tls ? secure : plain;
        const authority = `127.0.0.1:${u.port}`;
        const cases = [
          rawPost(`http://127.0.0.1:${named.port}/v1/customers/7`, authority, BODY),
          rawPost(`http://api.elsewhere.test:${u.port}/v1/customers/7`, authority, BODY),
          rawPost('/v1/customers/7', 'api.elsewhere.test', BODY),
          rawPost('/v1/customers/7', `127.0.0.1:${named.port}`, BODY),
        ];
        for (const [i, bytes] of cases.entries()) await expectOutcome(`${kind} case ${i}`, u, () => inTunnel(authority, tls, bytes), { refused: 400 });
      });
    }
  });

  describe('class 3: every spelling of an IP literal is the same host', () => {
    const spellings = ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1', '0x7f.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '127.0.0.%31'];

    test('absolute-form URLs', async () => {
      for (const host of spellings) {
        await expectOutcome(host, plain, () => sendRaw(p.proxy.address.port, rawPost(`http://${host}:${plain.port}/v1/customers/1`, 'x', BODY)), {
          protectedAs: '/v1/customers/1',
        });
      }
    });

    test('CONNECT, plain and TLS: intercepted, not a blind tunnel', async () => {
      for (const host of spellings.filter((h) => !h.includes('%'))) {
        for (const [u, tls] of [[plain, false], [secure, true]] as const) {
          await expectOutcome(`CONNECT ${host} ${tls}`, u, async () => {
            const t = await openTunnel(p.proxy.address.port, `${host}:${u.port}`, tls ? { ca: p.proxy.caPem } : undefined);
            try {
              return await exchangeRaw(t, rawPost('/v1/customers/1', `127.0.0.1:${u.port}`, BODY));
            } finally {
              t.destroy();
            }
          }, { protectedAs: '/v1/customers/1' });
        }
      }
    });

    test('IPv6: a route for ::1 is reached as [0::1], [0:0:0:0:0:0:0:1], [::0:1]', async (t) => {
      if (!v6) {
        t.skip('IPv6 loopback (::1) is not available here: IPv6 literal spellings not tested end to end');
        return;
      }
      const u = v6;
      for (const host of ['[::1]', '[0::1]', '[0:0:0:0:0:0:0:1]', '[::0:1]']) {
        await expectOutcome(host, u, () => sendRaw(p.proxy.address.port, rawPost(`http://${host}:${u.port}/v1/customers/1`, 'x', BODY)), { protectedAs: '/v1/customers/1' });
        await expectOutcome(`CONNECT ${host}`, u, async () => {
          const tunnel = await openTunnel(p.proxy.address.port, `${host}:${u.port}`);
          try {
            return await exchangeRaw(tunnel, rawPost('/v1/customers/1', `[::1]:${u.port}`, BODY));
          } finally {
            tunnel.destroy();
          }
        }, { protectedAs: '/v1/customers/1' });
      }
    });

    test('a routed host name reached by one of its addresses is that host (resolver injected)', async () => {
      await expectOutcome('by address', named, () => sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${named.port}/v1/customers/1`, 'x', BODY)), {
        protectedAs: '/v1/customers/1',
      });
      for (const hostHeader of [`127.0.0.1:${named.port}`, `api.routed.test:${named.port}`]) {
        await expectOutcome(`CONNECT by address, Host ${hostHeader}`, named, async () => {
          const t = await openTunnel(p.proxy.address.port, `127.1:${named.port}`);
          try {
            return await exchangeRaw(t, rawPost('/v1/customers/1', hostHeader, BODY));
          } finally {
            t.destroy();
          }
        }, { protectedAs: '/v1/customers/1' });
      }
    });

    test('unspecified addresses (0.0.0.0, ::) are refused, not dialled', async () => {
      for (const host of ['0.0.0.0', '0', '[::]']) {
        await expectOutcome(host, plain, () => sendRaw(p.proxy.address.port, rawPost(`http://${host}:${plain.port}/v1/customers/1`, 'x', BODY)), { refused: 400 });
        await assert.rejects(openTunnel(p.proxy.address.port, `${host}:${plain.port}`), /400/);
      }
    });
  });

  describe('class 4: the body type cannot switch protection off', () => {
    const forward = (path: string, body: string | Buffer, contentType: string | undefined) =>
      sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${plain.port}${path}`, 'x', body, contentType));

    test('a route limited to application/json reads text/plain, +json, octet-stream and untyped JSON as JSON', async () => {
      for (const ct of ['text/plain', 'application/vnd.api+json', 'application/octet-stream', undefined, 'text/plain; charset=utf-8']) {
        await expectOutcome(`typed ${ct}`, plain, () => forward('/typed/1', BODY, ct), { protectedAs: '/typed/1' });
      }
      // The same through an intercepted TLS tunnel.
      const tls = via('tls-tunnel');
      await expectOutcome('typed tls text/plain', secure, () => tls.send('/typed/1', BODY, 'text/plain'), { protectedAs: '/typed/1' });
    });

    test('a route limited to application/json: another type is 415, an untyped body that is not JSON is 400; nothing sent', async () => {
      await expectOutcome('image/png', plain, () => forward('/typed/1', BODY, 'image/png'), { refused: 415 });
      await expectOutcome('multipart', plain, () => forward('/typed/1', BODY, 'multipart/form-data; boundary=x'), { refused: 415 });
      await expectOutcome('text/plain not JSON', plain, () => forward('/typed/1', `card ${CARD}`, 'text/plain'), { refused: 400 });
    });

    test('a route without a type limit sniffs untyped JSON and XML, refuses other types (415)', async () => {
      await expectOutcome('any text/plain', plain, () => forward('/any/1', BODY, 'text/plain'), { protectedAs: '/any/1' });
      await expectOutcome('any none', plain, () => forward('/any/1', BODY, undefined), { protectedAs: '/any/1' });
      await expectOutcome('any xml', plain, () => forward('/any/1', `<c><cardNumber>${CARD}</cardNumber></c>`, 'application/octet-stream'), {
        protectedAs: '/any/1',
        body: `<c><cardNumber>${MASKED}</cardNumber></c>`,
      });
      await expectOutcome('any text/plain words', plain, () => forward('/any/1', `card ${CARD}`, 'text/plain'), { refused: 415 });
      await expectOutcome('any application/pdf', plain, () => forward('/any/1', BODY, 'application/pdf'), { refused: 415 });
    });

    test('+xml types (SOAP 1.2, Atom) are read as XML, on a route without a type limit and one limited to JSON', async () => {
      const soap = (card: string) =>
        `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body>` +
        `<c><cardNumber>${card}</cardNumber></c></soap:Body></soap:Envelope>`;
      const atom = (card: string) =>
        `<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>t</title><content type="application/xml">` +
        `<c><cardNumber>${card}</cardNumber></c></content></entry></feed>`;
      const cases: [string, (card: string) => string, string][] = [
        ['soap', soap, 'application/soap+xml; charset=utf-8; action="urn:pay"'],
        ['atom', atom, 'application/atom+xml'],
      ];
      for (const [name, doc, ct] of cases) {
        for (const path of ['/any/1', '/typed/1']) {
          await expectOutcome(`${name} ${path}`, plain, () => forward(path, doc(CARD), ct), { protectedAs: path, body: doc(MASKED) });
        }
        // The same inside an intercepted TLS tunnel, on the route limited to JSON.
        const tls = via('tls-tunnel');
        await expectOutcome(`${name} tls`, secure, () => tls.send('/typed/1', doc(CARD), ct), { protectedAs: '/typed/1', body: doc(MASKED) });
        // Declared XML that is not XML (JSON under an +xml type) is not read as something else: refused.
        await expectOutcome(`${name} JSON as +xml`, plain, () => forward('/any/1', BODY, ct), { refused: 400 });
      }
    });

    test('form bodies that are not name=value pairs, or use ;, are refused', async () => {
      const form = 'application/x-www-form-urlencoded';
      await expectOutcome('JSON as a form', plain, () => forward('/any/1', BODY, form), { refused: 400 });
      await expectOutcome('JSON with = as a form', plain, () => forward('/any/1', JSON.stringify({ a: '=', cardNumber: CARD }), form), { refused: 400 });
      await expectOutcome('; separator', plain, () => forward('/any/1', `a=1;cardNumber=${CARD}`, form), { refused: 400 });
      await expectOutcome('pair without =', plain, () => forward('/any/1', `a=1&cardNumber${CARD}`, form), { refused: 400 });
      await expectOutcome('a good form', plain, () => forward('/any/1', `a=1&&cardNumber=${CARD}`, form), { protectedAs: '/any/1', body: `a=1&&cardNumber=${MASKED}` });
    });

    test('onError: passthrough does not forward what the proxy refuses to read', async () => {
      const form = 'application/x-www-form-urlencoded';
      await expectOutcome('lenient ;', plain, () => forward('/lenient/1', `a=1;cardNumber=${CARD}`, form), { refused: 400 });
      await expectOutcome('lenient JSON as form', plain, () => forward('/lenient/1', BODY, form), { refused: 400 });
      await expectOutcome('lenient other type', plain, () => forward('/lenient/1', BODY, 'image/png'), { refused: 415 });
      // JSON with a comment: refused by the strict reader, read by lenient upstream parsers.
      const commented = `{"cardNumber": /* hi */ "${CARD}"}`;
      await expectOutcome('lenient malformed JSON', plain, () => forward('/lenient/1', commented, 'application/json'), { refused: 400 });
      const res = await forward('/lenient/1', BODY, 'image/x-<script>');
      assert.ok(!res.body.toString().includes('<script>'), 'a client-sent type is not echoed');
    });

    test('otherContent: passthrough forwards other types unread, but still reads untyped bodies', async () => {
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3]);
      const before = plain.received.length;
      const res = await forward('/other/1', png, 'image/png');
      assert.equal(res.status, 200);
      assert.deepEqual(plain.received[before].body, png);
      await expectOutcome('other text/plain', plain, () => forward('/other/1', BODY, 'text/plain'), { protectedAs: '/other/1' });
      await expectOutcome('other untyped not JSON', plain, () => forward('/other/1', '{not json', undefined), { refused: 400 });
    });
  });

  test('class 5: query parameter names match like body fields (case, _ and -, PHP dots)', async () => {
    for (const name of ['cardNumber', 'CARDNUMBER', 'card_number', 'card-number', 'Card_Number', 'card.number', 'card+number', 'filter[CARD_NUMBER]']) {
      await expectOutcome(name, plain, () => sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${plain.port}/search?${name}=${CARD}&x=1`, 'x', '', undefined, 'GET')), {
        protectedAs: `/search?${name}=${MASKED}&x=1`,
        body: '',
      });
    }
    await expectOutcome('; in the query', plain, () => sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${plain.port}/search?x=1;cardNumber=${CARD}`, 'x', '', undefined, 'GET')), {
      refused: 400,
    });
  });

  test('also: a body on a 204 or 304 is dropped (RFC 9110), routed or not, and the app gets the status', async () => {
    for (const path of ['/plain/204', '/plain/304', '/routed/204', '/routed/304']) {
      const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${bodilessPort}${path}`, 'x', '{}'));
      assert.equal(res.status, Number(path.slice(-3)), path);
      assert.ok(!res.raw.includes(CARD), `${path}: the dropped body reached the app`);
      assert.equal(res.headers['content-length'], undefined, path);
    }
    // The app's connection stays usable: a second request on it is answered.
    const s = await connectTcp(p.proxy.address.port);
    try {
      for (const path of ['/plain/204', '/routed/304']) {
        const res = await exchangeRaw(s, rawPost(`http://127.0.0.1:${bodilessPort}${path}`, 'x', '{}'));
        assert.equal(res.status, Number(path.slice(-3)));
      }
    } finally {
      s.destroy();
    }
  });

  test('no card number reached the proxy log', () => {
    assert.ok(!p.logText().includes(CARD));
    assert.ok(!p.logText().includes(CARD.slice(0, 12)));
  });
});
