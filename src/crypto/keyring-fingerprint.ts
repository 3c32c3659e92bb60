// What identifies a keyring without showing it: a key check value (KCV) per key version and one
// fingerprint of the whole keyring, so operators can tell whether replicas (and the gateway that
// protected some data) hold the same keys. Shown by `dpg validate`, the start-up log and a metric.

import { createHash, createHmac } from 'node:crypto';
import type { Keyring, MasterKeyVersion } from './keyring.ts';

/**
 * The check value's message. HMAC-SHA-256 keyed with the version's material over this constant:
 * a purpose of its own, so the check value is unrelated to every working key (HKDF derives those),
 * and, truncated to 24 bits, it tells keys apart without helping anyone guess one.
 */
const KCV_MESSAGE = 'dpg key check value';
/** Hex digits of a key check value shown: 24 bits, as the common AES KCV convention shows. */
const KCV_HEX = 6;
/** Hex digits of the keyring fingerprint: 64 bits. */
const FINGERPRINT_HEX = 16;

export interface KeyringFingerprint {
  /** `sha256:` and 16 hex digits over every key id, version, activeFrom, retired flag and check; the default key too. */
  readonly fingerprint: string;
  /** One entry per key version, `<kid> v<version> <kcv>`, key ids sorted. */
  readonly versions: readonly string[];
  /** Per key version, for the metric. */
  readonly checks: readonly { readonly kid: string; readonly version: number; readonly kcv: string; readonly activeFrom: Date }[];
}

function checkBytes(version: MasterKeyVersion): Buffer {
  return createHmac('sha256', version.material).update(KCV_MESSAGE, 'utf8').digest();
}

/** The key check value of one version: the first 6 hex digits of HMAC-SHA-256(material, "dpg key check value"). */
export function keyCheckValue(version: MasterKeyVersion): string {
  return checkBytes(version).toString('hex').slice(0, KCV_HEX);
}

/** Key check values and the whole-keyring fingerprint. Deterministic: the same document gives the same strings on every host. */
export function fingerprintKeyring(keyring: Keyring): KeyringFingerprint {
  const hash = createHash('sha256').update(`default ${keyring.defaultKid}\n`);
  const versions: string[] = [];
  const checks: { kid: string; version: number; kcv: string; activeFrom: Date }[] = [];
  // Sorted: the order of keys in the document does not change what the keyring is (the default key is hashed above).
  for (const kid of keyring.kids().sort()) {
    for (const v of keyring.versionsOf(kid)) {
      const check = checkBytes(v);
      // The full check enters the fingerprint, so two keyrings whose 24-bit checks collide still differ.
      hash.update(`${kid} ${v.version} ${v.activeFrom.toISOString()} ${v.retired ? 'retired' : 'active'} `).update(check).update('\n');
      const kcv = check.toString('hex').slice(0, KCV_HEX);
      check.fill(0);
      versions.push(`${kid} v${v.version} ${kcv}`);
      checks.push({ kid, version: v.version, kcv, activeFrom: v.activeFrom });
    }
  }
  return { fingerprint: `sha256:${hash.digest('hex').slice(0, FINGERPRINT_HEX)}`, versions, checks };
}
