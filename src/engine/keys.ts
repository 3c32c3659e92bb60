// Per-field keys for a request: derived (HKDF) from the keyring version active at the snapshot date,
// for one manifest, field and pseudonym scope. Derivations are cached so a request costs lookups only.

import type { RequestContext } from '../core/types.ts';
import { deriveKey, type Keyring, type MasterKeyVersion } from '../crypto/keyring.ts';
import { ValueError, type FieldKeys, type KeyMaterial } from '../techniques/technique.ts';

const MAX_CACHED_KEYS = 10_000;
const encoder = new TextEncoder();

/**
 * The pseudonym scope: organisation-wide, or one third party and data usage, so two partners get
 * unlinkable pseudonyms for the same person unless the organisation asks for consistency. An id
 * of 0 is the same as none (gRPC cannot tell them apart), so HTTP and gRPC agree.
 */
export function scopeOf(ctx: RequestContext): string {
  if (ctx.isDataConsistentAcrossOrganization) return 'org';
  return `tp=${ctx.thirdPartyId || '-'};du=${ctx.dataUsageId || '-'}`;
}

export class KeyService {
  // Same Uint8Array object for the same derivation: techniques cache key schedules by identity.
  private readonly derived = new Map<string, KeyMaterial>();
  private readonly scopeBytes = new Map<string, Uint8Array>();

  constructor(readonly keyring: Keyring) {}

  /**
   * Keys of one field for one request; `kid` is the manifest's key or the keyring default. `at` is
   * now for new data (`forNewData`: the version must not be retired) or a reverse job's snapshot date.
   */
  fieldKeys(kid: string | undefined, manifest: string, field: string, scope: string, at: Date, forNewData = true): FieldKeys {
    const keyId = kid ?? this.keyring.defaultKid;
    let master: MasterKeyVersion | undefined;
    const activeMaster = (): MasterKeyVersion => (master ??= forNewData ? this.keyring.activeForNewData(keyId, at) : this.keyring.activeAt(keyId, at));
    const scopeKey = `${manifest}\u0000${field}\u0000${scope}`;
    let bytes = this.scopeBytes.get(scopeKey);
    if (!bytes) {
      bytes = encoder.encode(scope);
      if (this.scopeBytes.size < MAX_CACHED_KEYS) this.scopeBytes.set(scopeKey, bytes);
    }
    return {
      active: (purpose) => this.derive(activeMaster(), purpose, manifest, field, scope),
      version: (purpose, otherKid, version) => {
        const m = this.keyring.get(otherKid, version);
        if (!m) throw new ValueError('UNKNOWN_KEY_VERSION', unknownKeyHint(this.keyring, otherKid, version));
        return this.derive(m, purpose, manifest, field, scope);
      },
      scope: bytes,
    };
  }

  private derive(master: MasterKeyVersion, purpose: string, manifest: string, field: string, scope: string): KeyMaterial {
    const cacheKey = `${master.kid}\u0000${master.version}\u0000${purpose}\u0000${manifest}\u0000${field}\u0000${scope}`;
    let hit = this.derived.get(cacheKey);
    if (!hit) {
      hit = { kid: master.kid, version: master.version, key: deriveKey(master, purpose, manifest, field, scope) };
      if (this.derived.size >= MAX_CACHED_KEYS) this.derived.delete(this.derived.keys().next().value!);
      this.derived.set(cacheKey, hit);
    }
    return hit;
  }
}

/**
 * Why a token's key is missing, for the error detail. A key id the keyring lacks is not repeated
 * (it came from the request); a known one is named, with the version the token asked for.
 */
function unknownKeyHint(keyring: Keyring, kid: string, version: number): string {
  const where = 'it was encrypted with another keyring: compare the keyring fingerprints (dpg validate, the dpg_keyring_info metric; docs/keys.md)';
  if (keyring.versionsOf(kid).length === 0) return `a value names a key id this keyring does not have, so ${where}`;
  return `a value names version ${version} of key "${kid}", which this keyring does not have: it was encrypted with a newer or another keyring (compare the keyring fingerprints: dpg validate, the dpg_keyring_info metric; docs/keys.md)`;
}
