// The verified-token cache (src/identity/token-verifier.ts), counted: a token's signature is checked
// once for many requests, and the cache never accepts what a full verification would refuse — an
// expired token, a token past the cache's age bound, a token whose signature differs by a byte.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { createLogger } from '../../src/core/logger.ts';
import { DpgError } from '../../src/core/errors.ts';
import { createIdentity } from '../../src/identity/identity.ts';
import { CLOCK_TOLERANCE_SECONDS, signatureChecks } from '../../src/identity/token-verifier.ts';
import { API_KEY, CLIENTS, identityConfig } from '../helpers/identity.ts';

const dir = mkdtempSync(join(tmpdir(), 'dpg-token-cache-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let now = Date.UTC(2026, 0, 1);
const identity = await createIdentity(identityConfig(join(dir, 'keys')), {
  logger: createLogger({ level: 'silent', destination: { write: () => undefined } }),
  now: () => now,
});

// One token for every case (each issue costs a scrypt check of the client secret); expiry comes last.
const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENTS.full.id, client_secret: CLIENTS.full.secret });
const issued = await identity.issueToken({ apiKey: API_KEY, authorization: undefined, form });
assert.equal(issued.status, 200);
const t = (issued as { body: { access_token: string } }).body.access_token;

const refused = (reason: string) => (e: unknown) => e instanceof DpgError && e.code === 'UNAUTHENTICATED' && e.message === reason;

test('a token is verified once for many requests, and again once the cache age bound has passed', async () => {
  const before = signatureChecks.count;
  for (let i = 0; i < 50; i++) assert.equal((await identity.verify(t)).clientId, CLIENTS.full.id);
  assert.equal(signatureChecks.count - before, 1);
  now += 61_000; // past the 60 s bound, well before expiry
  await identity.verify(t);
  await identity.verify(t);
  assert.equal(signatureChecks.count - before, 2);
});

test('a token differing from a cached one by a byte of its signature is refused', async () => {
  await identity.verify(t);
  // A character inside the signature (the last one carries padding bits that decode to the same bytes).
  const at = t.length - 10;
  const changed = `${t.slice(0, at)}${t[at] === 'A' ? 'B' : 'A'}${t.slice(at + 1)}`;
  await assert.rejects(identity.verify(changed), refused('The token signature is not valid'));
  assert.equal((await identity.verify(t)).clientId, CLIENTS.full.id);
});

test('an expired token is refused even though it was cached', async () => {
  await identity.verify(t);
  const exp = decodeJwt(t).exp as number;
  now = exp * 1000 + CLOCK_TOLERANCE_SECONDS * 1000 + 1;
  const before = signatureChecks.count;
  await assert.rejects(identity.verify(t), refused('The token has expired'));
  await assert.rejects(identity.verify(t), refused('The token has expired'));
  assert.equal(signatureChecks.count - before, 2, 'each refusal is a full verification, never a cache answer');
});
