// The admission webhook over real HTTPS: AdmissionReview v1 fixtures (test/k8s/admission/*.json) in,
// JSON Patch out, applied with a JSON Patch library (fast-json-patch, not the one that made it) and
// compared with the golden files; error cases; metrics; TLS files swapped under the running server.
// Fixtures that embed golden output are rewritten with DPG_UPDATE_GOLDEN=1 like the goldens.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import { parse } from 'yaml';
import jsonpatch from 'fast-json-patch';
import { startWebhook, type WebhookServer } from '../../src/k8s/webhook-server.ts';
import { NO_KEYRING_WARNING } from '../../src/k8s/inject.ts';
import { syncFiles } from '../../src/k8s/webhook-certs-sync.ts';
import { planCertificates } from '../../src/k8s/webhook-certs.ts';
import { createLogger } from '../../src/core/logger.ts';
import { testOptions } from './helpers/options.ts';

const HERE = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const FIXTURES = join(HERE, 'admission');
const GOLDEN = join(HERE, 'inject');
const SERVICE = { service: 'dpg-injector', namespace: 'dpg-system' };
const HOSTNAME = 'dpg-injector.dpg-system.svc';

type Json = Record<string, any>;
const fixture = (name: string): Json => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));
const golden = (name: string): Json => parse(readFileSync(join(GOLDEN, name), 'utf8'));

interface Reply {
  status: number;
  body: string;
  json: Json;
  serial: string;
}

let dir: string;
let server: WebhookServer;
const logLines: string[] = [];

function call(path: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }, port = server.address.port, method = 'POST'): Promise<Reply> {
  const ca = readFileSync(join(dir, 'ca.crt'));
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, ca, servername: HOSTNAME, headers, agent: false }, (res) => {
      const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Json = {};
        try {
          json = JSON.parse(text);
        } catch {
          // plain-text error bodies
        }
        resolve({ status: res.statusCode ?? 0, body: text, json, serial });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const review = (name: string) => call('/mutate', JSON.stringify(fixture(name)));

function applyPatch(object: Json, response: Json): Json {
  assert.equal(response.patchType, 'JSONPatch');
  const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
  return jsonpatch.applyPatch(structuredClone(object), ops, true, false).newDocument;
}

describe('dpg webhook over HTTPS', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dpg-webhook-'));
    await syncFiles(dir, SERVICE);
    if (process.env.DPG_UPDATE_GOLDEN === '1') {
      const f = fixture('already-injected.json');
      f.request.object = golden('pod.injected.yaml');
      writeFileSync(join(FIXTURES, 'already-injected.json'), `${JSON.stringify(f, null, 2)}\n`);
    }
    const destination = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    server = await startWebhook({
      host: '127.0.0.1',
      port: 0,
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      tlsReloadMs: 50,
      maxBodyBytes: 256 * 1024,
      injector: testOptions(),
      excludedNamespaces: new Set(['kube-system', 'dpg-system']),
      logger: createLogger({ level: 'info', destination: { write: (s: string) => destination.write(s) } }),
    });
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the fixtures hold the golden inputs', () => {
    assert.deepEqual(fixture('pod-create.json').request.object, golden('pod.yaml'));
    assert.deepEqual(fixture('already-injected.json').request.object, golden('pod.injected.yaml'), 'regenerate with DPG_UPDATE_GOLDEN=1');
  });

  it('injects a pod: the returned JSON Patch, applied, gives the golden output', async () => {
    const r = await review('pod-create.json');
    assert.equal(r.status, 200);
    assert.equal(r.json.apiVersion, 'admission.k8s.io/v1');
    assert.equal(r.json.kind, 'AdmissionReview');
    assert.equal(r.json.response.uid, fixture('pod-create.json').request.uid);
    assert.equal(r.json.response.allowed, true);
    assert.deepEqual(applyPatch(fixture('pod-create.json').request.object, r.json.response), golden('pod.injected.yaml'));
  });

  it('every golden workload template, sent as a pod, patches to its golden output', async () => {
    for (const name of ['deployment', 'job', 'env-proxy', 'legacy', 'exclusions', 'reinject-upgrade']) {
      const input = parse(readFileSync(join(GOLDEN, `${name}.yaml`), 'utf8'));
      const expected = golden(`${name}.injected.yaml`);
      const template = (o: Json) => (o.kind === 'Pod' ? o : o.spec.template);
      const body = fixture('pod-create.json');
      body.request.object = { apiVersion: 'v1', kind: 'Pod', ...template(input) };
      const r = await call('/mutate', JSON.stringify(body));
      assert.equal(r.status, 200, name);
      assert.deepEqual(applyPatch(body.request.object, r.json.response), { apiVersion: 'v1', kind: 'Pod', ...template(expected) }, name);
    }
  });

  it('dry-run: the same patch (injection has no side effects)', async () => {
    const [a, b] = [await review('pod-create.json'), await review('dry-run.json')];
    assert.equal(b.json.response.allowed, true);
    assert.equal(b.json.response.patch, a.json.response.patch);
  });

  it('kube-system and other excluded namespaces: allowed, untouched', async () => {
    const r = await review('kube-system.json');
    assert.deepEqual(r.json.response, { uid: fixture('kube-system.json').request.uid, allowed: true });
  });

  it('an already injected pod: allowed, no patch (still warned: it has no keyring Secret)', async () => {
    const r = await review('already-injected.json');
    assert.deepEqual(r.json.response, { uid: fixture('already-injected.json').request.uid, allowed: true, warnings: [`dpg: ${NO_KEYRING_WARNING}`] });
  });

  it('a pod without a keyring Secret is injected with an admission warning, first; one with dpg.io/keyring without it', async () => {
    const bare = await review('pod-create.json');
    assert.equal(bare.json.response.allowed, true);
    assert.ok(bare.json.response.patch);
    const said: string[] = bare.json.response.warnings;
    assert.equal(said[0], `dpg: ${NO_KEYRING_WARNING}`);
    assert.match(said[0]!, /replicas would not share keys and reversible data .* could not be reconstructed/);
    assert.ok(said[0]!.length <= 200, 'not cut by the API server');
    const body = fixture('pod-create.json');
    body.request.object.metadata.annotations = { 'dpg.io/keyring': 'shop-keyring' };
    const keyed = await call('/mutate', JSON.stringify(body));
    assert.ok(keyed.json.response.patch);
    assert.equal((keyed.json.response.warnings ?? []).some((w: string) => /keyring/.test(w)), false);
  });

  it('not a pod creation (an UPDATE): allowed, untouched', async () => {
    const r = await review('pod-update.json');
    assert.deepEqual(r.json.response, { uid: fixture('pod-update.json').request.uid, allowed: true });
  });

  it('an app container as UID 10001: denied with the reason', async () => {
    const r = await review('uid-10001.json');
    assert.equal(r.json.response.allowed, false);
    assert.equal(r.json.response.status.code, 403);
    assert.match(r.json.response.status.message, /runs as UID 10001/);
  });

  it('what injection left as the pod had it comes back as admission warnings', async () => {
    const input = parse(readFileSync(join(GOLDEN, 'deployment.yaml'), 'utf8'));
    const body = fixture('pod-create.json');
    body.request.object = { apiVersion: 'v1', kind: 'Pod', ...input.spec.template };
    const r = await call('/mutate', JSON.stringify(body));
    assert.ok(r.json.response.warnings.some((w: string) => /SSL_CERT_FILE already set/.test(w)));
  });

  it('reinvocation after another webhook added a container: the patch adds trust to that container only', async () => {
    const first = await review('pod-create.json');
    const pod = applyPatch(fixture('pod-create.json').request.object, first.json.response);
    pod.spec.containers.push({ name: 'log-forwarder', image: 'registry.example/fwd:1' });
    const body = fixture('pod-create.json');
    body.request.object = pod;
    const r = await call('/mutate', JSON.stringify(body));
    const ops = JSON.parse(Buffer.from(r.json.response.patch, 'base64').toString('utf8')) as { path: string }[];
    assert.ok(ops.length > 0);
    const ownAnnotations = ['/metadata/annotations/dpg.io~1status', '/metadata/annotations/dpg.io~1notes'];
    assert.ok(ops.every((op) => op.path.startsWith('/spec/containers/1/') || ownAnnotations.includes(op.path)), JSON.stringify(ops));
    const after = applyPatch(pod, r.json.response);
    assert.ok(after.spec.containers[1].volumeMounts.some((m: Json) => m.name === 'dpg-trust'));
    // It may run as root: it loses the default capabilities that lead around capture, like the first container.
    assert.deepEqual(after.spec.containers[1].securityContext, after.spec.containers[0].securityContext);
    assert.deepEqual(after.spec.containers[1].securityContext.capabilities, { drop: ['NET_RAW', 'SETGID', 'SETUID'] });
  });

  it('/validate: denies a pod that is not injected, allows one that is', async () => {
    const denied = await call('/validate', JSON.stringify(fixture('pod-create.json')));
    assert.equal(denied.json.response.allowed, false);
    assert.match(denied.json.response.status.message, /not protected/);
    const allowed = await call('/validate', JSON.stringify(fixture('already-injected.json')));
    assert.equal(allowed.json.response.allowed, true);
  });

  it('bad content type: 415', async () => {
    const r = await call('/mutate', JSON.stringify(fixture('pod-create.json')), { 'content-type': 'application/yaml' });
    assert.equal(r.status, 415);
  });

  it('malformed reviews: 400 with a reason, nothing echoed', async () => {
    for (const [body, reason] of [
      [JSON.stringify(fixture('malformed-no-uid.json')), /request\.uid/],
      [JSON.stringify(fixture('malformed-v1beta1.json')), /admission\.k8s\.io\/v1/],
      ['{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "<script>secret-value</script>"}}', /request\.uid/],
      ['{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"', /not JSON/],
      ['[]', /AdmissionReview/],
    ] as [string, RegExp][]) {
      const r = await call('/mutate', body);
      assert.equal(r.status, 400, body);
      assert.match(r.body, reason);
      assert.doesNotMatch(r.body, /secret-value/);
    }
  });

  it('too large: 413; wrong method: 405; unknown path: 404', async () => {
    assert.equal((await call('/mutate', Buffer.alloc(300 * 1024, 0x20))).status, 413);
    assert.equal((await call('/mutate', '', {}, server.address.port, 'GET')).status, 405);
    assert.equal((await call('/nope', '{}')).status, 404);
  });

  it('/healthz, /readyz and /metrics', async () => {
    assert.equal((await call('/healthz', '', {}, server.address.port, 'GET')).status, 200);
    assert.equal((await call('/readyz', '', {}, server.address.port, 'GET')).status, 200);
    const m = await call('/metrics', '', {}, server.address.port, 'GET');
    assert.match(m.body, /dpg_webhook_reviews_total\{path="\/mutate",outcome="injected"\} \d+/);
    assert.match(m.body, /dpg_webhook_reviews_total\{path="\/mutate",outcome="malformed"\} \d+/);
    assert.match(m.body, /dpg_webhook_certificate_expiry_timestamp_seconds \d+/);
  });

  it('logs names and outcomes, never annotation values or env values', () => {
    const text = logLines.join('');
    assert.match(text, /"outcome":"injected"/);
    assert.doesNotMatch(text, /company\.pem|secret-value/);
  });

  it('picks up new TLS files, and keeps the working pair when the new files do not match', async () => {
    const before = (await call('/healthz', '', {}, server.address.port, 'GET')).serial;
    // A renewal: the same CA, a new serving certificate.
    const material = {
      caBundle: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      caKey: readFileSync(join(dir, 'ca.key'), 'utf8'),
      tlsCert: readFileSync(join(dir, 'tls.crt'), 'utf8'),
      tlsKey: readFileSync(join(dir, 'tls.key'), 'utf8'),
    };
    const renewed = await planCertificates(material, { ...SERVICE, renewBeforeDays: 400 });
    assert.ok(renewed.renewedServing && !renewed.renewedCa);
    writeFileSync(join(dir, 'tls.key'), renewed.material.tlsKey);
    writeFileSync(join(dir, 'tls.crt'), renewed.material.tlsCert);
    let serial = before;
    for (let i = 0; i < 100 && serial === before; i++) {
      await new Promise((r) => setTimeout(r, 30));
      serial = (await call('/healthz', '', {}, server.address.port, 'GET')).serial;
    }
    assert.notEqual(serial, before, 'the new certificate is served');

    // A mismatched pair (mid-update): the last good one stays.
    copyFileSync(join(dir, 'ca.key'), join(dir, 'tls.key'));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await call('/healthz', '', {}, server.address.port, 'GET')).serial, serial);
    const m = await call('/metrics', '', {}, server.address.port, 'GET');
    assert.match(m.body, /dpg_webhook_tls_reloads_total\{result="ok"\} 1/);
    assert.match(m.body, /dpg_webhook_tls_reloads_total\{result="error"\} 1/);
    writeFileSync(join(dir, 'tls.key'), renewed.material.tlsKey);
  });

  it('the dpg webhook command serves the same over a real process', async () => {
    const child = spawn(process.execPath, ['bin/dpg.js', 'webhook', '--tls-cert', join(dir, 'tls.crt'), '--tls-key', join(dir, 'tls.key'), '--listen', '127.0.0.1:0', '--image', 'dpg:test'], {
      env: { ...process.env, DPG_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let text = '';
        child.stderr.on('data', (c: Buffer) => {
          text += c;
          const m = /listening on [^:]+:(\d+)/.exec(text);
          if (m) resolve(Number(m[1]));
        });
        child.once('exit', (code) => reject(new Error(`dpg webhook exited ${code}: ${text}`)));
      });
      const r = await call('/mutate', JSON.stringify(fixture('pod-create.json')), undefined, port);
      assert.equal(r.json.response.allowed, true);
      assert.ok(r.json.response.patch);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
