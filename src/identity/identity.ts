// Builds the Identity the doors use: signing keys, token issuing and verification, scope checks,
// and the guard against demo credentials in production.

import type { Logger } from '../core/logger.ts';
import { DpgError, StartupError } from '../core/errors.ts';
import type { JobSpec, JobType } from '../core/types.ts';
import type { IdentityConfig, Scope } from '../config/types.ts';
import type { Identity, Principal } from './types.ts';
import { SigningKeyStore, type SigningAlgorithm } from './signing-keys.ts';
import { TokenIssuer } from './token-issuer.ts';
import { TokenVerifier } from './token-verifier.ts';
import { verifySecret } from './secret-hash.ts';
import { SecretCheckGate, type SecretCheckLimits } from './secret-check-gate.ts';
import { checkPseudonymScope } from './pseudonym-scope.ts';

/** The demo credentials of the default config (DESIGN §3); never acceptable in production. */
export const DEMO_API_KEY = 'demo-api-key';
export const DEMO_CLIENT_SECRETS = ['demo-secret', 'reader-secret'] as const;

export interface IdentityOptions {
  readonly logger: Logger;
  /** process.env.NODE_ENV; 'production' refuses demo credentials. */
  readonly nodeEnv?: string;
  /** Clock in milliseconds (tests). */
  readonly now?: () => number;
  /** Algorithm of newly created signing keys. Default EdDSA (Ed25519). */
  readonly algorithm?: SigningAlgorithm;
  /** Bounds on concurrent token-endpoint secret checks. Default DEFAULT_SECRET_CHECK_LIMITS. */
  readonly secretChecks?: SecretCheckLimits;
}

/** The scope a job type needs (DESIGN §3). */
export function scopeFor(jobType: JobType): Scope {
  if (jobType === 'Reconstruct') return 'reconstruct';
  if (jobType === 'Decrypt') return 'decrypt';
  return 'protect';
}

export async function createIdentity(config: IdentityConfig, options: IdentityOptions): Promise<Identity> {
  const { logger } = options;
  const now = options.now ?? Date.now;

  const demoCredentialsActive = await usesDemoCredentials(config);
  if (demoCredentialsActive) {
    if (options.nodeEnv === 'production') {
      throw new StartupError(
        'Refusing to start: the demo credentials of the default config are configured and NODE_ENV is production. ' +
          'Replace identity.apiKeys and identity.clients with your own hashed secrets (see docs/identity.md).',
      );
    }
    logger.warn(
      { demoCredentials: true },
      'DEMO CREDENTIALS ARE ACTIVE: anyone who knows the published demo API key or client secrets can obtain tokens. ' +
        'Do not expose this gateway; configure your own secrets before real use (docs/identity.md).',
    );
  }
  if (config.apiKeys.length === 0) {
    logger.warn('identity.apiKeys is empty: the token endpoint does not require an X-Api-Key header');
  }

  const keys = await SigningKeyStore.open({
    dir: config.signingKeyDir,
    algorithm: options.algorithm ?? 'EdDSA',
    rotationSeconds: config.signingKeyRotationSeconds,
    retentionSeconds: config.tokenTtlSeconds,
    now,
    logger,
  });
  const issuer = new TokenIssuer(config, keys, now, new SecretCheckGate(options.secretChecks));
  const verifier = new TokenVerifier(config, keys, now);

  return {
    demoCredentialsActive,
    issueToken: (request) => issuer.issue(request),
    verify: (token) => verifier.verify(token),
    jwks: () => ({ keys: keys.retained().map((k) => ({ ...k.publicJwk })) }),
    authorize(principal: Principal, job: JobSpec): void {
      const needed = scopeFor(job.jobType);
      if (!principal.scopes.has(needed)) {
        throw new DpgError('FORBIDDEN', `The token lacks the '${needed}' scope required for ${job.jobType}`);
      }
      if (principal.manifests !== undefined && !principal.manifests.has(job.manifestName)) {
        throw new DpgError('FORBIDDEN', 'The client is not allowed to use this manifest');
      }
      checkPseudonymScope(principal.pseudonymScope, job.context);
    },
    async close(): Promise<void> {
      // Nothing to release: keys live in memory and files, and no timers run.
    },
  };
}

/**
 * Results of checking a stored hash against a published demo secret. Both inputs are public or
 * config data, so remembering the answer is harmless and saves scrypt runs on restarts in-process.
 */
const demoChecks = new Map<string, Promise<boolean>>();

function isDemoSecret(secret: string, hash: string): Promise<boolean> {
  const key = `${secret}\n${hash}`;
  let check = demoChecks.get(key);
  if (check === undefined) {
    check = verifySecret(secret, hash);
    demoChecks.set(key, check);
  }
  return check;
}

/**
 * The hashes of the demo secrets exactly as config/gateway.yaml ships them: recognised by string,
 * so starting the default config runs no scrypt at all (each check costs ~100 ms and 32 MiB).
 * A test keeps this list and the shipped config in step.
 */
export const SHIPPED_DEMO_HASHES: ReadonlySet<string> = new Set([
  'scrypt$32768$8$1$mztrqBNYSmUHB5jYMqQcpA$4wt6ZNTHh-3TalgwH2kTuP66vLDH8dD_EIO0LTpONVU',
  'scrypt$32768$8$1$y7DdrGKCwv1FRSlc4jRSHw$QViw4LHtH1b6_eZMXEE7bq32V8wfW79VTdXjtsKjzRY',
  'scrypt$32768$8$1$dYdef9HLNkJQcRIa5kZLeQ$Scb_Wj0DJLzLljuSKzjmKqdLS6JMYYb5obetHQRQszY',
]);

/**
 * Checks the configured hashes against the published demo secrets: the shipped demo hashes by
 * string, any other hash with scrypt (a re-hashed demo secret is caught too).
 */
async function usesDemoCredentials(config: IdentityConfig): Promise<boolean> {
  const stored = [...config.apiKeys.map((k) => k.hash), ...config.clients.map((c) => c.secretHash)];
  if (stored.some((h) => SHIPPED_DEMO_HASHES.has(h))) return true;
  const checks: Promise<boolean>[] = [];
  for (const key of config.apiKeys) checks.push(isDemoSecret(DEMO_API_KEY, key.hash));
  for (const client of config.clients) {
    for (const secret of DEMO_CLIENT_SECRETS) checks.push(isDemoSecret(secret, client.secretHash));
  }
  return (await Promise.all(checks)).includes(true);
}
