// Certificates for the webhook when cert-manager is not used: a small CA of its own and a serving
// certificate for the Service's DNS names, each renewed before it expires. A new CA is published
// next to the old one (caBundle holds both) until the old one has expired, so the API server trusts
// the webhook throughout a rotation. Key material never appears in messages. The certificates are
// built by the project's one X.509 module (src/crypto/x509.ts), synchronously.

import { X509Certificate as NodeX509, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { createCertificate, encodeName, issuerIdentity, randomSerial } from '../crypto/x509.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;

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

/** A fresh ECDSA P-256 key pair, the private half as PKCS#8 PEM (what the Secrets and files hold). */
function newKeyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { publicKey, privateKey, pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

function newCa(now: number, days: number): { cert: string; key: string } {
  const keys = newKeyPair();
  const cert = createCertificate({
    subject: encodeName(`dpg-injector-ca-${new Date(now).toISOString().slice(0, 10)}`, 'Data Protection Gateway'),
    publicKey: keys.publicKey,
    selfSigningKey: keys.privateKey,
    notBefore: new Date(now - HOUR),
    notAfter: new Date(now + days * DAY),
    isCa: true,
    serial: randomSerial(),
  });
  return { cert: cert.pem, key: keys.pem };
}

function newServing(caCert: string, caKey: string, params: CertParams, now: number, days: number): { cert: string; key: string } {
  const ca = issuerIdentity(new Uint8Array(new NodeX509(caCert).raw));
  const keys = newKeyPair();
  const names = dnsNames(params.service, params.namespace);
  const cert = createCertificate({
    subject: encodeName(names[2]),
    publicKey: keys.publicKey,
    issuer: { name: ca.name, privateKey: createPrivateKey(caKey), keyIdentifier: ca.keyIdentifier },
    notBefore: new Date(now - HOUR),
    notAfter: new Date(now + days * DAY),
    isCa: false,
    altNames: names,
    serial: randomSerial(),
  });
  return { cert: cert.pem, key: keys.pem };
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
export function planCertificates(existing: CertMaterial | undefined, params: CertParams, now = Date.now()): CertPlan {
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
    const ca = newCa(now, caDays);
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
    const issued = newServing(cas[0].pem, caKey, params, now, servingDays);
    tlsCert = issued.cert;
    tlsKey = issued.key;
  }
  const caBundle = `${cas.map((c) => c.pem.trim()).join('\n')}\n`;
  return { material: { caBundle, caKey, tlsCert, tlsKey }, renewedCa, renewedServing, reasons };
}
