// What the doors need from identity: issue tokens at the token endpoint, verify them on every call,
// and decide whether a verified client may run a job.

import type { JobSpec } from '../core/types.ts';
import type { PseudonymScopeConfig, Scope } from '../config/types.ts';

/** A verified caller, from a token. */
export interface Principal {
  readonly clientId: string;
  readonly scopes: ReadonlySet<Scope>;
  /** Manifests the client is limited to; undefined = any. */
  readonly manifests?: ReadonlySet<string>;
  /** The scope values (thirdPartyId, dataUsageId, org-wide) the client may use: from its token. */
  readonly pseudonymScope: PseudonymScopeConfig;
  readonly tokenId: string;
}

/** Token endpoint outcome: the RFC 6749 §5.1 body, or an RFC 6749 §5.2 error with its status. */
export type TokenResponse =
  | { readonly status: 200; readonly body: { access_token: string; token_type: 'Bearer'; expires_in: number; scope: string } }
  | {
      readonly status: 400 | 401;
      readonly body: { error: 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope'; error_description: string };
    }
  | {
      /** Too many secret checks under way (SecretCheckGate): nothing was checked; retry later. */
      readonly status: 503;
      readonly body: { error: 'temporarily_unavailable'; error_description: string };
      readonly retryAfterSeconds: number;
    };

export interface TokenRequest {
  /** X-Api-Key header value, if any. */
  readonly apiKey: string | undefined;
  /** Authorization header value, if any (HTTP Basic client authentication). */
  readonly authorization: string | undefined;
  /** The parsed form body. */
  readonly form: URLSearchParams;
}

export interface Identity {
  issueToken(request: TokenRequest): Promise<TokenResponse>;
  /** Verifies a raw token (no `Bearer ` prefix). Throws DpgError UNAUTHENTICATED. */
  verify(token: string): Promise<Principal>;
  /** Public keys only. */
  jwks(): { keys: Record<string, unknown>[] };
  /**
   * Throws DpgError FORBIDDEN when the principal lacks the scope for the job type, the manifest, or
   * the job's pseudonym scope values (thirdPartyId, dataUsageId, organisation-wide).
   */
  authorize(principal: Principal, job: JobSpec): void;
  /** True while the demo credentials of the default config are configured (logged loudly at start). */
  readonly demoCredentialsActive: boolean;
  close(): Promise<void>;
}
