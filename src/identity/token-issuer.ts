// The token endpoint's logic (RFC 6749 §4.4 client credentials): checks the API key and the client,
// then signs a short-lived JWT access token. Errors are RFC 6749 §5.2 bodies, never DpgErrors.

import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { IdentityConfig, ClientConfig, Scope } from '../config/types.ts';
import type { TokenRequest, TokenResponse } from './types.ts';
import type { SigningKeyStore } from './signing-keys.ts';
import { spendVerificationTime, verifySecret } from './secret-hash.ts';
import { SECRET_CHECK_RETRY_AFTER_SECONDS, SecretCheckGate } from './secret-check-gate.ts';
import { DEFAULT_PSEUDONYM_SCOPE, PSEUDONYM_SCOPE_CLAIM, pseudonymScopeClaim } from './pseudonym-scope.ts';

export const ALL_SCOPES: readonly Scope[] = ['protect', 'reconstruct', 'decrypt'];
/** RFC 9068 JWT access token type, checked on verification so no other JWT passes for one. */
export const ACCESS_TOKEN_TYP = 'at+jwt';

const SINGLE_VALUED = ['grant_type', 'client_id', 'client_secret', 'scope'];
const MAX_CREDENTIAL_LENGTH = 1024;

type OAuthError = Extract<TokenResponse, { status: 400 | 401 }>['body']['error'];

function failure(status: 400 | 401, error: OAuthError, description: string): TokenResponse {
  return { status, body: { error, error_description: description } };
}

type BasicCredentials = { kind: 'none' } | { kind: 'invalid' } | { kind: 'basic'; id: string; secret: string };

/** RFC 6749 §2.3.1: Basic credentials whose two parts are form-urlencoded before base64. */
export function parseBasicAuthorization(header: string | undefined): BasicCredentials {
  if (header === undefined || header === '') return { kind: 'none' };
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (match === null) return { kind: 'invalid' };
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return { kind: 'invalid' };
  try {
    const decode = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));
    return { kind: 'basic', id: decode(decoded.slice(0, colon)), secret: decode(decoded.slice(colon + 1)) };
  } catch {
    return { kind: 'invalid' };
  }
}

/** Outcome of the credential checks: the authenticated client, or the error response to send. */
type ClientCheck = { readonly kind: 'client'; readonly client: ClientConfig } | { readonly kind: 'refused'; readonly response: TokenResponse };

export class TokenIssuer {
  private readonly clients: Map<string, ClientConfig>;

  constructor(
    private readonly config: IdentityConfig,
    private readonly keys: SigningKeyStore,
    private readonly now: () => number,
    private readonly gate: SecretCheckGate = new SecretCheckGate(),
  ) {
    this.clients = new Map(config.clients.map((c) => [c.id, c]));
  }

  async issue(request: TokenRequest): Promise<TokenResponse> {
    const { form } = request;
    for (const name of SINGLE_VALUED) {
      if (form.getAll(name).length > 1) return failure(400, 'invalid_request', `Parameter ${name} is given more than once`);
    }
    // Every scrypt run happens inside the gate: unauthenticated callers cannot starve the libuv pool.
    const checked = await this.gate.run(() => this.authenticateClient(request));
    if (checked === undefined) {
      return {
        status: 503,
        body: { error: 'temporarily_unavailable', error_description: 'Too many token requests are being checked; retry shortly' },
        retryAfterSeconds: SECRET_CHECK_RETRY_AFTER_SECONDS,
      };
    }
    if (checked.kind === 'refused') return checked.response;
    const { client } = checked;

    const scopes = grantedScopes(client, form.get('scope'));
    if (scopes === undefined) return failure(400, 'invalid_scope', 'The requested scope is unknown or not granted to this client');

    return { status: 200, body: await this.sign(client, scopes) };
  }

  /** The API key, the request shape and the client credentials, in that order (RFC 6749 §5.2 errors). */
  private async authenticateClient(request: TokenRequest): Promise<ClientCheck> {
    const { form } = request;
    const refuse = (status: 400 | 401, error: OAuthError, description: string): ClientCheck => ({
      kind: 'refused',
      response: failure(status, error, description),
    });
    if (this.config.apiKeys.length > 0) {
      const apiKey = request.apiKey;
      if (apiKey === undefined || apiKey === '') return refuse(401, 'invalid_client', 'The X-Api-Key header is required');
      if (!(await this.apiKeyMatches(apiKey))) return refuse(401, 'invalid_client', 'The API key is not valid');
    }

    const basic = parseBasicAuthorization(request.authorization);
    if (basic.kind === 'invalid') {
      return refuse(400, 'invalid_request', 'The Authorization header must be HTTP Basic client credentials');
    }
    const inBody = form.has('client_id') || form.has('client_secret');
    if (basic.kind === 'basic' && inBody) {
      return refuse(400, 'invalid_request', 'Client credentials must be sent either in the Authorization header or in the body, not both');
    }

    const grantType = form.get('grant_type');
    if (grantType === null || grantType === '') return refuse(400, 'invalid_request', 'Parameter grant_type is required');
    if (grantType !== 'client_credentials') {
      return refuse(400, 'unsupported_grant_type', 'Only the client_credentials grant is supported');
    }

    const clientId = basic.kind === 'basic' ? basic.id : form.get('client_id');
    const secret = basic.kind === 'basic' ? basic.secret : form.get('client_secret');
    if (clientId === null || clientId === '' || secret === null || secret === '') {
      return refuse(400, 'invalid_request', 'Parameters client_id and client_secret are required');
    }
    if (clientId.length > MAX_CREDENTIAL_LENGTH || secret.length > MAX_CREDENTIAL_LENGTH) {
      return refuse(400, 'invalid_request', 'Client credentials are too long');
    }

    const client = this.clients.get(clientId);
    if (client === undefined) {
      // As long as checking a real client's secret (same scrypt parameters).
      await spendVerificationTime(secret, this.config.clients[0]?.secretHash);
      return refuse(401, 'invalid_client', 'Client authentication failed');
    }
    if (!(await verifySecret(secret, client.secretHash))) return refuse(401, 'invalid_client', 'Client authentication failed');
    return { kind: 'client', client };
  }

  /**
   * Every configured key is tried, so the time taken does not depend on which one matches; one
   * after the other, so a request holds at most one pool thread (see SecretCheckGate).
   */
  private async apiKeyMatches(apiKey: string): Promise<boolean> {
    if (apiKey.length > MAX_CREDENTIAL_LENGTH) {
      await spendVerificationTime(apiKey);
      return false;
    }
    let matched = false;
    for (const key of this.config.apiKeys) {
      if (await verifySecret(apiKey, key.hash)) matched = true;
    }
    return matched;
  }

  private async sign(client: ClientConfig, scopes: readonly Scope[]): Promise<Extract<TokenResponse, { status: 200 }>['body']> {
    const key = await this.keys.current();
    const iat = Math.floor(this.now() / 1000);
    const ttl = this.config.tokenTtlSeconds;
    const scope = scopes.join(' ');
    const claims: Record<string, unknown> = { scope, client_id: client.id };
    if (client.manifests !== undefined) claims.manifests = [...client.manifests];
    claims[PSEUDONYM_SCOPE_CLAIM] = pseudonymScopeClaim(client.pseudonymScope ?? DEFAULT_PSEUDONYM_SCOPE);
    const accessToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: ACCESS_TOKEN_TYP })
      .setIssuer(this.config.issuer)
      .setSubject(client.id)
      .setAudience(this.config.audience)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + ttl)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return { access_token: accessToken, token_type: 'Bearer', expires_in: ttl, scope };
  }
}

/** The scopes to grant: all of the client's, or the requested subset; undefined when a request exceeds them. */
function grantedScopes(client: ClientConfig, requested: string | null): Scope[] | undefined {
  if (requested === null || requested.trim() === '') return [...client.scopes];
  const granted: Scope[] = [];
  for (const token of requested.split(' ')) {
    if (token === '') continue;
    const scope = client.scopes.find((s) => s === token);
    if (scope === undefined) return undefined;
    if (!granted.includes(scope)) granted.push(scope);
  }
  return granted;
}
