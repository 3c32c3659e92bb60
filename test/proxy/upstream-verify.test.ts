// An intercepted connection is only as safe as the gateway's check of the real server: when the
// gateway terminates the app's TLS (transparent listener: routed SNI; forward proxy: CONNECT to a
// routed host), it opens its own TLS connection upstream and must verify that certificate against
// the name the app asked for. Here the upstream presents a certificate for another name, one valid
// only for the address dialled, and one from a CA nobody trusts: the app gets a 502 saying so, and
// not a byte of the request (let alone its card number) reaches that upstream.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ProxyAgent, request } from 'undici';
import { CARD, proxyConfig, route, startTestProxy, startUpstream, tempDir, upstreamPki, type TestPki, type TestProxy, type Upstream } from './helpers.ts';
import { isUpstreamTlsCode, upstreamProblem } from '../../src/proxy/forwarding/upstream.ts';
import { startTransparentProxy, type TransparentProxy } from './transparent/helpers.ts';

const MASKED = '************1111';
const body = JSON.stringify({ cardNumber: CARD, note: 'must not leave unverified' });
const mask = { manifest: 'customer', jobType: 'Mask' } as const;

interface Fixture {
  /** Valid for every name the tests use: the control case. */
  good: Upstream;
  /** Chains to a trusted CA, but names only wrong.partner.test. */
  otherName: Upstream;
  /** Chains to a trusted CA, valid only for 127.0.0.1: the address dialled, not the name asked for. */
  addressOnly: Upstream;
  /** Valid for every name the tests use, from a CA that is not in the gateway's trust. */
  untrusted: Upstream;
  trustFile: string;
}

async function startFixture(): Promise<Fixture> {
  const names = ['api.partner.test', 'localhost', '127.0.0.1'];
  // Each upstreamPki call makes its own CA; the gateway trusts three of them (proxy.upstreamCa).
  const good = upstreamPki(tempDir(), names);
  const otherName = upstreamPki(tempDir(), ['wrong.partner.test']);
  const addressOnly = upstreamPki(tempDir(), ['127.0.0.1']);
  const untrusted: TestPki = upstreamPki(tempDir(), names);
  const trustFile = join(tempDir(), 'upstream-roots.pem');
  writeFileSync(trustFile, good.caPem + otherName.caPem + addressOnly.caPem);
  return {
    good: await startUpstream({ tls: good }),
    otherName: await startUpstream({ tls: otherName }),
    addressOnly: await startUpstream({ tls: addressOnly }),
    untrusted: await startUpstream({ tls: untrusted }),
    trustFile,
  };
}

const closeFixture = (f: Fixture | undefined): Promise<unknown> => Promise.all([f?.good.close(), f?.otherName.close(), f?.addressOnly.close(), f?.untrusted.close()]);

/** The refused cases: which upstream, and the verification error the 502 names. */
const REFUSED = [
  { what: 'a certificate for another name', upstream: 'otherName', code: /ERR_TLS_CERT_ALTNAME_INVALID/ },
  { what: 'a certificate for the address dialled but not for the name', upstream: 'addressOnly', code: /ERR_TLS_CERT_ALTNAME_INVALID/ },
  { what: 'a certificate from an untrusted CA', upstream: 'untrusted', code: /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/ },
] as const;

/** Nothing of the request arrived: no request parsed, no decrypted byte recorded. */
function assertNothingArrived(upstream: Upstream): void {
  assert.equal(upstream.received.length, 0, 'no request reached the upstream');
  assert.equal(upstream.rawBytes().length, 0, 'no byte of the request reached the upstream');
}

/** The app got a 502 naming the failed check, and the upstream got nothing. */
function assertRefused(res: { status: number; text: string }, c: (typeof REFUSED)[number], upstream: Upstream): void {
  assert.equal(res.status, 502, `${c.what}: ${res.text}`);
  assert.match(JSON.parse(res.text).detail, new RegExp(`TLS verification of the upstream failed \\((?:${c.code.source})\\)`));
  assertNothingArrived(upstream);
}

describe('upstream certificate verification: transparent listener (routed SNI, intercepted)', () => {
  let f: Fixture;
  let tp: TransparentProxy;

  before(async () => {
    f = await startFixture();
    tp = await startTransparentProxy({ routes: [route('partner', { match: { host: 'api.partner.test', path: '/v1/customers/**' }, request: mask })], upstreamCa: f.trustFile });
  });
  after(async () => {
    await tp?.close();
    await closeFixture(f);
  });

  /** POST through the listener as if redirected from 127.0.0.1:`port`, SNI and Host api.partner.test. */
  const post = (port: number, path = '/v1/customers'): Promise<{ status: number; text: string }> => {
    tp.redirectNext({ address: '127.0.0.1', port, family: 4 });
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: tp.port,
          servername: 'api.partner.test',
          ca: tp.caPem,
          method: 'POST',
          path,
          agent: false,
          headers: { host: 'api.partner.test', 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };

  test('control: an upstream with a valid certificate for the SNI name gets the body, masked', async () => {
    const res = await post(f.good.port);
    assert.equal(res.status, 200, res.text);
    assert.equal(JSON.parse(f.good.received.at(-1)?.body.toString() ?? '{}').cardNumber, MASKED);
  });

  for (const c of REFUSED) {
    test(`${c.what}: 502, nothing sent upstream`, async () => {
      const upstream = f[c.upstream];
      const res = await post(upstream.port);
      assertRefused(res, c, upstream);
      assert.ok(!tp.logText().includes(CARD), 'the card number is not logged');
    });
  }

  test('a request no route protects, on an intercepted connection, is verified all the same', async () => {
    // The SNI is routed, so the connection is intercepted; this path is not, so its body would be
    // streamed untouched: to the server the app asked for, and to no other.
    for (const c of REFUSED) {
      const upstream = f[c.upstream];
      const res = await post(upstream.port, '/v2/elsewhere');
      assertRefused(res, c, upstream);
    }
  });
});

describe('upstream certificate verification: forward proxy (CONNECT to a routed host, intercepted)', () => {
  let f: Fixture;
  let p: TestProxy;
  let agent: ProxyAgent;

  before(async () => {
    f = await startFixture();
    p = await startTestProxy(
      proxyConfig({
        upstreamCa: f.trustFile,
        routes: [
          route('by-name', { match: { host: 'localhost', path: '/v1/customers/**' }, request: mask }),
          route('by-address', { match: { host: '127.0.0.1', path: '/v1/customers/**' }, request: mask }),
        ],
      }),
    );
    // The app trusts the gateway CA: the failure is the gateway's own check of the upstream.
    agent = new ProxyAgent({ uri: p.url, requestTls: { ca: p.proxy.caPem } });
  });
  after(async () => {
    await agent?.close();
    await p?.close();
    await closeFixture(f);
  });

  const post = async (host: string, port: number, path = '/v1/customers'): Promise<{ status: number; text: string }> => {
    const res = await request(`https://${host}:${port}${path}`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: res.statusCode, text: await res.body.text() };
  };

  for (const host of ['localhost', '127.0.0.1']) {
    test(`control: CONNECT ${host} to an upstream with a valid certificate gets the body, masked`, async () => {
      const res = await post(host, f.good.port);
      assert.equal(res.status, 200, res.text);
      assert.equal(JSON.parse(res.text).cardNumber, MASKED);
    });
  }

  for (const c of REFUSED) {
    // The address-only certificate is valid when the app itself asked for the address.
    const hosts = c.upstream === 'addressOnly' ? ['localhost'] : ['localhost', '127.0.0.1'];
    for (const host of hosts) {
      test(`CONNECT ${host}, ${c.what}: 502, nothing sent upstream`, async () => {
        const upstream = f[c.upstream];
        const res = await post(host, upstream.port);
        assertRefused(res, c, upstream);
        assert.ok(!p.logText().includes(CARD), 'the card number is not logged');
      });
    }
  }

  test('a request no route protects, inside an intercepted CONNECT, is verified all the same', async () => {
    for (const c of REFUSED) {
      const upstream = f[c.upstream];
      const res = await post('localhost', upstream.port, '/v2/elsewhere');
      assertRefused(res, c, upstream);
    }
  });

  test('CONNECT 127.0.0.1 to the address-only certificate is accepted: it names what the app asked for', async () => {
    const res = await post('127.0.0.1', f.addressOnly.port);
    assert.equal(res.status, 200, res.text);
    assert.equal(JSON.parse(f.addressOnly.received.at(-1)?.body.toString() ?? '{}').cardNumber, MASKED);
  });
});

describe('upstream TLS failures read as the upstream\'s (502), never as the gateway\'s own', () => {
  test('every certificate verification code OpenSSL gives names itself in the 502', () => {
    const codes = [
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'CERT_HAS_EXPIRED',
      'CERT_NOT_YET_VALID',
      'CERT_REVOKED',
      'CRL_HAS_EXPIRED',
      'ERROR_IN_CERT_NOT_AFTER_FIELD',
      'INVALID_CA',
      'INVALID_PURPOSE',
      'PATH_LENGTH_EXCEEDED',
      'HOSTNAME_MISMATCH',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ERR_SSL_WRONG_VERSION_NUMBER',
    ];
    for (const code of codes) {
      assert.ok(isUpstreamTlsCode(code), code);
      const problem = upstreamProblem(Object.assign(new Error('x'), { code }));
      assert.equal(problem.status, 502, code);
      assert.equal(problem.detail, `TLS verification of the upstream failed (${code})`);
    }
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'INVALID_CAT', '']) assert.ok(!isUpstreamTlsCode(code), code);
  });
});
