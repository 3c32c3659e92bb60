// Keeps the webhook's certificates current where they live: files in a directory (local use), or
// two Secrets and the webhook configurations' caBundle in the cluster (the self-managed overlay's
// Job and CronJob). Order matters during a CA rotation: the CA Secret, then the caBundle (old and
// new CA), then the serving Secret — so the API server trusts the new certificate before it is served.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeApiError, type KubeClient } from './kube-client.ts';
import { loadX509 } from '../crypto/x509.ts';
import { planCertificates, type CertMaterial, type CertParams, type CertPlan } from './webhook-certs.ts';

export const CERT_FILES = { caBundle: 'ca.crt', caKey: 'ca.key', tlsCert: 'tls.crt', tlsKey: 'tls.key' } as const;

function writeAtomic(file: string, text: string, mode: number): void {
  const temporary = `${file}.tmp-${process.pid}`;
  writeFileSync(temporary, text, { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, file);
}

/** Files mode: DIR/ca.crt, ca.key, tls.crt, tls.key (keys 0600). */
export async function syncFiles(dir: string, params: CertParams, now = Date.now()): Promise<CertPlan> {
  const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : undefined);
  const caBundle = read(CERT_FILES.caBundle);
  const caKey = read(CERT_FILES.caKey);
  const existing: CertMaterial | undefined =
    caBundle !== undefined && caKey !== undefined ? { caBundle, caKey, tlsCert: read(CERT_FILES.tlsCert) ?? '', tlsKey: read(CERT_FILES.tlsKey) ?? '' } : undefined;
  await loadX509(); // the certificates are built synchronously
  const plan = planCertificates(existing, params, now);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (plan.renewedCa) {
    writeAtomic(join(dir, CERT_FILES.caKey), plan.material.caKey, 0o600);
  }
  if (plan.renewedCa || plan.material.caBundle !== caBundle) writeAtomic(join(dir, CERT_FILES.caBundle), plan.material.caBundle, 0o644);
  if (plan.renewedServing) {
    // Key first: a reader that sees the new certificate finds its key (the server checks the pair).
    writeAtomic(join(dir, CERT_FILES.tlsKey), plan.material.tlsKey, 0o600);
    writeAtomic(join(dir, CERT_FILES.tlsCert), plan.material.tlsCert, 0o644);
  }
  return plan;
}

export interface KubeTargets {
  readonly namespace: string;
  /** Secret holding the CA (ca.crt, ca.key): read by the certs Job only. */
  readonly caSecret: string;
  /** kubernetes.io/tls Secret the webhook pods mount (tls.crt, tls.key, ca.crt). */
  readonly tlsSecret: string;
  readonly mutatingWebhooks: readonly string[];
  readonly validatingWebhooks: readonly string[];
}

type Secret = { metadata?: { resourceVersion?: string }; data?: Record<string, string> };

const b64 = (text: string) => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined) => (text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8'));

async function getSecret(client: KubeClient, namespace: string, name: string): Promise<Secret | undefined> {
  const r = await client.request('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new KubeApiError(r.status, `reading Secret ${namespace}/${name}`, r.body);
  return r.body as Secret;
}

async function putSecret(client: KubeClient, namespace: string, name: string, type: string, data: Record<string, string>, previous: Secret | undefined): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type,
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/name': 'dpg-injector', 'app.kubernetes.io/managed-by': 'dpg-webhook-certs' },
      ...(previous?.metadata?.resourceVersion ? { resourceVersion: previous.metadata.resourceVersion } : {}),
    },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
  const r = previous
    ? await client.request('PUT', `/api/v1/namespaces/${namespace}/secrets/${name}`, body)
    : await client.request('POST', `/api/v1/namespaces/${namespace}/secrets`, body);
  if (r.status !== 200 && r.status !== 201) throw new KubeApiError(r.status, `writing Secret ${namespace}/${name}`, r.body);
}

async function publishCaBundle(client: KubeClient, kind: 'mutating' | 'validating', name: string, caBundle: string): Promise<boolean> {
  const path = `/apis/admissionregistration.k8s.io/v1/${kind}webhookconfigurations/${name}`;
  const r = await client.request('GET', path);
  if (r.status !== 200) throw new KubeApiError(r.status, `reading ${kind} webhook configuration ${name}`, r.body);
  const config = r.body as { metadata?: { resourceVersion?: string }; webhooks?: { clientConfig?: { caBundle?: string } }[] };
  const wanted = b64(caBundle);
  const webhooks = config.webhooks ?? [];
  if (webhooks.every((w) => w.clientConfig?.caBundle === wanted)) return false;
  // The test on resourceVersion makes a concurrent change fail (409) instead of being overwritten.
  const patch = [
    { op: 'test', path: '/metadata/resourceVersion', value: config.metadata?.resourceVersion },
    ...webhooks.map((_, i) => ({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: wanted })),
  ];
  const p = await client.request('PATCH', path, patch, 'application/json-patch+json');
  // A failed `test` is 422: someone changed the configuration since we read it — a conflict.
  if (p.status === 422) throw new KubeApiError(409, `patching the caBundle of ${kind} webhook configuration ${name} (changed meanwhile)`, p.body);
  if (p.status !== 200) throw new KubeApiError(p.status, `patching the caBundle of ${kind} webhook configuration ${name}`, p.body);
  return true;
}

/** Cluster mode; retried from a fresh read when a concurrent writer wins (HTTP 409). */
export async function syncKube(client: KubeClient, targets: KubeTargets, params: CertParams, now = Date.now()): Promise<CertPlan & { publishedTo: string[] }> {
  // What an interrupted attempt already wrote counts: the retry then finds it current.
  const done = { renewedCa: false, renewedServing: false, reasons: [] as string[], publishedTo: [] as string[] };
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await syncKubeOnce(client, targets, params, now, done);
      return {
        ...r,
        renewedCa: r.renewedCa || done.renewedCa,
        renewedServing: r.renewedServing || done.renewedServing,
        reasons: [...new Set([...done.reasons, ...r.reasons])],
        publishedTo: [...new Set([...done.publishedTo, ...r.publishedTo])],
      };
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409) || attempt >= 3) throw err;
    }
  }
}

interface Progress {
  renewedCa: boolean;
  renewedServing: boolean;
  reasons: string[];
  publishedTo: string[];
}

async function syncKubeOnce(client: KubeClient, t: KubeTargets, params: CertParams, now: number, done: Progress): Promise<CertPlan & { publishedTo: string[] }> {
  const caSecret = await getSecret(client, t.namespace, t.caSecret);
  const tlsSecret = await getSecret(client, t.namespace, t.tlsSecret);
  const caBundle = unb64(caSecret?.data?.['ca.crt']);
  const caKey = unb64(caSecret?.data?.['ca.key']);
  const existing: CertMaterial | undefined =
    caBundle !== undefined && caKey !== undefined
      ? { caBundle, caKey, tlsCert: unb64(tlsSecret?.data?.['tls.crt']) ?? '', tlsKey: unb64(tlsSecret?.data?.['tls.key']) ?? '' }
      : undefined;
  await loadX509(); // the certificates are built synchronously
  const plan = planCertificates(existing, params, now);
  const m = plan.material;
  if (plan.renewedCa || m.caBundle !== caBundle) {
    await putSecret(client, t.namespace, t.caSecret, 'Opaque', { 'ca.crt': m.caBundle, 'ca.key': m.caKey }, caSecret);
    done.renewedCa ||= plan.renewedCa;
    done.reasons.push(...plan.reasons);
  }
  const publishedTo: string[] = [];
  for (const name of t.mutatingWebhooks) if (await publishCaBundle(client, 'mutating', name, m.caBundle)) publishedTo.push(`mutatingwebhookconfiguration/${name}`);
  for (const name of t.validatingWebhooks) if (await publishCaBundle(client, 'validating', name, m.caBundle)) publishedTo.push(`validatingwebhookconfiguration/${name}`);
  done.publishedTo.push(...publishedTo);
  if (plan.renewedServing || unb64(tlsSecret?.data?.['ca.crt']) !== m.caBundle) {
    await putSecret(client, t.namespace, t.tlsSecret, 'kubernetes.io/tls', { 'tls.crt': m.tlsCert, 'tls.key': m.tlsKey, 'ca.crt': m.caBundle }, tlsSecret);
  }
  return { ...plan, publishedTo };
}
