// deploy/kubernetes/gateway, the central deployment: `kubectl kustomize` renders objects that fit
// together (selectors, ports, probes, Secrets, the HPA's target; their schemas are checked in
// deploy.test.ts with the other kustomizations); its gateway.yaml loads; and the scaling claim holds — two
// gateways started from that config with the same keyring and signing key Secrets, and nothing else
// shared, give identical results, and a token, a pseudonym and a ciphertext made by one are taken
// and reversed by the other.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { request } from 'undici';
import { loadConfig } from '../../src/config/load.ts';
import { hashSecret } from '../../src/identity/secret-hash.ts';
import { ROOT } from '../e2e/serve-process.ts';
import { postJson } from '../e2e/http-helpers.ts';

const OVERLAY = join(ROOT, 'deploy', 'kubernetes', 'gateway');
type Json = Record<string, any>;

const haveKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

describe('the rendered overlay', { skip: haveKubectl ? false : 'SKIPPED: kubectl is not installed: the central deployment is not rendered' }, () => {
  let objects: Json[] = [];
  const one = (kind: string): Json => {
    const found = objects.filter((o) => o.kind === kind);
    assert.equal(found.length, 1, kind);
    return found[0];
  };
  before(() => {
    const r = spawnSync('kubectl', ['kustomize', OVERLAY], { encoding: 'utf8', timeout: 180_000 });
    assert.equal(r.status, 0, r.stderr);
    objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as Json);
  });

  // Schema validity (unknown fields rejected) is checked with every other kustomization in deploy.test.ts.
  it('renders the objects of a central deployment', () => {
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['Deployment', 'HorizontalPodAutoscaler', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'PrometheusRule', 'Secret', 'Service', 'ServiceAccount', 'ServiceMonitor']);
  });

  it('the Deployment: the image, the keyring, signing key and config from Secrets, probes, sized resources', () => {
    const deployment = one('Deployment');
    const pod = deployment.spec.template.spec;
    const [gateway] = pod.containers;
    assert.match(gateway.image, /^dpg:\d/);
    assert.equal(pod.initContainers[0].image, gateway.image);
    const secrets = Object.fromEntries(pod.volumes.filter((v: Json) => v.secret).map((v: Json) => [v.name, v.secret.secretName]));
    const generated = one('Secret').metadata.name;
    assert.match(generated, /^dpg-gateway-config-/);
    assert.deepEqual(secrets, { config: generated, keyring: 'dpg-keyring', 'signing-key': 'dpg-gateway-signing-key' });
    const env = Object.fromEntries(gateway.env.map((e: Json) => [e.name, e.value]));
    assert.equal(env.NODE_ENV, 'production');
    assert.equal(env.DPG_CONFIG, `${gateway.volumeMounts.find((m: Json) => m.name === 'config').mountPath}/gateway.yaml`);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) assert.equal(gateway[probe].httpGet.port, 'http', probe);
    assert.equal(gateway.readinessProbe.httpGet.path, '/readyz');
    assert.equal(gateway.livenessProbe.httpGet.path, '/healthz');
    assert.deepEqual(gateway.resources, { requests: { cpu: '500m', memory: '256Mi' }, limits: { memory: '512Mi' } });
    assert.equal(gateway.securityContext.readOnlyRootFilesystem, true);
  });

  it('the Service, HPA, PDB, NetworkPolicy and ServiceMonitor select the Deployment and name its ports', () => {
    const deployment = one('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    const ports = deployment.spec.template.spec.containers[0].ports.map((p: Json) => p.name);
    const matches = (selector: Json) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const service = one('Service');
    assert.ok(matches(service.spec.selector));
    assert.deepEqual(service.spec.ports.map((p: Json) => p.targetPort), ports);
    const hpa = one('HorizontalPodAutoscaler');
    assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas > hpa.spec.minReplicas);
    assert.ok(matches(one('PodDisruptionBudget').spec.selector.matchLabels));
    const policy = one('NetworkPolicy');
    assert.ok(matches(policy.spec.podSelector.matchLabels));
    for (const rule of policy.spec.ingress) for (const p of rule.ports) assert.ok(ports.includes(p.port), p.port);
    const monitor = one('ServiceMonitor');
    assert.ok(Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => service.metadata.labels[k] === v));
    assert.deepEqual(monitor.spec.endpoints.map((e: Json) => [e.port, e.path]), [['http', '/metrics']]);
  });
});

// ---- two replicas from the overlay's config, sharing only the Secrets ----

const SECRET = 'central-test-secret-5d1c';
/** Any well-formed hash: loading a config verifies no secret. */
const PLACEHOLDER_HASH = 'scrypt$32768$8$1$PUXUacRNe6vphDreIskxVw$Ul3Wj7xXB_s-chBM6oOwQ_wZzRI-xc4PJhcaltUw0qc';

interface Replica {
  readonly base: string;
  readonly child: ChildProcess;
  readonly logs: string[];
}

/** The overlay's gateway.yaml with the mounted paths pointing at local files and the hashes at a known secret. */
function localConfig(dir: string, keyringFile: string, signingKeyDir: string, hash: string): string {
  const text = readFileSync(join(OVERLAY, 'gateway.yaml'), 'utf8')
    .replace('/etc/dpg/keyring/keyring.yaml', keyringFile)
    .replace('/etc/dpg/manifests', join(ROOT, 'config', 'manifests'))
    .replace('/var/lib/dpg/state/identity', signingKeyDir)
    .replace(/scrypt\$[^\s]+/g, hash);
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, text);
  return file;
}

function startReplica(configFile: string, dataDir: string): Promise<Replica> {
  const child = spawn(process.execPath, ['bin/dpg.js', 'serve', '--config', configFile], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', DPG_DATA_DIR: dataDir, DPG_HTTP_ADDR: '127.0.0.1:0', DPG_GRPC_ADDR: '127.0.0.1:0', DPG_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: string[] = [];
  return new Promise((resolve, reject) => {
    let port = 0;
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        const entry = JSON.parse(line) as { msg?: string; listener?: string; port?: number };
        if (entry.listener === 'http' && typeof entry.port === 'number') port = entry.port;
        if (entry.msg === 'ready') resolve({ base: `http://127.0.0.1:${port}`, child, logs });
      }
    });
    child.once('exit', (code) => reject(new Error(`dpg serve exited with ${code}: ${logs.slice(-3).join('\n')}`)));
  });
}

describe('two replicas on one keyring and one signing key (what the Secrets give every pod)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-central-'));
  let a: Replica;
  let b: Replica;
  let token = '';
  before(async () => {
    const hash = hashSecret(SECRET);
    // The keyring Secret: a keyring made once (here by `dpg validate`, as docs/keys.md shows for development).
    const made = spawnSync(process.execPath, ['bin/dpg.js', 'validate', '--config', join(ROOT, 'config', 'gateway.yaml')], { cwd: ROOT, env: { ...process.env, DPG_DATA_DIR: join(dir, 'made') }, encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const keyringFile = join(dir, 'keyring.yaml');
    cpSync(join(dir, 'made', 'keyring.yaml'), keyringFile);
    // The signing key Secret: made by the command docs/kubernetes.md gives, then copied into each
    // replica's own directory (the init container's job).
    const docs = readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8');
    const makeKey = docs.split('\n').find((l) => l.startsWith('node -e "const c=require(\'crypto\');const kid='));
    assert.ok(makeKey, 'docs/kubernetes.md shows how to make the signing key');
    mkdirSync(join(dir, 'secret'));
    const keyMade = spawnSync('sh', ['-c', makeKey], { cwd: join(dir, 'secret'), encoding: 'utf8' });
    assert.equal(keyMade.status, 0, keyMade.stderr);
    const keyFiles = readdirSync(join(dir, 'secret')).filter((f) => f.endsWith('.jwk.json'));
    assert.equal(keyFiles.length, 1);
    const started = await Promise.allSettled(
      ['a', 'b'].map((name) => {
        mkdirSync(join(dir, name, 'identity'), { recursive: true, mode: 0o700 });
        cpSync(join(dir, 'secret', keyFiles[0]), join(dir, name, 'identity', keyFiles[0]));
        return startReplica(localConfig(join(dir, name), keyringFile, join(dir, name, 'identity'), hash), join(dir, name, 'data'));
      }),
    );
    // Kept even when the other failed, so after() stops it.
    [a, b] = started.map((r) => (r.status === 'fulfilled' ? r.value : (undefined as unknown as Replica)));
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    // Each signs with the Secret's key and made none of its own.
    for (const name of ['a', 'b']) assert.deepEqual(readdirSync(join(dir, name, 'identity')), keyFiles);
    const res = await request(`${a.base}/gateway/identity/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': SECRET },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'reporting', client_secret: SECRET }).toString(),
    });
    const body = (await res.body.json()) as { access_token: string };
    assert.equal(res.statusCode, 200);
    token = body.access_token;
  });
  after(async () => {
    for (const r of [a, b]) {
      if (r === undefined || r.child.exitCode !== null) continue;
      r.child.kill('SIGTERM');
      await new Promise((resolve) => r.child.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const RECORD = { name: 'Jane Doe', email: 'jane.doe@example.com', cardNumber: '4111 1111 1111 1111', iban: 'DE89 3704 0044 0532 0130 00' };
  const call = (r: Replica, jobType: string, dataSet: unknown) => postJson(r.base, '/api/protect', { manifestName: 'customer', jobType, dataSet }, { 'x-resource-token': token });

  it('a token issued by one replica is accepted by the other', async () => {
    assert.equal((await call(b, 'Mask', RECORD)).status, 200);
  });

  it('both replicas pseudonymise identically, and each reconstructs what the other made', async () => {
    const [pa, pb] = await Promise.all([call(a, 'Pseudonymise', RECORD), call(b, 'Pseudonymise', RECORD)]);
    assert.equal(pa.status, 200, pa.text);
    assert.deepEqual(pa.json.dataSet, pb.json.dataSet);
    assert.notDeepEqual(pa.json.dataSet, RECORD);
    assert.deepEqual((await call(b, 'Reconstruct', pa.json.dataSet)).json.dataSet, RECORD);
    assert.deepEqual((await call(a, 'Reconstruct', pb.json.dataSet)).json.dataSet, RECORD);
  });

  it('a value encrypted on one replica decrypts on the other', async () => {
    const sealed = await call(a, 'Encrypt', { email: RECORD.email });
    assert.equal(sealed.status, 200, sealed.text);
    assert.notEqual(sealed.json.dataSet.email, RECORD.email);
    assert.deepEqual((await call(b, 'Decrypt', sealed.json.dataSet)).json.dataSet, { email: RECORD.email });
  });

  it('both report the same keyring fingerprint on /metrics', async () => {
    const fingerprints = await Promise.all([a, b].map(async (r) => /dpg_keyring_info\{fingerprint="([^"]+)"\} 1/.exec(await (await request(`${r.base}/metrics`)).body.text())?.[1]));
    assert.ok(fingerprints[0]);
    assert.equal(fingerprints[0], fingerprints[1]);
  });

  it('the overlay config loads as is (only the mounted paths differ here), with no proxy and no admin listener', () => {
    const { config, problems } = loadConfig({ file: localConfig(dir, join(dir, 'keyring.yaml'), join(dir, 'x'), PLACEHOLDER_HASH), env: {} });
    assert.deepEqual(problems, []);
    assert.ok(config);
    assert.equal(config.proxy.enabled, false);
    assert.equal(config.admin, undefined);
    assert.equal(config.keys.source, 'file');
  });
});
