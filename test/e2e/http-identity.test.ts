// The identity endpoint over real HTTP: token success and RFC 6749 errors, JWKS, and the forgery
// matrix — every forged or stale token is refused with 401 by /api/protect.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { SignJWT, UnsecuredJWT, createLocalJWKSet, decodeJwt, generateKeyPair, importJWK, jwtVerify, type CryptoKey, type JWK } from 'jose';
import { API_KEY, CLIENTS, postJson, startTestGateway, tokenFor, type TestGateway } from './http-helpers.ts';

let gw: TestGateway;
before(async () => {
  gw = await startTestGateway();
});
after(async () => {
  await gw.close();
});

const TOKEN = '/gateway/identity/v1/token';

async function tokenRequest(body: string, headers: Record<string, string> = {}) {
  const res = await request(`${gw.base}${TOKEN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': API_KEY, ...headers },
    body,
  });
  return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> };
}

test('token endpoint: form credentials, no-store, verifiable against the JWKS', async () => {
  const res = await tokenRequest(`grant_type=client_credentials&client_id=${CLIENTS.full.id}&client_secret=${CLIENTS.full.secret}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers.pragma, 'no-cache');
  assert.equal(res.body.token_type, 'Bearer');
  assert.equal(res.body.expires_in, 900);
  const jwks = await request(`${gw.base}/gateway/identity/v1/jwks`);
  assert.equal(jwks.statusCode, 200);
  const set = (await jwks.body.json()) as { keys: JWK[] };
  for (const k of set.keys) for (const m of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) assert.ok(!(m in k));
  const verified = await jwtVerify(String(res.body.access_token), createLocalJWKSet(set), { audience: 'dpg-gateway', issuer: 'https://dpg.test/identity' });
  assert.equal(verified.payload.sub, CLIENTS.full.id);
});

test('token endpoint: HTTP Basic; 401 carries a Basic challenge', async () => {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const ok = await tokenRequest('grant_type=client_credentials', { authorization: basic(CLIENTS.reader.id, CLIENTS.reader.secret) });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.scope, 'protect');
  const bad = await tokenRequest('grant_type=client_credentials', { authorization: basic(CLIENTS.reader.id, 'wrong') });
  assert.equal(bad.status, 401);
  assert.equal(bad.body.error, 'invalid_client');
  assert.match(String(bad.headers['www-authenticate']), /^Basic /);
});

test('token endpoint: RFC 6749 error bodies over HTTP', async () => {
  const creds = `client_id=${CLIENTS.full.id}&client_secret=${CLIENTS.full.secret}`;
  const cases: [string, string, Record<string, string>, number, string][] = [
    ['no API key', `grant_type=client_credentials&${creds}`, { 'x-api-key': '' }, 401, 'invalid_client'],
    ['wrong API key', `grant_type=client_credentials&${creds}`, { 'x-api-key': 'wrong-key' }, 401, 'invalid_client'],
    ['duplicate parameter', `grant_type=client_credentials&grant_type=client_credentials&${creds}`, {}, 400, 'invalid_request'],
    ['missing grant_type', creds, {}, 400, 'invalid_request'],
    ['unsupported grant', `grant_type=authorization_code&${creds}`, {}, 400, 'unsupported_grant_type'],
    ['wrong secret', `grant_type=client_credentials&client_id=${CLIENTS.full.id}&client_secret=nope`, {}, 401, 'invalid_client'],
    ['invalid scope', `grant_type=client_credentials&${creds}&scope=everything`, {}, 400, 'invalid_scope'],
    ['not a form', '{}', { 'content-type': 'application/json' }, 400, 'invalid_request'],
  ];
  for (const [name, body, headers, status, error] of cases) {
    const res = await tokenRequest(body, headers);
    assert.equal(res.status, status, name);
    assert.equal(res.body.error, error, name);
    assert.equal(typeof res.body.error_description, 'string', name);
  }
  const get = await request(`${gw.base}${TOKEN}`);
  assert.equal(get.statusCode, 405);
  assert.equal(get.headers.allow, 'POST');
  await get.body.dump();
});

/** The gateway's current private signing key, read from its key directory (test-only access). */
async function gatewayKey(): Promise<{ key: CryptoKey; kid: string; publicJwk: JWK }> {
  const dir = join(gw.dataDir, 'identity');
  const file = readdirSync(dir).find((f) => f.endsWith('.jwk.json'));
  const jwk = JSON.parse(readFileSync(join(dir, file as string), 'utf8')) as JWK;
  const { d: _d, ...publicJwk } = jwk;
  return { key: (await importJWK(jwk, 'EdDSA')) as CryptoKey, kid: jwk.kid as string, publicJwk };
}

function claims(overrides: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: 'https://dpg.test/identity',
    sub: CLIENTS.full.id,
    aud: 'dpg-gateway',
    iat: now,
    nbf: now,
    exp: now + 600,
    jti: 'forged-1',
    scope: 'protect reconstruct decrypt',
    ...overrides,
  };
}

async function signed(payload: Record<string, unknown>, options: { kid?: string; typ?: string; key?: CryptoKey } = {}) {
  const real = await gatewayKey();
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'EdDSA', kid: options.kid ?? real.kid, typ: options.typ ?? 'at+jwt' })
    .sign(options.key ?? real.key);
}

const body = { manifestName: 'customer', jobType: 'Mask', dataSet: { cardNumber: '4111111111111111' } };

test('a correctly forged-from-scratch token with the real key passes (control for the matrix)', async () => {
  const res = await postJson(gw.base, '/api/protect', body, { 'x-resource-token': await signed(claims()) });
  assert.equal(res.status, 200, res.text);
});

test('forgery matrix: every bad token is 401 UNAUTHENTICATED', async () => {
  const real = await gatewayKey();
  const valid = await tokenFor(gw.base, CLIENTS.reader);
  const [h, p, s] = valid.split('.');
  const widened = Buffer.from(JSON.stringify({ ...decodeJwt(valid), scope: 'protect reconstruct decrypt' })).toString('base64url');
  const other = await generateKeyPair('EdDSA');
  const now = Math.floor(Date.now() / 1000);
  const none = new UnsecuredJWT(claims()).encode();
  const noneWithHeader = `${Buffer.from(JSON.stringify({ alg: 'none', kid: real.kid, typ: 'at+jwt' })).toString('base64url')}.${none.split('.')[1]}.sig`;
  const hs256 = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', kid: real.kid, typ: 'at+jwt' })
    .sign(Buffer.from(JSON.stringify(real.publicJwk)));
  const hs256x = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', kid: real.kid, typ: 'at+jwt' })
    .sign(Buffer.from(String(real.publicJwk.x), 'base64url'));

  const matrix: [string, string][] = [
    ['alg none (empty signature)', none],
    ['alg none with a kid and a signature', noneWithHeader],
    ['HS256 keyed with the public JWK', hs256],
    ['HS256 keyed with the public key bytes', hs256x],
    ['expired', await signed(claims({ iat: now - 4000, nbf: now - 4000, exp: now - 3600 }))],
    ['not yet valid', await signed(claims({ nbf: now + 3600, exp: now + 7200 }))],
    ['wrong issuer', await signed(claims({ iss: 'https://evil.example' }))],
    ['wrong audience', await signed(claims({ aud: 'someone-else' }))],
    ['no exp', await signed(Object.fromEntries(Object.entries(claims()).filter(([k]) => k !== 'exp')))],
    ['wrong typ', await signed(claims(), { typ: 'JWT' })],
    ['tampered payload', `${h}.${widened}.${s}`],
    ['signature of another token', `${h}.${p}.${s.slice(0, -4)}AAAA`],
    ['unknown kid', await signed(claims(), { kid: 'not-a-known-kid', key: other.privateKey })],
    ['right kid, wrong key', await signed(claims(), { key: other.privateKey })],
    ['garbage', 'not-a-token'],
  ];
  for (const [name, token] of matrix) {
    for (const headers of [{ 'x-resource-token': token }, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
      const res = await postJson(gw.base, '/api/protect', body, headers);
      assert.equal(res.status, 401, `${name}: ${res.text}`);
      assert.equal(res.json.code, 'UNAUTHENTICATED', name);
      assert.match(String(res.headers['www-authenticate']), /^Bearer /, name);
      assert.ok(!res.text.includes(token), `${name}: token echoed`);
    }
  }
  const missing = await postJson(gw.base, '/api/protect', body);
  assert.equal(missing.status, 401);
  assert.equal(missing.json.code, 'UNAUTHENTICATED');
});

test('token endpoint: too many secret checks under way → 503 with Retry-After, no scrypt spent', async () => {
  const busy = await startTestGateway({ secretChecks: { maxInFlight: 1, maxQueued: 1 } });
  try {
    const form = `grant_type=client_credentials&client_id=${CLIENTS.full.id}&client_secret=${CLIENTS.full.secret}`;
    const send = () =>
      request(`${busy.base}${TOKEN}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': API_KEY },
        body: form,
      }).then(async (res) => ({ status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> }));
    const answers = await Promise.all(Array.from({ length: 8 }, send));
    const refused = answers.filter((a) => a.status === 503);
    assert.ok(refused.length >= 1, `statuses: ${answers.map((a) => a.status).join(',')}`);
    assert.ok(answers.every((a) => a.status === 200 || a.status === 503));
    for (const a of refused) {
      assert.equal(a.body.error, 'temporarily_unavailable');
      assert.equal(a.headers['retry-after'], '1');
      assert.equal(a.headers['cache-control'], 'no-store');
    }
    assert.ok(busy.logs.some((l) => l.includes('"outcome":"temporarily_unavailable"')), 'refusals are audited');
    // The gate frees its slots: once the burst is over, a request gets its token.
    assert.equal((await send()).status, 200);
  } finally {
    await busy.close();
  }
});

test('no secret, API key or token in any log line', async () => {
  const token = await tokenFor(gw.base, CLIENTS.full);
  await postJson(gw.base, '/api/protect', body, { 'x-resource-token': token });
  const logs = gw.logs.join('');
  assert.ok(logs.includes('"audit":true'));
  for (const secret of [API_KEY, CLIENTS.full.secret, CLIENTS.reader.secret, token, token.split('.')[2]]) {
    assert.ok(!logs.includes(secret), 'a secret or token appeared in the logs');
  }
});
