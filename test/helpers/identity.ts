// Identity fixtures shared by the whole-process tests of every door: the demo clients of the
// default config plus a manifest-limited one, hashed once per process.

import type { IdentityConfig } from '../../src/config/types.ts';
import { hashSecret } from '../../src/identity/secret-hash.ts';

export const API_KEY = 'demo-api-key';
export const CLIENTS = {
  full: { id: 'demo-client', secret: 'demo-secret' },
  reader: { id: 'demo-reader', secret: 'reader-secret' },
  cardOnly: { id: 'card-only', secret: 'card-only-secret-7f3a' },
} as const;

let hashes: { apiKey: string; full: string; reader: string; cardOnly: string } | undefined;
/** Hashed once per process: scrypt is deliberately slow. */
function demoHashes(): NonNullable<typeof hashes> {
  hashes ??= {
    apiKey: hashSecret(API_KEY),
    full: hashSecret(CLIENTS.full.secret),
    reader: hashSecret(CLIENTS.reader.secret),
    cardOnly: hashSecret(CLIENTS.cardOnly.secret),
  };
  return hashes;
}

export function identityConfig(signingKeyDir: string, overrides: Partial<IdentityConfig> = {}): IdentityConfig {
  const h = demoHashes();
  return {
    issuer: 'https://dpg.test/identity',
    audience: 'dpg-gateway',
    tokenTtlSeconds: 900,
    signingKeyDir,
    signingKeyRotationSeconds: 7 * 24 * 3600,
    apiKeys: [{ id: 'demo', hash: h.apiKey }],
    clients: [
      // The operator's own tool: every pseudonym scope. The others have the default (no ids, not org-wide).
      { id: CLIENTS.full.id, secretHash: h.full, scopes: ['protect', 'reconstruct', 'decrypt'], pseudonymScope: { thirdPartyIds: '*', dataUsageIds: '*', organizationWide: true } },
      { id: CLIENTS.reader.id, secretHash: h.reader, scopes: ['protect'] },
      { id: CLIENTS.cardOnly.id, secretHash: h.cardOnly, scopes: ['protect'], manifests: ['card-masking'] },
    ],
    ...overrides,
  };
}
