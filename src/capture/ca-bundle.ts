// `dpg ca bundle`: the trust files an app needs once its HTTPS is intercepted. ca.crt is the gateway
// CA alone (for variables that add to the roots: NODE_EXTRA_CA_CERTS); bundle.pem and the Java
// truststore hold the roots too, because their variables replace the roots (SSL_CERT_FILE,
// REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, javax.net.ssl.trustStore) and unrouted HTTPS is spliced
// untouched: the app still verifies those upstreams itself.

import { X509Certificate } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import type { GatewayConfig } from '../config/types.ts';
import { CA_CERT_FILE, CA_KEY_FILE, loadOrCreateCa } from '../crypto/gateway-ca.ts';
import { encodeTruststore, type TrustedCertificate } from '../crypto/pkcs12.ts';

export const TRUSTSTORE_PASSWORD = 'changeit';
export const CA_ALIAS = 'dpg-gateway-ca';

/** Where distributions keep their PEM bundle of trusted roots (Debian/Ubuntu, RHEL/Fedora, Alpine/macOS). */
export const SYSTEM_ROOT_FILES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

export interface RootSource {
  readonly label: string;
  readonly pem: string;
}

export interface BundleInput {
  /** The gateway CA certificate (PEM). */
  readonly caPem: string;
  /** Every other root to trust, in order; duplicates (same certificate) are kept once. */
  readonly roots: readonly RootSource[];
}

export interface BundleFiles {
  readonly caCrt: string;
  readonly bundlePem: string;
  readonly truststore: Buffer;
  /** Certificates in bundle.pem and the truststore, the gateway CA included. */
  readonly count: number;
  /** PEM blocks that did not parse as certificates (skipped), per source label. */
  readonly skipped: Readonly<Record<string, number>>;
}

/**
 * The system roots: SSL_CERT_FILE when set (OpenSSL's own convention for "the trust file"), else the
 * distribution's bundle if there is one, plus Node's built-in Mozilla roots, so the bundle is never
 * empty in a minimal image.
 */
export function systemRoots(env: NodeJS.ProcessEnv = process.env): RootSource[] {
  const sources: RootSource[] = [];
  const file = env.SSL_CERT_FILE || SYSTEM_ROOT_FILES.find((f) => existsSync(f));
  if (file) {
    try {
      sources.push({ label: file, pem: readFileSync(file, 'utf8') });
    } catch (err) {
      throw new Error(`the system roots file ${file} could not be read`, { cause: err });
    }
  }
  sources.push({ label: 'node built-in roots', pem: rootCertificates.join('\n') });
  return sources;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Builds the three files in memory; nothing is written. */
export function buildBundle(input: BundleInput): BundleFiles {
  const ca = new X509Certificate(input.caPem);
  const seen = new Set<string>([ca.fingerprint256]);
  const pems: string[] = [];
  const entries: TrustedCertificate[] = [];
  const skipped: Record<string, number> = {};
  for (const source of input.roots) {
    for (const block of source.pem.match(PEM_BLOCK) ?? []) {
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(block);
      } catch {
        skipped[source.label] = (skipped[source.label] ?? 0) + 1;
        continue;
      }
      if (seen.has(cert.fingerprint256)) continue;
      seen.add(cert.fingerprint256);
      pems.push(canonicalPem(cert));
      entries.push({ alias: `root-${cert.fingerprint256.replace(/:/g, '').slice(0, 16).toLowerCase()}`, der: cert.raw });
    }
  }
  const caPem = canonicalPem(ca);
  entries.push({ alias: CA_ALIAS, der: ca.raw });
  return {
    caCrt: caPem,
    bundlePem: [...pems, caPem].join(''),
    truststore: encodeTruststore(entries, TRUSTSTORE_PASSWORD),
    count: entries.length,
    skipped,
  };
}

function canonicalPem(cert: X509Certificate): string {
  return cert.toString().trim() + '\n';
}

export const BUNDLE_FILE_NAMES = { caCrt: 'ca.crt', bundlePem: 'bundle.pem', truststore: 'truststore.p12' } as const;

/**
 * Writes ca.crt, bundle.pem and truststore.p12 into `dir` (created if needed), each through a
 * temporary file and a rename, readable by every UID: apps run as other users than the gateway.
 */
export function writeBundle(dir: string, files: BundleFiles): string[] {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const written: string[] = [];
  const put = (name: string, data: string | Buffer): void => {
    const path = join(dir, name);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, data, { mode: 0o644 });
    chmodSync(tmp, 0o644); // the umask must not take the read bit away from other users
    renameSync(tmp, path);
    written.push(path);
  };
  put(BUNDLE_FILE_NAMES.caCrt, files.caCrt);
  put(BUNDLE_FILE_NAMES.bundlePem, files.bundlePem);
  put(BUNDLE_FILE_NAMES.truststore, files.truststore);
  return written;
}

export interface BundleResult {
  readonly files: string[];
  readonly caSource: string;
  readonly count: number;
  readonly skipped: Readonly<Record<string, number>>;
}

/**
 * The bundle for a gateway config: its CA (proxy.ca, else the one under DPG_DATA_DIR, generated
 * there now if there is none yet: the same call `dpg serve` makes), the system roots and the
 * config's proxy.upstreamCa (private upstream roots the app needs as much as the gateway does).
 * `owner`: a CA generated now (as root, in an init container) is given to the gateway's user, or
 * the gateway could not read its own key.
 */
export function writeCaBundleFor(config: GatewayConfig, dir: string, owner?: { uid: number; gid: number }): BundleResult {
  const ca = loadOrCreateCa(config.proxy.ca, config.dataDir);
  if (ca.source === 'generated' && owner !== undefined) {
    for (const path of [config.dataDir, join(config.dataDir, CA_CERT_FILE), join(config.dataDir, CA_KEY_FILE)]) chownSync(path, owner.uid, owner.gid);
  }
  const roots = systemRoots();
  if (config.proxy.upstreamCa) roots.push({ label: config.proxy.upstreamCa, pem: readFileSync(config.proxy.upstreamCa, 'utf8') });
  const bundle = buildBundle({ caPem: ca.certPem, roots });
  const caSource = ca.source === 'config' ? `proxy.ca (${config.proxy.ca?.cert})` : `${join(config.dataDir, CA_CERT_FILE)}${ca.source === 'generated' ? ' (generated now)' : ''}`;
  return { files: writeBundle(dir, bundle), caSource, count: bundle.count, skipped: bundle.skipped };
}
