// The gateway CA for intercepted TLS: loaded from the configured PEM files, or generated once under
// the data directory; and the leaf certificates it mints per host, cached as ready TLS contexts.

import { X509Certificate, createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { StartupError } from '../core/errors.ts';
import { createCertificate, encodeName, issuerIdentity, type Issuer } from './x509.ts';

export const CA_CERT_FILE = 'proxy-ca.pem';
export const CA_KEY_FILE = 'proxy-ca-key.pem';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

export interface GatewayCa {
  /** The certificate apps must trust (served at GET /proxy/ca.pem). */
  readonly certPem: string;
  readonly issuer: Issuer;
  /** Where it came from, for the start-up log line. */
  readonly source: 'config' | 'generated' | 'data-dir';
}

/** 128 random bits with the top bit cleared: positive and unique (RFC 5280 §4.1.2.2). */
export function randomSerial(): Uint8Array {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01; // never a leading zero byte, never zero
  return bytes;
}

/**
 * Loads the configured CA, else the one generated earlier under dataDir, else generates one
 * (ECDSA P-256, ten years) and writes it there with the key file at mode 0600.
 */
export function loadOrCreateCa(files: { readonly cert: string; readonly key: string } | undefined, dataDir: string): GatewayCa {
  if (files) return loadCa(files.cert, files.key, 'config');
  const certFile = join(dataDir, CA_CERT_FILE);
  const keyFile = join(dataDir, CA_KEY_FILE);
  if (existsSync(certFile) && existsSync(keyFile)) return loadCa(certFile, keyFile, 'data-dir');

  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = Date.now();
  const subject = encodeName('DPG Egress Proxy CA', 'Data Protection Gateway');
  const cert = createCertificate({
    subject,
    publicKey,
    selfSigningKey: privateKey,
    notBefore: new Date(now - HOUR),
    notAfter: new Date(now + 3650 * DAY),
    isCa: true,
    serial: randomSerial(),
  });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(certFile, cert.pem, { mode: 0o644 });
  return { certPem: cert.pem, issuer: { name: subject, privateKey, keyIdentifier: issuerIdentity(cert.der).keyIdentifier }, source: 'generated' };
}

function loadCa(certFile: string, keyFile: string, source: GatewayCa['source']): GatewayCa {
  let certPem: string;
  let privateKey: KeyObject;
  let x509: X509Certificate;
  try {
    certPem = readFileSync(certFile, 'utf8');
    x509 = new X509Certificate(certPem);
  } catch (err) {
    const code = fileErrorCode(err);
    throw new StartupError(`Proxy CA certificate ${certFile} could not be read${code ? ` (${code})` : ' as a PEM certificate'}`, { cause: err });
  }
  try {
    privateKey = createPrivateKey(readFileSync(keyFile, 'utf8'));
  } catch (err) {
    // The key file's content never goes into the message.
    const code = fileErrorCode(err);
    throw new StartupError(`Proxy CA key ${keyFile} could not be read${code ? ` (${code})` : ' as a PEM private key'}`, { cause: err });
  }
  if (!x509.ca) throw new StartupError(`Proxy CA certificate ${certFile} is not a CA certificate (basicConstraints CA:TRUE)`);
  if (!x509.checkPrivateKey(privateKey)) throw new StartupError(`Proxy CA key ${keyFile} does not belong to ${certFile}`);
  const raw = new Uint8Array(x509.raw);
  let issuer: Issuer | undefined;
  return {
    certPem: pemOf(x509),
    // Read from the certificate when the first leaf is minted: loading a CA alone never loads the
    // ASN.1 library (x509.ts).
    get issuer(): Issuer {
      if (issuer === undefined) {
        const identity = issuerIdentity(raw);
        issuer = { name: identity.name, privateKey, keyIdentifier: identity.keyIdentifier };
      }
      return issuer;
    },
    source,
  };
}

/** ENOENT, EACCES…: a file-system failure rather than content that does not parse. */
function fileErrorCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/** Only the first certificate of a file, in canonical PEM. */
function pemOf(x509: X509Certificate): string {
  return x509.toString().trim() + '\n';
}

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
