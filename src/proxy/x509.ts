// A minimal X.509 v3 certificate writer for the proxy's CA and the leaf certificates it mints.
// Hand-written on purpose: node:crypto signs and verifies but cannot build certificates, and no
// maintained dependency for it is in reach (node-forge is not installed; we add no packages), so
// this encodes exactly the fields TLS clients need and nothing else (RFC 5280).

import { createHash, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  boolean,
  children,
  explicit,
  implicitPrimitive,
  namedBits,
  nullValue,
  octetString,
  oid,
  readElement,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
  type Der,
} from './der.ts';

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** Who signs: the issuer's encoded Name, its private key and (when known) its key identifier. */
export interface Issuer {
  readonly name: Der;
  readonly privateKey: KeyObject;
  readonly keyIdentifier?: Uint8Array;
}

export interface CertificateRequest {
  readonly subject: Der;
  readonly publicKey: KeyObject;
  /** Omitted: self-signed with `selfSigningKey`. */
  readonly issuer?: Issuer;
  readonly selfSigningKey?: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isCa: boolean;
  /** DNS names and IP addresses (v4 or v6) for subjectAltName; leaves only. */
  readonly altNames?: readonly string[];
  /** Positive serial; random 128 bits by default is the caller's job (see randomSerial). */
  readonly serial: Uint8Array;
}

export interface Certificate {
  readonly der: Uint8Array;
  readonly pem: string;
}

/** An X.501 Name of a common name and an optional organisation. CN is capped at 64 characters (ub-common-name). */
export function encodeName(commonName: string, organization?: string): Der {
  const rdn = (type: string, value: string): Der => set(sequence(oid(type), utf8String(value)));
  const rdns: Der[] = [];
  if (organization !== undefined) rdns.push(rdn(OID.organization, organization));
  rdns.push(rdn(OID.commonName, commonName.slice(0, 64)));
  return sequence(...rdns);
}

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(publicKey: KeyObject): Uint8Array {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const bits = children(readElement(spki).content)[1];
  return createHash('sha1').update(bits.content.subarray(1)).digest();
}

/** The signature AlgorithmIdentifier and digest that fit the signing key. */
function signatureAlgorithm(key: KeyObject): { algorithm: Der; digest: string | null } {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'secp384r1') return { algorithm: sequence(oid('1.2.840.10045.4.3.3')), digest: 'sha384' };
      if (curve === 'secp521r1') return { algorithm: sequence(oid('1.2.840.10045.4.3.4')), digest: 'sha512' };
      return { algorithm: sequence(oid('1.2.840.10045.4.3.2')), digest: 'sha256' };
    }
    case 'rsa':
      return { algorithm: sequence(oid('1.2.840.113549.1.1.11'), nullValue()), digest: 'sha256' };
    case 'ed25519':
      return { algorithm: sequence(oid('1.3.101.112')), digest: null };
    default:
      throw new Error(`Unsupported CA key type ${String(key.asymmetricKeyType)} (use EC, RSA or Ed25519)`);
  }
}

function extension(id: string, critical: boolean, value: Der): Der {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

function generalName(name: string): Der {
  const kind = isIP(name);
  if (kind === 4) return implicitPrimitive(7, Uint8Array.from(name.split('.').map(Number)));
  if (kind === 6) return implicitPrimitive(7, ipv6Bytes(name));
  return implicitPrimitive(2, new TextEncoder().encode(name));
}

/** 16 bytes of an IPv6 address (with `::` compression and a trailing dotted IPv4 part). */
export function ipv6Bytes(address: string): Uint8Array {
  let text = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1].split('.').map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}

/** Builds and signs one certificate. */
export function createCertificate(req: CertificateRequest): Certificate {
  const signingKey = req.issuer?.privateKey ?? req.selfSigningKey;
  if (signingKey === undefined) throw new Error('createCertificate needs an issuer or a self-signing key');
  const { algorithm, digest } = signatureAlgorithm(signingKey);
  const subjectKeyId = keyIdentifier(req.publicKey);
  const authorityKeyId = req.issuer ? req.issuer.keyIdentifier : subjectKeyId;

  const extensions: Der[] = [
    extension(OID.basicConstraints, true, req.isCa ? sequence(boolean(true), smallInteger(0)) : sequence()),
    // CA: keyCertSign (5) + cRLSign (6) + digitalSignature (0); leaf: digitalSignature only (EC keys).
    extension(OID.keyUsage, true, namedBits(req.isCa ? [0, 5, 6] : [0])),
    extension(OID.subjectKeyIdentifier, false, octetString(subjectKeyId)),
  ];
  if (authorityKeyId !== undefined) {
    extensions.push(extension(OID.authorityKeyIdentifier, false, sequence(implicitPrimitive(0, authorityKeyId))));
  }
  if (!req.isCa) extensions.push(extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))));
  if (req.altNames && req.altNames.length > 0) {
    extensions.push(extension(OID.subjectAltName, false, sequence(...req.altNames.map(generalName))));
  }

  const spki = req.publicKey.export({ type: 'spki', format: 'der' });
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    unsignedInteger(req.serial),
    algorithm,
    req.issuer?.name ?? req.subject,
    sequence(time(req.notBefore), time(req.notAfter)),
    req.subject,
    new Uint8Array(spki.buffer, spki.byteOffset, spki.byteLength),
    explicit(3, sequence(...extensions)),
  );
  const signature = sign(digest, tbs, signingKey); // ECDSA: DER-encoded (r, s), as X.509 wants
  const der = sequence(tbs, algorithm, bitString(signature));
  return { der, pem: toPem(der, 'CERTIFICATE') };
}

export function toPem(der: Uint8Array, label: string): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** What a leaf needs from an existing CA certificate: its subject Name (as issuer) and key identifier. */
export function issuerIdentity(certificateDer: Uint8Array): { name: Der; keyIdentifier?: Uint8Array; publicKey: KeyObject } {
  const tbs = children(readElement(certificateDer).content)[0];
  const fields = children(tbs.content);
  const at = fields[0].tag === 0xa0 ? 1 : 0; // skip the explicit version
  const name = fields[at + 4].whole;
  const spki = fields[at + 5].whole;
  const publicKey = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
  let keyId: Uint8Array | undefined;
  const extensionsField = fields.find((f) => f.tag === 0xa3);
  if (extensionsField) {
    const skiOid = oid(OID.subjectKeyIdentifier);
    for (const ext of children(readElement(extensionsField.content).content)) {
      const parts = children(ext.content);
      if (Buffer.from(parts[0].whole).equals(skiOid)) {
        keyId = readElement(parts[parts.length - 1].content).content;
      }
    }
  }
  // A CA without a subjectKeyIdentifier gets no authorityKeyIdentifier in its leaves (a wrong one breaks chains).
  return { name, keyIdentifier: keyId, publicKey };
}
