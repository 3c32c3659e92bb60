// The leaf certificates the proxy presents for intercepted TLS: one per host, minted on first use
// from the gateway CA (src/crypto/gateway-ca.ts) and cached as ready TLS contexts.

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { GatewayCa } from '../../crypto/gateway-ca.ts';
import { createCertificate, encodeName, randomSerial } from '../../crypto/x509.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

interface CachedLeaf {
  readonly context: SecureContext;
  readonly renewAfter: number;
}

/**
 * Mints one leaf certificate per host (DNS name or IP address) on first use and keeps its TLS
 * context. All leaves share one key pair generated at start: the CA signature is what binds a host.
 */
export class LeafCertificates {
  private readonly cache = new Map<string, CachedLeaf>();
  private readonly leafKey: KeyObject;
  private readonly leafPublicKey: KeyObject;
  private readonly leafKeyPem: string;

  constructor(
    private readonly ca: GatewayCa,
    private readonly options: { maxEntries?: number; validityDays?: number } = {},
  ) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.leafKey = pair.privateKey;
    this.leafPublicKey = pair.publicKey;
    this.leafKeyPem = this.leafKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  }

  /** A TLS context presenting a certificate for `host`, minted and cached on first use. */
  contextFor(host: string): SecureContext {
    const key = host.toLowerCase();
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.renewAfter > now) {
      // Move to the back: the Map's insertion order is the LRU order.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.context;
    }
    const validity = (this.options.validityDays ?? 90) * DAY;
    const cert = createCertificate({
      subject: encodeName(key),
      publicKey: this.leafPublicKey,
      issuer: this.ca.issuer,
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + validity),
      isCa: false,
      altNames: [key],
      serial: randomSerial(),
    });
    const context = createSecureContext({ key: this.leafKeyPem, cert: cert.pem });
    this.cache.delete(key);
    this.cache.set(key, { context, renewAfter: now + validity - DAY });
    const max = this.options.maxEntries ?? 1000;
    while (this.cache.size > max) this.cache.delete(this.cache.keys().next().value as string);
    return context;
  }

  get size(): number {
    return this.cache.size;
  }
}
