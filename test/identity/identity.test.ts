// createIdentity without HTTP: token issuing rules (RFC 6749), verification, rotation with a fake
// clock, key file permissions, scopes, and the demo-credential guard.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createLogger } from '../../src/core/logger.ts';
import { DpgError } from '../../src/core/errors.ts';
import { createIdentity, scopeFor } from '../../src/identity/identity.ts';
import { hashSecret } from '../../src/identity/secret-hash.ts';
import { SecretCheckGate } from '../../src/identity/secret-check-gate.ts';
import type { Identity, Principal, TokenRequest } from '../../src/identity/types.ts';
import type { JobSpec, JobType, RequestContext } from '../../src/core/types.ts';
import { API_KEY, CLIENTS, identityConfig } from '../e2e/http-helpers.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-identity-'));
  dirs.push(dir);
  return join(dir, 'keys');
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function jobOf(jobType: JobType, manifestName: string, context: Partial<RequestContext> = {}): JobSpec {
  return { manifestName, jobType, dataSetType: 'JSON', context: { requestId: 'r', ...context } };
}

function quietLogger(lines: string[] = []) {
  return createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
}

function form(fields: Record<string, string>, extra: [string, string][] = []): URLSearchParams {
  const f = new URLSearchParams(fields);
  for (const [k, v] of extra) f.append(k, v);
  return f;
}

function req(fields: Record<string, string>, options: Partial<TokenRequest> & { extra?: [string, string][] } = {}): TokenRequest {
  return { apiKey: 'apiKey' in options ? options.apiKey : API_KEY, authorization: options.authorization, form: form(fields, options.extra) };
}

const full = { grant_type: 'client_credentials', client_id: CLIENTS.full.id, client_secret: CLIENTS.full.secret };

let shared: Identity | undefined;
async function identity(): Promise<Identity> {
  shared ??= await createIdentity(identityConfig(tempDir()), { logger: quietLogger() });
  return shared;
}

test('a client gets a signed JWT with the documented claims', async () => {
  const id = await identity();
  const res = await id.issueToken(req(full));
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.token_type, 'Bearer');
  assert.equal(res.body.expires_in, 900);
  assert.equal(res.body.scope, 'protect reconstruct decrypt');
  const header = decodeProtectedHeader(res.body.access_token);
  assert.equal(header.alg, 'EdDSA');
  assert.equal(header.typ, 'at+jwt');
  assert.ok(typeof header.kid === 'string' && header.kid.length > 20);
  const claims = decodeJwt(res.body.access_token);
  assert.equal(claims.iss, 'https://dpg.test/identity');
  assert.equal(claims.sub, 'demo-client');
  assert.equal(claims.aud, 'dpg-gateway');
  assert.equal((claims.exp as number) - (claims.iat as number), 900);
  assert.equal(claims.nbf, claims.iat);
  assert.match(String(claims.jti), /^[0-9a-f-]{36}$/);
  const principal = await id.verify(res.body.access_token);
  assert.equal(principal.clientId, 'demo-client');
  assert.deepEqual([...principal.scopes].sort(), ['decrypt', 'protect', 'reconstruct']);
  assert.equal(principal.tokenId, claims.jti);
});

test('HTTP Basic client authentication with form-urlencoded parts', async () => {
  const id = await identity();
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(CLIENTS.reader.id)}:${encodeURIComponent(CLIENTS.reader.secret)}`).toString('base64')}`;
  const res = await id.issueToken(req({ grant_type: 'client_credentials' }, { authorization: basic }));
  assert.equal(res.status, 200);
  if (res.status === 200) assert.equal(res.body.scope, 'protect');
});

test('every RFC 6749 §5.2 error case', async () => {
  const id = await identity();
  const basic = `Basic ${Buffer.from(`${CLIENTS.full.id}:${CLIENTS.full.secret}`).toString('base64')}`;
  const cases: [string, TokenRequest, number, string][] = [
    ['missing API key', req(full, { apiKey: undefined }), 401, 'invalid_client'],
    ['wrong API key', req(full, { apiKey: 'nope' }), 401, 'invalid_client'],
    ['duplicate grant_type', req(full, { extra: [['grant_type', 'client_credentials']] }), 400, 'invalid_request'],
    ['duplicate client_id', req(full, { extra: [['client_id', 'x']] }), 400, 'invalid_request'],
    ['missing grant_type', req({ client_id: full.client_id, client_secret: full.client_secret }), 400, 'invalid_request'],
    ['missing client_secret', req({ grant_type: 'client_credentials', client_id: full.client_id }), 400, 'invalid_request'],
    ['missing client_id', req({ grant_type: 'client_credentials', client_secret: full.client_secret }), 400, 'invalid_request'],
    ['both Basic and body', req(full, { authorization: basic }), 400, 'invalid_request'],
    ['malformed Basic', req({ grant_type: 'client_credentials' }, { authorization: 'Basic !!!' }), 400, 'invalid_request'],
    ['other scheme', req({ grant_type: 'client_credentials' }, { authorization: 'Bearer abc' }), 400, 'invalid_request'],
    ['password grant', req({ ...full, grant_type: 'password' }), 400, 'unsupported_grant_type'],
    ['wrong secret', req({ ...full, client_secret: 'wrong' }), 401, 'invalid_client'],
    ['unknown client', req({ ...full, client_id: 'nobody' }), 401, 'invalid_client'],
    ['scope not granted', req({ ...full, client_id: CLIENTS.reader.id, client_secret: CLIENTS.reader.secret, scope: 'protect reconstruct' }), 400, 'invalid_scope'],
    ['unknown scope', req({ ...full, scope: 'admin' }), 400, 'invalid_scope'],
  ];
  for (const [name, request, status, error] of cases) {
    const res = await id.issueToken(request);
    assert.equal(res.status, status, name);
    assert.equal((res.body as { error?: string }).error, error, name);
    const text = JSON.stringify(res.body);
    for (const secret of [API_KEY, CLIENTS.full.secret, CLIENTS.reader.secret]) assert.ok(!text.includes(secret), name);
  }
});

test('a scope parameter narrows the token', async () => {
  const id = await identity();
  const res = await id.issueToken(req({ ...full, scope: 'protect  protect' }));
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.body.scope, 'protect');
  const principal = await id.verify(res.body.access_token);
  assert.deepEqual([...principal.scopes], ['protect']);
  assert.throws(() => id.authorize(principal, jobOf('Reconstruct', 'customer')), (e: unknown) => e instanceof DpgError && e.code === 'FORBIDDEN');
});

test('authorize: scope per job type and the manifest allow-list', async () => {
  const id = await identity();
  assert.equal(scopeFor('Reconstruct'), 'reconstruct');
  assert.equal(scopeFor('Decrypt'), 'decrypt');
  for (const j of ['Mask', 'Anonymise', 'Pseudonymise', 'Restrict', 'Encrypt'] as const) assert.equal(scopeFor(j), 'protect');
  const res = await id.issueToken(req({ ...full, client_id: CLIENTS.cardOnly.id, client_secret: CLIENTS.cardOnly.secret }));
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const p = await id.verify(res.body.access_token);
  id.authorize(p, jobOf('Mask', 'card-masking'));
  assert.throws(() => id.authorize(p, jobOf('Mask', 'customer')), (e: unknown) => e instanceof DpgError && e.code === 'FORBIDDEN');
  assert.throws(() => id.authorize(p, jobOf('Decrypt', 'card-masking')), (e: unknown) => e instanceof DpgError && e.code === 'FORBIDDEN');
});

test('authorize: pseudonym scope values are bound to the client, carried in its token', async () => {
  const partners = [
    { id: 'partner-7', secret: 'partner-7-secret-a1b2', scope: { thirdPartyIds: [7], dataUsageIds: [0, 1, 2], organizationWide: false } },
    { id: 'any-usage', secret: 'any-usage-secret-c3d4', scope: { thirdPartyIds: [0, 9], dataUsageIds: '*' as const, organizationWide: true } },
  ];
  const base = identityConfig(tempDir());
  const config = {
    ...base,
    clients: [
      ...base.clients,
      ...partners.map((p) => ({ id: p.id, secretHash: hashSecret(p.secret), scopes: ['protect' as const], pseudonymScope: p.scope })),
    ],
  };
  const id = await createIdentity(config, { logger: quietLogger([]) });
  const principalOf = async (clientId: string, secret: string) => {
    const res = await id.issueToken(req({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }));
    assert.equal(res.status, 200);
    if (res.status !== 200) throw new Error('no token');
    return id.verify(res.body.access_token);
  };
  const forbidden = (p: Principal, context: Partial<RequestContext>, location: string) =>
    assert.throws(
      () => id.authorize(p, jobOf('Pseudonymise', 'customer', context)),
      (e: unknown) => e instanceof DpgError && e.code === 'FORBIDDEN' && e.errors?.some((x) => x.location === location) === true,
      `${JSON.stringify(context)} → ${location}`,
    );

  const p7 = await principalOf('partner-7', partners[0].secret);
  assert.deepEqual(p7.pseudonymScope, partners[0].scope);
  id.authorize(p7, jobOf('Pseudonymise', 'customer', { thirdPartyId: 7, dataUsageId: 2 }));
  id.authorize(p7, jobOf('Pseudonymise', 'customer', { thirdPartyId: 7 }));
  forbidden(p7, { thirdPartyId: 8 }, 'thirdPartyId');
  forbidden(p7, {}, 'thirdPartyId'); // "none given" is a scope of its own, not this partner's
  forbidden(p7, { thirdPartyId: 7, dataUsageId: 3 }, 'dataUsageId');
  forbidden(p7, { thirdPartyId: 7, isDataConsistentAcrossOrganization: true }, 'isDataConsistentAcrossOrganization');

  const any = await principalOf('any-usage', partners[1].secret);
  id.authorize(any, jobOf('Pseudonymise', 'customer', { dataUsageId: 123456, isDataConsistentAcrossOrganization: true }));
  id.authorize(any, jobOf('Pseudonymise', 'customer', { thirdPartyId: 9 }));
  forbidden(any, { thirdPartyId: 7 }, 'thirdPartyId');

  // A client configured without pseudonymScope: no ids, not org-wide.
  const reader = await principalOf(CLIENTS.reader.id, CLIENTS.reader.secret);
  id.authorize(reader, jobOf('Pseudonymise', 'customer'));
  forbidden(reader, { thirdPartyId: 1 }, 'thirdPartyId');
  forbidden(reader, { dataUsageId: 1 }, 'dataUsageId');
  forbidden(reader, { isDataConsistentAcrossOrganization: true }, 'isDataConsistentAcrossOrganization');
});

test('JWKS carries public members only', async () => {
  const id = await identity();
  const { keys } = id.jwks();
  assert.ok(keys.length >= 1);
  for (const k of keys) {
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']) assert.ok(!(member in k), member);
    assert.equal(k.use, 'sig');
    assert.equal(k.alg, 'EdDSA');
  }
});

test('signing keys: 0700 directory, 0600 files, rotation keeps old keys until their tokens expired', async () => {
  const dir = tempDir();
  let now = Date.UTC(2025, 0, 1);
  const config = identityConfig(dir, { tokenTtlSeconds: 200, signingKeyRotationSeconds: 100 });
  const lines: string[] = [];
  const id = await createIdentity(config, { logger: quietLogger(lines), now: () => now, algorithm: 'ES256' });
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const files = () => readdirSync(dir).filter((f) => f.endsWith('.jwk.json'));
  assert.equal(files().length, 1);
  assert.equal(statSync(join(dir, files()[0])).mode & 0o777, 0o600);

  const first = await id.issueToken(req(full));
  assert.equal(first.status, 200);
  if (first.status !== 200) return;
  const firstKid = decodeProtectedHeader(first.body.access_token).kid;
  assert.equal(decodeProtectedHeader(first.body.access_token).alg, 'ES256');

  now += 100_000; // rotation due
  const second = await id.issueToken(req(full));
  assert.equal(second.status, 200);
  if (second.status !== 200) return;
  const secondKid = decodeProtectedHeader(second.body.access_token).kid;
  assert.notEqual(secondKid, firstKid);
  assert.deepEqual(id.jwks().keys.map((k) => k.kid), [secondKid, firstKid]);
  assert.equal(files().length, 2);
  await id.verify(first.body.access_token); // old key still trusted

  now += 150_000; // first token expired; old key kept until rotation + ttl
  assert.equal(id.jwks().keys.length, 2);
  now += 51_000; // past rotation + ttl: the old key is gone
  assert.deepEqual(id.jwks().keys.map((k) => k.kid), [secondKid]);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(files().length, 1);

  // A restart over the same directory keeps the key (due for rotation by now, so a new one signs).
  const again = await createIdentity(config, { logger: quietLogger(), now: () => now });
  const kids = again.jwks().keys.map((k) => k.kid);
  assert.equal(kids.length, 2);
  assert.equal(kids[1], secondKid);
  await again.verify(second.body.access_token);
  assert.ok(!lines.join('').includes('"d":'), 'no private key material in logs');
});

test('demo credentials: detected and logged loudly, refused in production', async () => {
  const lines: string[] = [];
  const id = await createIdentity(identityConfig(tempDir()), { logger: quietLogger(lines) });
  assert.equal(id.demoCredentialsActive, true);
  assert.ok(lines.some((l) => l.includes('DEMO CREDENTIALS ARE ACTIVE') && l.includes('"level":40')));
  await assert.rejects(
    createIdentity(identityConfig(tempDir()), { logger: quietLogger(), nodeEnv: 'production' }),
    /NODE_ENV is production/,
  );

  const own = identityConfig(tempDir(), {
    apiKeys: [{ id: 'prod', hash: hashSecret('a-long-random-api-key') }],
    clients: [{ id: 'svc', secretHash: hashSecret('a-long-random-secret'), scopes: ['protect'] }],
  });
  const prod = await createIdentity(own, { logger: quietLogger(), nodeEnv: 'production' });
  assert.equal(prod.demoCredentialsActive, false);
});

test('verify rejects garbage with UNAUTHENTICATED', async () => {
  const id = await identity();
  for (const token of ['', 'abc', 'a.b', 'a.b.c', 'x'.repeat(9000), 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
    await assert.rejects(id.verify(token), (e: unknown) => e instanceof DpgError && e.code === 'UNAUTHENTICATED');
  }
});

test('a rejected token keeps only our reason: no jose error (with the claims) as cause, none in logs', async () => {
  const dir = tempDir();
  let now = Date.UTC(2025, 0, 1);
  const issuing = await createIdentity(identityConfig(dir), { logger: quietLogger(), now: () => now });
  const res = await issuing.issueToken(req(full));
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const { jti } = decodeJwt(res.body.access_token);
  // Same keys, another issuer: jose fails on the iss claim and its error carries the payload.
  const other = await createIdentity(identityConfig(dir, { issuer: 'https://elsewhere.test/identity' }), { logger: quietLogger(), now: () => now });
  now += 2 * 3600 * 1000;
  const cases: [Identity, string][] = [
    [other, 'The token issuer is not accepted'],
    [issuing, 'The token has expired'],
  ];
  for (const [verifier, reason] of cases) {
    const lines: string[] = [];
    const logger = quietLogger(lines);
    await assert.rejects(verifier.verify(res.body.access_token), (e: unknown) => {
      assert.ok(e instanceof DpgError && e.code === 'UNAUTHENTICATED');
      assert.equal(e.message, reason);
      assert.equal(e.cause, undefined);
      logger.error({ err: e }, 'token rejected');
      return true;
    });
    const logged = lines.join('');
    assert.ok(logged.includes(reason));
    assert.ok(typeof jti === 'string' && !logged.includes(jti) && !logged.includes(CLIENTS.full.id), 'claims reached the log');
  }
});

test('secret checks are bounded: beyond the in-flight and queue limits a token request is refused at once', async () => {
  const id = await createIdentity(identityConfig(tempDir()), { logger: quietLogger(), secretChecks: { maxInFlight: 1, maxQueued: 1 } });
  // All five start in the same tick: one checks, one waits, three are refused before any scrypt.
  const answers = await Promise.all(Array.from({ length: 5 }, () => id.issueToken(req(full))));
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 503, 503, 503]);
  const refused = answers[4];
  assert.ok(refused.status === 503 && refused.body.error === 'temporarily_unavailable' && refused.retryAfterSeconds === 1);
  assert.equal((await id.issueToken(req(full))).status, 200);
  // Cheap request errors are answered without queueing behind the gate.
  const repeated = await id.issueToken(req(full, { extra: [['grant_type', 'client_credentials']] }));
  assert.equal(repeated.status, 400);
});

test('SecretCheckGate never runs more than maxInFlight at once and serves waiters in order', async () => {
  const gate = new SecretCheckGate({ maxInFlight: 2, maxQueued: 50 });
  let running = 0;
  let peak = 0;
  const order: number[] = [];
  const work = (n: number) => async () => {
    running++;
    peak = Math.max(peak, running);
    order.push(n);
    await new Promise((r) => setTimeout(r, 1 + (n % 3)));
    running--;
    return n;
  };
  const results = await Promise.all(Array.from({ length: 40 }, (_, n) => gate.run(work(n))));
  assert.deepEqual(results, Array.from({ length: 40 }, (_, n) => n));
  assert.equal(peak, 2);
  assert.deepEqual(order, results, 'waiters start in arrival order');
  // A failing check frees its slot too.
  await assert.rejects(gate.run(() => Promise.reject(new Error('boom'))));
  assert.equal(await gate.run(async () => 'after'), 'after');
  assert.deepEqual(await Promise.all([gate.run(work(1)), gate.run(work(2))]), [1, 2]);
  const full = new SecretCheckGate({ maxInFlight: 1, maxQueued: 0 });
  const first = full.run(work(7));
  assert.equal(await full.run(work(8)), undefined);
  assert.equal(await first, 7);
});
