// The webhook's own certificates: when they are issued and renewed (planCertificates), the files of
// `dpg webhook certs --out`, and the in-cluster mode against a fake Kubernetes API on loopback HTTPS
// (Secrets created then left alone, caBundle patched, a concurrent writer retried).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { planCertificates } from '../../src/k8s/webhook-certs.ts';
import { syncKube } from '../../src/k8s/webhook-certs-sync.ts';
import { KubeClient } from '../../src/k8s/kube-client.ts';

const DAY = 86_400_000;
const P = { service: 'dpg-injector', namespace: 'dpg-system' };
const certs = (bundle: string) => (bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((p) => new X509Certificate(p));

describe('planCertificates', () => {
  it('issues a CA and a serving certificate for the service names, then leaves them alone', async () => {
    const first = await planCertificates(undefined, P);
    assert.ok(first.renewedCa && first.renewedServing);
    const leaf = new X509Certificate(first.material.tlsCert);
    assert.equal(leaf.subjectAltName, 'DNS:dpg-injector, DNS:dpg-injector.dpg-system, DNS:dpg-injector.dpg-system.svc, DNS:dpg-injector.dpg-system.svc.cluster.local');
    assert.ok(leaf.checkIssued(certs(first.material.caBundle)[0]));
    assert.equal(leaf.ca, false);
    assert.equal(certs(first.material.caBundle)[0].ca, true);
    const again = await planCertificates(first.material, P);
    assert.ok(!again.renewedCa && !again.renewedServing);
    assert.deepEqual(again.material, first.material);
  });

  it('renews the serving certificate within 30 days of expiry, with the same CA', async () => {
    const first = await planCertificates(undefined, P);
    const later = await planCertificates(first.material, P, Date.now() + 340 * DAY);
    assert.ok(later.renewedServing && !later.renewedCa);
    assert.match(later.reasons.join(), /serving certificate expires/);
    assert.equal(later.material.caBundle, first.material.caBundle);
  });

  it('renews for another service name, or a certificate not signed by the CA', async () => {
    const first = await planCertificates(undefined, P);
    assert.match((await planCertificates(first.material, { ...P, namespace: 'other' })).reasons.join(), /does not name the service/);
    const foreign = await planCertificates(undefined, P);
    const mixed = { ...first.material, tlsCert: foreign.material.tlsCert, tlsKey: foreign.material.tlsKey };
    assert.match((await planCertificates(mixed, P)).reasons.join(), /not signed by the current CA/);
  });

  it('rotates the CA before it expires and keeps the old one in the bundle until it has', async () => {
    const first = await planCertificates(undefined, P);
    const oldCa = certs(first.material.caBundle)[0];
    const rotation = Date.now() + (5 * 365 - 600) * DAY;
    const rotated = await planCertificates(first.material, P, rotation);
    assert.ok(rotated.renewedCa && rotated.renewedServing);
    const bundle = certs(rotated.material.caBundle);
    assert.equal(bundle.length, 2);
    assert.equal(bundle[1].fingerprint256, oldCa.fingerprint256);
    // Once the old CA has expired it leaves the bundle.
    const afterExpiry = await planCertificates(rotated.material, P, Date.parse(oldCa.validTo) + DAY);
    assert.equal(certs(afterExpiry.material.caBundle).length, 1);
  });

  it('a stored CA whose key does not match is replaced', async () => {
    const a = await planCertificates(undefined, P);
    const b = await planCertificates(undefined, P);
    const r = await planCertificates({ ...a.material, caKey: b.material.caKey }, P);
    assert.ok(r.renewedCa);
  });
});

describe('dpg webhook certs --out', () => {
  it('writes ca.crt, ca.key, tls.crt, tls.key with private keys at 0600, and is a no-op when current', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-certs-'));
    try {
      const run = () => spawnSync(process.execPath, ['bin/dpg.js', 'webhook', 'certs', '--out', dir, '--namespace', 'dpg-system'], { encoding: 'utf8' });
      const first = run();
      assert.equal(first.status, 0, first.stderr);
      assert.match(first.stderr, /issued a new CA and serving certificate/);
      assert.equal(statSync(join(dir, 'ca.key')).mode & 0o777, 0o600);
      assert.equal(statSync(join(dir, 'tls.key')).mode & 0o777, 0o600);
      assert.doesNotMatch(first.stderr + first.stdout, /PRIVATE KEY/);
      const cert = readFileSync(join(dir, 'tls.crt'), 'utf8');
      const second = run();
      assert.equal(second.status, 0);
      assert.match(second.stderr, /certificates are current/);
      assert.equal(readFileSync(join(dir, 'tls.crt'), 'utf8'), cert);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad flags with exit 2', () => {
    for (const args of [['--out', '/tmp/x', '--kube'], ['--namespace', 'Bad_NS', '--out', '/tmp/x'], ['--renew-before-days', '400', '--out', '/tmp/x']]) {
      const r = spawnSync(process.execPath, ['bin/dpg.js', 'webhook', 'certs', ...args], { encoding: 'utf8' });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    }
  });
});

describe('dpg webhook certs --kube (fake API server)', () => {
  let api: Server;
  let client: KubeClient;
  const TOKEN = 'service-account-token-value';
  const secrets = new Map<string, any>();
  let webhookConfig: any;
  let version = 1;
  let interfereOnce = false;
  const calls: string[] = [];

  before(async () => {
    // The fake API server's own certificate: `localhost` is one of the names planCertificates puts in.
    const tls = await planCertificates(undefined, { service: 'localhost', namespace: 'test' });
    webhookConfig = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'dpg-injector', resourceVersion: String(version) },
      webhooks: [{ name: 'namespace.inject.dpg.io', clientConfig: {} }, { name: 'object.inject.dpg.io', clientConfig: {} }],
    };
    api = createServer({ cert: tls.material.tlsCert, key: tls.material.tlsKey }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        calls.push(`${req.method} ${req.url}`);
        if (req.headers.authorization !== `Bearer ${TOKEN}`) return reply(401, { message: 'Unauthorized' });
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
        const secretPath = /^\/api\/v1\/namespaces\/dpg-system\/secrets(?:\/([^/]+))?$/.exec(req.url ?? '');
        if (secretPath) {
          const name = secretPath[1];
          if (req.method === 'GET') return secrets.has(name!) ? reply(200, secrets.get(name!)) : reply(404, { message: 'not found' });
          if (req.method === 'POST') {
            if (secrets.has(body.metadata.name)) return reply(409, { message: 'already exists' });
            secrets.set(body.metadata.name, { ...body, metadata: { ...body.metadata, resourceVersion: String(++version) } });
            return reply(201, secrets.get(body.metadata.name));
          }
          if (req.method === 'PUT') {
            if (secrets.get(name!)?.metadata.resourceVersion !== body.metadata.resourceVersion) return reply(409, { message: 'conflict' });
            secrets.set(name!, { ...body, metadata: { ...body.metadata, resourceVersion: String(++version) } });
            return reply(200, secrets.get(name!));
          }
        }
        if (req.url === '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/dpg-injector') {
          if (req.method === 'GET') return reply(200, webhookConfig);
          if (req.method === 'PATCH') {
            assert.equal(req.headers['content-type'], 'application/json-patch+json');
            if (interfereOnce) {
              interfereOnce = false;
              webhookConfig.metadata.resourceVersion = String(++version);
            }
            try {
              webhookConfig = jsonpatch.applyPatch(structuredClone(webhookConfig), body, true, false).newDocument;
            } catch {
              return reply(422, { message: 'the server rejected our request due to an error in our request' });
            }
            webhookConfig.metadata.resourceVersion = String(++version);
            return reply(200, webhookConfig);
          }
        }
        reply(404, { message: `no route ${req.method} ${req.url}` });
      });
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    client = new KubeClient({ server: `https://localhost:${(api.address() as AddressInfo).port}`, token: TOKEN, ca: tls.material.caBundle });
  });
  after(() => new Promise<void>((r) => api.close(() => r())));

  const targets = { namespace: 'dpg-system', caSecret: 'dpg-injector-ca', tlsSecret: 'dpg-injector-tls', mutatingWebhooks: ['dpg-injector'], validatingWebhooks: [] };

  it('creates both Secrets and writes the CA into every webhook of the configuration', async () => {
    const r = await syncKube(client, targets, P);
    assert.ok(r.renewedCa);
    assert.deepEqual(r.publishedTo, ['mutatingwebhookconfiguration/dpg-injector']);
    const tls = secrets.get('dpg-injector-tls');
    assert.equal(tls.type, 'kubernetes.io/tls');
    assert.deepEqual(Object.keys(tls.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.deepEqual(Object.keys(secrets.get('dpg-injector-ca').data).sort(), ['ca.crt', 'ca.key']);
    const bundle = Buffer.from(tls.data['ca.crt'], 'base64').toString('utf8');
    for (const w of webhookConfig.webhooks) assert.equal(Buffer.from(w.clientConfig.caBundle, 'base64').toString('utf8'), bundle);
    const leaf = new X509Certificate(Buffer.from(tls.data['tls.crt'], 'base64').toString('utf8'));
    assert.ok(leaf.checkIssued(certs(bundle)[0]));
  });

  it('a second run changes nothing (the daily CronJob)', async () => {
    const before = calls.length;
    const r = await syncKube(client, targets, P);
    assert.ok(!r.renewedCa && !r.renewedServing);
    assert.deepEqual(r.publishedTo, []);
    assert.deepEqual(calls.slice(before).map((c) => c.split(' ')[0]), ['GET', 'GET', 'GET']);
  });

  it('a CA rotation publishes old and new CA before serving the new certificate; a concurrent change is retried', async () => {
    interfereOnce = true;
    const order: string[] = [];
    const start = calls.length;
    const r = await syncKube(client, targets, P, Date.now() + (5 * 365 - 600) * DAY);
    order.push(...calls.slice(start).filter((c) => !c.startsWith('GET')));
    assert.ok(r.renewedCa, 'renewed CA');
    assert.equal(certs(Buffer.from(webhookConfig.webhooks[0].clientConfig.caBundle, 'base64').toString('utf8')).length, 2);
    const patchAt = order.lastIndexOf('PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/dpg-injector');
    const tlsAt = order.lastIndexOf('PUT /api/v1/namespaces/dpg-system/secrets/dpg-injector-tls');
    assert.ok(patchAt >= 0 && tlsAt > patchAt, `order: ${order.join(', ')}`);
    assert.ok(order.filter((c) => c.startsWith('PATCH')).length >= 2, `the conflicting patch was retried: ${order.join(', ')}`);
  });

  it('API errors name the call and status, never the token', async () => {
    const bad = new KubeClient({ server: client['connection'].server, token: 'wrong-token-value', ca: client['connection'].ca });
    await assert.rejects(syncKube(bad, targets, P), (err: Error) => /HTTP 401/.test(err.message) && !/wrong-token-value/.test(err.message));
  });
});
