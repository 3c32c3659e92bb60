// X.509 v3 certificates (RFC 5280), the one place the project builds them: the gateway CA and the
// leaves the proxy mints per host (src/crypto/gateway-ca.ts, src/proxy/forwarding/ca.ts), the admission
// webhook's CA and serving certificate (src/k8s/webhook-certs.ts), and the certificates test
// servers use. The ASN.1 structures come from @peculiar/asn1-x509 (the schema layer of
// @peculiar/x509, made for exactly this); node:crypto signs them. Why not @peculiar/x509 itself:
// it signs through WebCrypto, which is asynchronous, and minting must stay synchronous inside TLS
// set-up; it also costs ~27 MB RSS and ~130 ms to load (with reflect-metadata) against ~6 MB and
// ~40 ms for the schema layer (docs/performance.md). The PKCS#12 truststore of `dpg ca bundle` is
// written on the same ASN.1 library beside this module (pkcs12.ts).
//
// The library is loaded apart (asn1-libs.ts, a chunk of its own in the build): `await loadX509()`
// before the first certificate is built or its names read. A proxy that never mints a certificate
// (no routes to intercept, CA already on disk) never loads it: ~30 ms less start and less memory.

import { X509Certificate, createHash, createPrivateKey, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type * as Asn1X509 from '@peculiar/asn1-x509';
import type * as Asn1Schema from '@peculiar/asn1-schema';

/** DER bytes. */
export type Der = Uint8Array;

interface Asn1 {
  readonly x509: typeof Asn1X509;
  readonly schema: typeof Asn1Schema;
}

let asn1: Asn1 | undefined;
let loading: Promise<void> | undefined;

/** Loads the ASN.1 libraries once; every later call resolves at once. */
export function loadX509(): Promise<void> {
  loading ??= import('./asn1-libs.ts').then((m) => {
    asn1 = { x509: m.x509 as unknown as typeof Asn1X509, schema: m.schema as unknown as typeof Asn1Schema };
  });
  return loading;
}

/** Whether loadX509() has finished: certificates can be built synchronously. */
export function x509Loaded(): boolean {
  return asn1 !== undefined;
}

/**
 * The ASN.1 libraries, synchronously. Run from the sources (tests) they are required on the spot;
 * in the build they must have been loaded (loadX509): otherwise this throws, and starts loading them
 * so the next attempt passes (a certificate that cannot be built fails its handshake: fail closed).
 */
function load(): Asn1 {
  if (asn1) return asn1;
  if (import.meta.url.endsWith('.ts')) {
    const fromHere = createRequire(import.meta.url);
    asn1 = { x509: fromHere('@peculiar/asn1-x509') as typeof Asn1X509, schema: fromHere('@peculiar/asn1-schema') as typeof Asn1Schema };
    return asn1;
  }
  void loadX509().catch(() => undefined);
  throw new Error('The certificate library is not loaded yet (loadX509); retry');
}

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
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  ecdsaWithSha384: '1.2.840.10045.4.3.3',
  ecdsaWithSha512: '1.2.840.10045.4.3.4',
  sha256WithRsa: '1.2.840.113549.1.1.11',
  ed25519: '1.3.101.112',
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
  /** Positive serial: randomSerial() unless the caller has a reason. */
  readonly serial: Uint8Array;
}

/** 128 random bits with the top bit cleared: positive and unique (RFC 5280 §4.1.2.2). */
export function randomSerial(): Uint8Array {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01; // never a leading zero byte, never zero
  return bytes;
}

export interface Certificate {
  readonly der: Uint8Array;
  readonly pem: string;
}

const bytes = (buffer: ArrayBuffer): Uint8Array => new Uint8Array(buffer);
const arrayBuffer = (u8: Uint8Array): ArrayBuffer => u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength) as ArrayBuffer;

/** An X.501 Name of a common name and an optional organisation. CN is capped at 64 characters (ub-common-name). */
export function encodeName(commonName: string, organization?: string): Der {
  const { x509, schema } = load();
  const rdn = (type: string, value: string) =>
    new x509.RelativeDistinguishedName([new x509.AttributeTypeAndValue({ type, value: new x509.AttributeValue({ utf8String: value }) })]);
  const rdns = [];
  if (organization !== undefined) rdns.push(rdn(OID.organization, organization));
  rdns.push(rdn(OID.commonName, commonName.slice(0, 64)));
  return bytes(schema.AsnConvert.serialize(new x509.Name(rdns)));
}

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(publicKey: KeyObject): Uint8Array {
  const { x509, schema } = load();
  const spki = schema.AsnConvert.parse(publicKey.export({ type: 'spki', format: 'der' }), x509.SubjectPublicKeyInfo);
  return createHash('sha1').update(bytes(spki.subjectPublicKey)).digest();
}

/** The signature algorithm OID (and its NULL parameters for RSA) and digest that fit the signing key. */
function signatureAlgorithm(key: KeyObject): { oid: string; rsa: boolean; digest: string | null } {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'secp384r1') return { oid: OID.ecdsaWithSha384, rsa: false, digest: 'sha384' };
      if (curve === 'secp521r1') return { oid: OID.ecdsaWithSha512, rsa: false, digest: 'sha512' };
      return { oid: OID.ecdsaWithSha256, rsa: false, digest: 'sha256' };
    }
    case 'rsa':
      return { oid: OID.sha256WithRsa, rsa: true, digest: 'sha256' };
    case 'ed25519':
      return { oid: OID.ed25519, rsa: false, digest: null };
    default:
      throw new Error(`Unsupported CA key type ${String(key.asymmetricKeyType)} (use EC, RSA or Ed25519)`);
  }
}

/** IPv6 text with a trailing dotted IPv4 part (`::ffff:192.0.2.1`) in all-hex groups, as the encoder wants. */
function hexGroupsOnly(address: string): string {
  const text = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text); // bounded: linear on any input
  if (!v4 || !text.includes(':')) return text;
  const [a, b, c, d] = v4.slice(1).map(Number);
  return `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** Builds and signs one certificate. */
export function createCertificate(req: CertificateRequest): Certificate {
  const { x509, schema } = load();
  const signingKey = req.issuer?.privateKey ?? req.selfSigningKey;
  if (signingKey === undefined) throw new Error('createCertificate needs an issuer or a self-signing key');
  const algorithm = signatureAlgorithm(signingKey);
  const algorithmIdentifier = () =>
    new x509.AlgorithmIdentifier({ algorithm: algorithm.oid, ...(algorithm.rsa ? { parameters: null } : {}) });
  const subjectKeyId = keyIdentifier(req.publicKey);
  const authorityKeyId = req.issuer ? req.issuer.keyIdentifier : subjectKeyId;
  const extension = (extnID: string, critical: boolean, value: object) =>
    new x509.Extension({ extnID, critical, extnValue: new schema.OctetString(schema.AsnConvert.serialize(value)) });

  const extensions = [
    extension(OID.basicConstraints, true, req.isCa ? new x509.BasicConstraints({ cA: true, pathLenConstraint: 0 }) : new x509.BasicConstraints()),
    extension(
      OID.keyUsage,
      true,
      new x509.KeyUsage(
        req.isCa
          ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
          : x509.KeyUsageFlags.digitalSignature,
      ),
    ),
    extension(OID.subjectKeyIdentifier, false, new x509.SubjectKeyIdentifier(arrayBuffer(subjectKeyId))),
  ];
  if (authorityKeyId !== undefined) {
    extensions.push(
      extension(OID.authorityKeyIdentifier, false, new x509.AuthorityKeyIdentifier({ keyIdentifier: new x509.KeyIdentifier(arrayBuffer(authorityKeyId)) })),
    );
  }
  if (!req.isCa) extensions.push(extension(OID.extKeyUsage, false, new x509.ExtendedKeyUsage([OID.serverAuth])));
  if (req.altNames && req.altNames.length > 0) {
    const names = req.altNames.map((name) =>
      isIP(name) ? new x509.GeneralName({ iPAddress: hexGroupsOnly(name) }) : new x509.GeneralName({ dNSName: name }),
    );
    extensions.push(extension(OID.subjectAltName, false, new x509.SubjectAlternativeName(names)));
  }

  const tbs = new x509.TBSCertificate({
    version: x509.Version.v3,
    serialNumber: arrayBuffer(req.serial),
    signature: algorithmIdentifier(),
    issuer: schema.AsnConvert.parse(req.issuer?.name ?? req.subject, x509.Name),
    validity: new x509.Validity({ notBefore: req.notBefore, notAfter: req.notAfter }),
    subject: schema.AsnConvert.parse(req.subject, x509.Name),
    subjectPublicKeyInfo: schema.AsnConvert.parse(req.publicKey.export({ type: 'spki', format: 'der' }), x509.SubjectPublicKeyInfo),
    extensions: new x509.Extensions(extensions),
  });
  const tbsDer = bytes(schema.AsnConvert.serialize(tbs));
  const signature = sign(algorithm.digest, tbsDer, signingKey); // ECDSA: DER-encoded (r, s), as X.509 wants
  const certificate = new x509.Certificate({ tbsCertificate: tbs, signatureAlgorithm: algorithmIdentifier(), signatureValue: arrayBuffer(signature) });
  const der = bytes(schema.AsnConvert.serialize(certificate));
  return { der, pem: toPem(der, 'CERTIFICATE') };
}

export function toPem(der: Uint8Array, label: string): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** What a leaf needs from an existing CA certificate: its subject Name (as issuer) and key identifier. */
export function issuerIdentity(certificateDer: Uint8Array): { name: Der; keyIdentifier?: Uint8Array; publicKey: KeyObject } {
  const { x509, schema } = load();
  const cert = schema.AsnConvert.parse(certificateDer, x509.Certificate);
  const tbs = cert.tbsCertificate;
  const name = bytes(schema.AsnConvert.serialize(tbs.subject));
  const publicKey = createPublicKey({ key: Buffer.from(schema.AsnConvert.serialize(tbs.subjectPublicKeyInfo)), format: 'der', type: 'spki' });
  const ski = tbs.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier);
  // A CA without a subjectKeyIdentifier gets no authorityKeyIdentifier in its leaves (a wrong one breaks chains).
  const keyId = ski ? bytes(schema.AsnConvert.parse(ski.extnValue.buffer, x509.SubjectKeyIdentifier).buffer) : undefined;
  return { name, keyIdentifier: keyId, publicKey };
}

/** A certificate (the first of its file) and its private key, read from PEM files and checked to belong together. */
export interface PemPair {
  readonly certPem: string;
  readonly certificate: X509Certificate;
  readonly keyPem: string;
  readonly privateKey: KeyObject;
}

/** Why a pair cannot be used: which part, and the file-system code when that was the cause. Never the key's content. */
export class PemPairError extends Error {
  constructor(
    readonly part: 'certificate' | 'key' | 'mismatch',
    /** ENOENT, EACCES…; undefined when the file was read but is not what it should be. */
    readonly code: string | undefined,
    options?: ErrorOptions,
  ) {
    super(`${part === 'mismatch' ? 'the key does not belong to the certificate' : `the ${part} could not be read${code ? ` (${code})` : ''}`}`, options);
  }
}

/** Reads a certificate file and a key file (PEM) and checks the key is the certificate's. */
export function readPemPair(certFile: string, keyFile: string): PemPair {
  let certPem: string;
  let certificate: X509Certificate;
  try {
    certPem = readFileSync(certFile, 'utf8');
    certificate = new X509Certificate(certPem);
  } catch (err) {
    throw new PemPairError('certificate', fileErrorCode(err), { cause: err });
  }
  let keyPem: string;
  let privateKey: KeyObject;
  try {
    keyPem = readFileSync(keyFile, 'utf8');
    privateKey = createPrivateKey(keyPem);
  } catch (err) {
    throw new PemPairError('key', fileErrorCode(err), { cause: err });
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new PemPairError('mismatch', undefined);
  return { certPem, certificate, keyPem, privateKey };
}

/** ENOENT, EACCES…: a file-system failure rather than content that does not parse. */
function fileErrorCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && /^E[A-Z]+$/.test(code) ? code : undefined;
}
