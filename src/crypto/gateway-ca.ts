// The gateway CA for intercepted TLS: loaded from the configured PEM files, or generated once under
// the data directory. One CA for everything that uses it: the proxy mints its leaves from it
// (src/proxy/forwarding/ca.ts) and `dpg ca bundle` hands it to apps (src/capture/ca-bundle.ts), so both
// find the same one given the same config and DPG_DATA_DIR.

import { generateKeyPairSync, type X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../core/errors.ts';
import { createCertificate, encodeName, issuerIdentity, PemPairError, randomSerial, readPemPair, type Issuer, type PemPair } from './x509.ts';

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

/**
 * Loads the configured CA, else the one generated earlier under dataDir, else generates one
 * (ECDSA P-256, ten years) and writes it there with the key file at mode 0600.
 */
/** True when loadOrCreateCa would make a new CA (none configured, none in the data directory): it needs loadX509() first. */
export function caToCreate(files: { readonly cert: string; readonly key: string } | undefined, dataDir: string): boolean {
  return files === undefined && !(existsSync(join(dataDir, CA_CERT_FILE)) && existsSync(join(dataDir, CA_KEY_FILE)));
}

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
  // Each file whole or not at all, the certificate last: a start that fails half-way (a full disk)
  // leaves no torn pair, and the next start generates the CA again.
  writeWhole(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 0o600);
  writeWhole(certFile, cert.pem, 0o644);
  return { certPem: cert.pem, issuer: { name: subject, privateKey, keyIdentifier: issuerIdentity(cert.der).keyIdentifier }, source: 'generated' };
}

/** Writes `file` through a temporary beside it and a rename; on failure the temporary is removed. */
function writeWhole(file: string, data: string, mode: number): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, data, { mode });
    renameSync(temporary, file);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw err;
  }
}

function loadCa(certFile: string, keyFile: string, source: GatewayCa['source']): GatewayCa {
  let pair: PemPair;
  try {
    pair = readPemPair(certFile, keyFile);
  } catch (err) {
    if (!(err instanceof PemPairError)) throw err;
    const code = err.code ? ` (${err.code})` : '';
    // The key file's content never goes into the message.
    if (err.part === 'certificate') throw new StartupError(`Proxy CA certificate ${certFile} could not be read${code || ' as a PEM certificate'}`, { cause: err });
    if (err.part === 'key') throw new StartupError(`Proxy CA key ${keyFile} could not be read${code || ' as a PEM private key'}`, { cause: err });
    throw new StartupError(`Proxy CA key ${keyFile} does not belong to ${certFile}`);
  }
  const { certificate: x509, privateKey } = pair;
  if (!x509.ca) throw new StartupError(`Proxy CA certificate ${certFile} is not a CA certificate (basicConstraints CA:TRUE)`);
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

/** Only the first certificate of a file, in canonical PEM. */
function pemOf(x509: X509Certificate): string {
  return x509.toString().trim() + '\n';
}
