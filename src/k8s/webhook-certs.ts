// Certificates for the webhook when cert-manager is not used: a small CA of its own and a serving
// certificate for the Service's DNS names, each renewed before it expires. A new CA is published
// next to the old one (caBundle holds both) until the old one has expired, so the API server trusts
// the webhook throughout a rotation. Key material never appears in messages.

import 'reflect-metadata';
import { X509Certificate as NodeX509, createPrivateKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type Key = webcrypto.CryptoKey;
type KeyPair = webcrypto.CryptoKeyPair;

const DAY = 86_400_000;
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface CertParams {
  /** Service name and namespace of the webhook: the certificate names `<service>.<namespace>.svc`. */
  readonly service: string;
  readonly namespace: string;
  /** Validity of a serving certificate. Default 365 days. */
  readonly servingDays?: number;
  /** Renew a serving certificate this long before it expires. Default 30 days. */
  readonly renewBeforeDays?: number;
  /** Validity of the CA. Default 5 years; a new CA is made when the old one has less than 2 serving periods left. */
  readonly caDays?: number;
}

/** What is stored: the CA bundle (current CA first, then older still-valid ones), the CA key, the serving pair. */
export interface CertMaterial {
  readonly caBundle: string;
  readonly caKey: string;
  readonly tlsCert: string;
  readonly tlsKey: string;
}

export interface CertPlan {
  readonly material: CertMaterial;
  readonly renewedCa: boolean;
  readonly renewedServing: boolean;
  /** Why, for the log: "no certificates yet", "serving certificate expires 2026-…", … */
  readonly reasons: readonly string[];
}

export function dnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

async function pkcs8Pem(key: Key): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

async function importKey(pem: string): Promise<Key> {
  const der = Buffer.from(pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
}

function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return Buffer.from(bytes).toString('hex');
}

async function newCa(now: number, days: number): Promise<{ cert: string; key: string }> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as KeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=dpg-injector-ca-${new Date(now).toISOString().slice(0, 10)}, O=Data Protection Gateway`,
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + days * DAY),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await pkcs8Pem(keys.privateKey) };
}

async function newServing(caCert: string, caKey: string, params: CertParams, now: number, days: number): Promise<{ cert: string; key: string }> {
  const ca = new x509.X509Certificate(caCert);
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as KeyPair;
  const names = dnsNames(params.service, params.namespace);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${names[2]}`,
    issuer: ca.subject,
    notBefore: new Date(now - 3_600_000),
    notAfter: new Date(now + days * DAY),
    publicKey: keys.publicKey,
    signingKey: await importKey(caKey),
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value }))),
      await x509.AuthorityKeyIdentifierExtension.create(ca, false),
    ],
  });
  return { cert: cert.toString('pem'), key: await pkcs8Pem(keys.privateKey) };
}

function readable(text: string): NodeX509 | undefined {
  try {
    return new NodeX509(text);
  } catch {
    return undefined;
  }
}

/**
 * Decides what to (re)issue from what is stored (undefined: nothing yet) at `now`, and issues it.
 * The result is what to store and publish; when nothing needed renewing it is the input unchanged.
 */
export async function planCertificates(existing: CertMaterial | undefined, params: CertParams, now = Date.now()): Promise<CertPlan> {
  const servingDays = params.servingDays ?? 365;
  const renewBefore = (params.renewBeforeDays ?? 30) * DAY;
  const caDays = params.caDays ?? 5 * 365;
  const reasons: string[] = [];

  let cas = (existing ? pemBlocks(existing.caBundle) : []).map((pem) => ({ pem, x: readable(pem) }));
  let caKey = existing?.caKey ?? '';
  let current = cas[0]?.x;
  let renewedCa = false;
  const keyMatches = (() => {
    try {
      return current !== undefined && current.checkPrivateKey(createPrivateKey(caKey));
    } catch {
      return false;
    }
  })();
  if (!existing) reasons.push('no certificates yet');
  else if (!current || !keyMatches) reasons.push('the stored CA is unreadable or does not match its key');
  else if (Date.parse(current.validTo) - now < 2 * servingDays * DAY) reasons.push(`the CA expires ${new Date(current.validTo).toISOString()}`);
  if (reasons.length > 0) {
    const ca = await newCa(now, caDays);
    // Older CAs stay trusted while they are valid: serving certificates they signed still work.
    const keep = existing && current && keyMatches ? cas.filter((c) => c.x && Date.parse(c.x.validTo) > now) : [];
    cas = [{ pem: ca.cert.trim(), x: readable(ca.cert) }, ...keep];
    caKey = ca.key;
    current = cas[0].x;
    renewedCa = true;
  } else {
    cas = cas.filter((c) => c.x && Date.parse(c.x.validTo) > now);
  }

  const serving = existing && !renewedCa ? readable(existing.tlsCert) : undefined;
  const wanted = dnsNames(params.service, params.namespace);
  let renewedServing = renewedCa;
  if (!renewedCa) {
    if (!serving) reasons.push('no readable serving certificate');
    else if (Date.parse(serving.validTo) - now < renewBefore) reasons.push(`the serving certificate expires ${new Date(serving.validTo).toISOString()}`);
    else if (!serving.checkIssued(current!)) reasons.push('the serving certificate is not signed by the current CA');
    else if (!wanted.every((n) => serving.checkHost(n, { wildcards: false }) === n)) reasons.push('the serving certificate does not name the service');
    renewedServing = reasons.length > 0;
  }
  let tlsCert = existing?.tlsCert ?? '';
  let tlsKey = existing?.tlsKey ?? '';
  if (renewedServing) {
    const issued = await newServing(cas[0].pem, caKey, params, now, servingDays);
    tlsCert = issued.cert;
    tlsKey = issued.key;
  }
  const caBundle = `${cas.map((c) => c.pem.trim()).join('\n')}\n`;
  return { material: { caBundle, caKey, tlsCert, tlsKey }, renewedCa, renewedServing, reasons };
}
