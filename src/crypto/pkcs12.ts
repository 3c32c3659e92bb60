// A PKCS#12 truststore (RFC 7292) that Java reads as trusted certificates: one unencrypted SafeContents
// of certificate bags, each with a friendlyName (the alias) and Oracle's trustedKeyUsage attribute,
// under an HMAC-SHA-256 integrity MAC keyed from the password. The ASN.1 types come from
// @peculiar/asn1-pfx, on the same ASN.1 schema library as the certificates (x509.ts); only the
// PKCS#12 key derivation for the MAC (RFC 7292 Appendix B) is written here, because no maintained
// package exports it on its own. Written by `dpg ca bundle` (src/capture/ca-bundle.ts).

import { createHash, createHmac, randomBytes } from 'node:crypto';
import { ContentInfo, id_data } from '@peculiar/asn1-cms';
import { AuthenticatedSafe, CertBag, MacData, PFX, PKCS12Attribute, SafeBag, SafeContents, id_certBag, id_x509Certificate } from '@peculiar/asn1-pfx';
import { DigestInfo } from '@peculiar/asn1-rsa';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { BmpString, ObjectIdentifier } from 'asn1js';

/** PKCS#9 friendlyName: Java's alias of the entry. */
const ID_FRIENDLY_NAME = '1.2.840.113549.1.9.20';
/**
 * Oracle's trustedKeyUsage (2.16.840.1.113894.746875.1.1): without it Java's PKCS12 keystore does
 * not load a certificate bag as a trusted certificate entry, and the truststore trusts nothing.
 */
export const ID_JAVA_TRUSTED_KEY_USAGE = '2.16.840.1.113894.746875.1.1';
/** anyExtendedKeyUsage: trusted for every purpose, what keytool -importcert writes. */
const ID_ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';
const ID_SHA256 = '2.16.840.1.101.3.4.2.1';
const MAC_ITERATIONS = 10_000;

export interface TrustedCertificate {
  /** Unique within the store, lower case (Java lower-cases PKCS#12 aliases). */
  readonly alias: string;
  /** The certificate, DER. */
  readonly der: Uint8Array;
}

/** The DER of a PKCS#12 file holding `certificates` as trusted entries, protected by `password`. */
export function encodeTruststore(certificates: readonly TrustedCertificate[], password: string): Buffer {
  const aliases = new Set<string>();
  const bags = certificates.map((c) => {
    const alias = c.alias.toLowerCase();
    if (aliases.has(alias)) throw new Error(`truststore alias ${alias} is used twice`);
    aliases.add(alias);
    return new SafeBag({
      bagId: id_certBag,
      bagValue: AsnConvert.serialize(new CertBag({ certId: id_x509Certificate, certValue: AsnConvert.serialize(new OctetString(c.der)) })),
      bagAttributes: [
        attribute(ID_FRIENDLY_NAME, new BmpString({ value: alias }).toBER()),
        attribute(ID_JAVA_TRUSTED_KEY_USAGE, new ObjectIdentifier({ value: ID_ANY_EXTENDED_KEY_USAGE }).toBER()),
      ],
    });
  });
  const safeContents = AsnConvert.serialize(new SafeContents(bags));
  const authenticatedSafe = Buffer.from(
    AsnConvert.serialize(new AuthenticatedSafe([new ContentInfo({ contentType: id_data, content: AsnConvert.serialize(new OctetString(safeContents)) })])),
  );

  const salt = randomBytes(16);
  const macKey = pkcs12Kdf('sha256', password, salt, 3, MAC_ITERATIONS, 32);
  const mac = createHmac('sha256', macKey).update(authenticatedSafe).digest();
  const pfx = new PFX({
    version: 3,
    authSafe: new ContentInfo({ contentType: id_data, content: AsnConvert.serialize(new OctetString(authenticatedSafe)) }),
    macData: new MacData({
      mac: new DigestInfo({ digestAlgorithm: new AlgorithmIdentifier({ algorithm: ID_SHA256, parameters: null }), digest: new OctetString(mac) }),
      macSalt: new OctetString(salt),
      iterations: MAC_ITERATIONS,
    }),
  });
  return Buffer.from(AsnConvert.serialize(pfx));
}

/**
 * One bag attribute. Set after construction: PKCS12Attribute's constructor (asn1-pfx 2.11.1) drops
 * its parameters (`Object.assign(params)`), which would encode an empty OID and an empty set.
 */
function attribute(attrId: string, value: ArrayBuffer): PKCS12Attribute {
  const a = new PKCS12Attribute();
  a.attrId = attrId;
  a.attrValues = [value];
  return a;
}

/**
 * The PKCS#12 key derivation (RFC 7292 Appendix B.2). `id` 1 = key, 2 = IV, 3 = MAC key. The
 * password is its BMPString encoding (UTF-16BE) with a two-byte NUL terminator.
 */
export function pkcs12Kdf(hash: 'sha256', password: string, salt: Uint8Array, id: 1 | 2 | 3, iterations: number, length: number): Buffer {
  const u = 32; // SHA-256 output
  const v = 64; // SHA-256 block
  const pass = Buffer.alloc((password.length + 1) * 2);
  for (let i = 0; i < password.length; i++) pass.writeUInt16BE(password.charCodeAt(i), i * 2);
  const fill = (src: Uint8Array): Buffer => {
    const out = Buffer.alloc(src.length === 0 ? 0 : v * Math.ceil(src.length / v));
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length];
    return out;
  };
  const D = Buffer.alloc(v, id);
  const I = Buffer.concat([fill(salt), fill(pass)]);
  const blocks: Buffer[] = [];
  for (let produced = 0; produced < length; produced += u) {
    let A = createHash(hash).update(D).update(I).digest();
    for (let r = 1; r < iterations; r++) A = createHash(hash).update(A).digest();
    blocks.push(A);
    const B = fill(A);
    // I_j = (I_j + B + 1) mod 2^(8v), for each v-byte block of I.
    for (let j = 0; j < I.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const sum = I[j + k] + B[k] + carry;
        I[j + k] = sum & 0xff;
        carry = sum >> 8;
      }
    }
  }
  return Buffer.concat(blocks).subarray(0, length);
}
