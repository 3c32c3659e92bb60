// Verification of access tokens on every call: signature by a published key (ours, or a trusted
// remote JWKS), an algorithm allow-list, issuer, audience, type and lifetime. Any failure is 401.

import { createRemoteJWKSet, jwtVerify, type CryptoKey, type JWTHeaderParameters, type FlattenedJWSInput } from 'jose';
import { DpgError } from '../core/errors.ts';
import type { IdentityConfig, Scope } from '../config/types.ts';
import type { Principal } from './types.ts';
import { SIGNING_ALGORITHMS, type SigningKeyStore } from './signing-keys.ts';
import { ACCESS_TOKEN_TYP, ALL_SCOPES } from './token-issuer.ts';
import { PSEUDONYM_SCOPE_CLAIM, pseudonymScopeFromClaim } from './pseudonym-scope.ts';

/** Small tolerance for clocks of a central identity service and its sidecars. */
export const CLOCK_TOLERANCE_SECONDS = 30;
const MAX_TOKEN_LENGTH = 8192;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Verified tokens are remembered (keyed by the whole token, signature included) until they expire
 * or for at most this long: an Ed25519 verification costs far more than the rest of a small
 * request, and clients send the same token many times.
 */
const CACHE_MAX_AGE_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

/** Full verifications (signature and claims) run in this process: tests count cache hits with it. */
export const signatureChecks = { count: 0 };

class UnknownSigningKey extends Error {}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

export class TokenVerifier {
  private readonly remote: RemoteKeySet | undefined;
  private readonly cache = new Map<string, { readonly principal: Principal; readonly validUntilMs: number }>();

  constructor(
    private readonly config: IdentityConfig,
    private readonly keys: SigningKeyStore,
    private readonly now: () => number,
  ) {
    this.remote =
      config.trustedJwksUrl === undefined
        ? undefined
        : createRemoteJWKSet(new URL(config.trustedJwksUrl), { cooldownDuration: 30_000, cacheMaxAge: 600_000 });
  }

  /** A remembered token answers with an already-settled promise: no async function frame per call. */
  verify(token: string): Promise<Principal> {
    const cached = this.cache.get(token);
    if (cached !== undefined) {
      if (this.now() < cached.validUntilMs) return Promise.resolve(cached.principal);
      this.cache.delete(token);
    }
    return this.verifyUncached(token);
  }

  private async verifyUncached(token: string): Promise<Principal> {
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
      throw unauthenticated('The token is malformed');
    }
    signatureChecks.count++;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, (header, input) => this.keyFor(header, input), {
        algorithms: [...SIGNING_ALGORITHMS],
        issuer: this.config.issuer,
        audience: this.config.audience,
        typ: ACCESS_TOKEN_TYP,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(this.now()),
        requiredClaims: ['iss', 'sub', 'aud', 'iat', 'exp', 'jti'],
      }));
    } catch (err) {
      // Only our own reason text: a jose error carries the token's claims (and the logger's error
      // serializer prints causes), so it is never attached as the cause.
      throw unauthenticated(reasonFor(err));
    }
    const principal = principalFrom(payload);
    this.remember(token, principal, (payload.exp as number) * 1000);
    return principal;
  }

  private remember(token: string, principal: Principal, expiresAtMs: number): void {
    if (this.cache.size >= CACHE_MAX_ENTRIES) {
      // Oldest first (Map keeps insertion order): a simple bound, not an LRU.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(token, { principal, validUntilMs: Math.min(expiresAtMs, this.now() + CACHE_MAX_AGE_MS) });
  }

  private async keyFor(header: JWTHeaderParameters, input: FlattenedJWSInput): Promise<CryptoKey> {
    const kid = header.kid;
    if (typeof kid !== 'string' || kid === '') throw new UnknownSigningKey();
    const local = await this.keys.find(kid);
    if (local !== undefined) {
      if (local.alg !== header.alg) throw new UnknownSigningKey();
      return local.publicKey;
    }
    if (this.remote !== undefined) return (await this.remote(header, input)) as CryptoKey;
    throw new UnknownSigningKey();
  }
}

function unauthenticated(detail: string): DpgError {
  return new DpgError('UNAUTHENTICATED', detail);
}

/** A reason safe to return: names what failed, never any part of the token. */
function reasonFor(err: unknown): string {
  if (err instanceof UnknownSigningKey) return 'The token was signed by an unknown key';
  const e = err as { code?: unknown; claim?: unknown };
  switch (e?.code) {
    case 'ERR_JWT_EXPIRED':
      return 'The token has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'nbf' || e.claim === 'iat') return 'The token is not yet valid';
      if (e.claim === 'iss') return 'The token issuer is not accepted';
      if (e.claim === 'aud') return 'The token audience is not accepted';
      if (e.claim === 'typ') return 'The token type is not accepted';
      return 'The token claims are not valid';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'The token algorithm is not accepted';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'The token signature is not valid';
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'The token was signed by an unknown key';
    case 'ERR_JWKS_TIMEOUT':
    case 'ERR_JOSE_GENERIC':
      return 'The token could not be verified';
    default:
      return 'The token is not valid';
  }
}

function principalFrom(payload: Record<string, unknown>): Principal {
  const sub = payload.sub;
  const jti = payload.jti;
  if (typeof sub !== 'string' || sub === '' || typeof jti !== 'string') throw unauthenticated('The token claims are not valid');
  const scopeClaim = typeof payload.scope === 'string' ? payload.scope : '';
  const scopes = new Set<Scope>();
  for (const s of scopeClaim.split(' ')) {
    const known = ALL_SCOPES.find((k) => k === s);
    if (known !== undefined) scopes.add(known);
  }
  let manifests: ReadonlySet<string> | undefined;
  if (payload.manifests !== undefined) {
    if (!Array.isArray(payload.manifests) || !payload.manifests.every((m) => typeof m === 'string')) {
      throw unauthenticated('The token claims are not valid');
    }
    manifests = new Set(payload.manifests as string[]);
  }
  // No claim (a token from an issuer that does not write it): the default, never "any".
  const pseudonymScope = pseudonymScopeFromClaim(payload[PSEUDONYM_SCOPE_CLAIM]);
  if (pseudonymScope === undefined) throw unauthenticated('The token claims are not valid');
  return { clientId: sub, scopes, manifests, pseudonymScope, tokenId: jti };
}
