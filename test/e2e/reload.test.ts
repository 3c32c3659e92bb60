// Live reconfiguration of a real `dpg serve` process (issue 18, items 2 and 3): the config file,
// manifests and keyring live in directories written the way the kubelet writes ConfigMap and Secret
// volumes (test/helpers/kubelet-atomic-writer.ts); changes arrive by that atomic swap and by SIGHUP.
// Checked: what the upstream receives, the reload metrics, the refusal of a bad config (logged with
// file:line, never a value), reverse listeners added and removed, key rotation, and — in short —
// that no body is protected half by one generation and half by the next while the job switches.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeletWrite } from '../helpers/kubelet-atomic-writer.ts';
import { ROOT, waitForReady } from './serve-process.ts';

const EMAILS = Array.from({ length: 8 }, (_, i) => `person.${i}.example@example.com`);
const M1 = randomBytes(32).toString('base64');
const M2 = randomBytes(32).toString('base64');

function keyring(versions: { version: number; activeFrom: string; material: string }[]): string {
  const lines = versions.map((v) => `      - { version: ${v.version}, activeFrom: "${v.activeFrom}", material: "${v.material}" }`);
  return `defaultKey: default\nkeys:\n  - id: default\n    versions:\n${lines.join('\n')}\n`;
}

interface Layout {
  job: string;
  reverse?: boolean;
  broken?: boolean;
}

let dir: string;
let upstream: Server;
let upstreamPort: number;
let child: ChildProcess;
const logs: string[] = [];
const ports: Record<string, number> = {};
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

function configText(l: Layout): string {
  const route = (name: string, path: string, job: string) =>
    `    - name: ${name}\n      match: { host: 127.0.0.1, port: ${upstreamPort}, path: "${path}" }\n      request: { manifest: customer, jobType: ${job} }`;
  return [
    'http: { enabled: false }',
    'grpc: { enabled: false }',
    'admin: { listen: 127.0.0.1:0 }',
    `keys: { source: file, file: ${join(dir, 'keys', 'keyring.yaml')} }`,
    `manifests: ${join(dir, 'manifests')}`,
    'proxy:',
    '  enabled: true',
    '  listen: 127.0.0.1:0',
    '  routes:',
    route('dec', '/dec', 'Decrypt'),
    route('enc', '/enc', 'Encrypt'),
    route('main', '/**', l.job),
    l.reverse ? `  reverse:\n    - listen: 127.0.0.1:0\n      upstream: http://127.0.0.1:${upstreamPort}` : '  reverse: []',
    l.broken ? '  unknownSetting: 1' : '',
    'logging: { level: info }',
    '',
  ].join('\n');
}

/** The keyring Secret as injection mounts it (defaultMode 0444, see src/k8s/template.ts). */
const writeKeys = (text: string): void => kubeletWrite(join(dir, 'keys'), { 'keyring.yaml': text }, 0o444);
const writeConfig = (l: Layout): void => kubeletWrite(join(dir, 'config'), { 'gateway.yaml': configText(l) });

/** Sends one body through the forward proxy to the echoing upstream; resolves with status and echoed body. */
function viaProxy(path: string, body: string, port = ports.proxy!, absolute = true): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: absolute ? `http://127.0.0.1:${upstreamPort}${path}` : path,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        agent,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function metric(name: string): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port: ports.admin, path: '/metrics' }, (res) => {
      let t = '';
      res.on('data', (c: Buffer) => (t += c.toString('utf8')));
      res.on('end', () => resolve(t));
    })
      .on('error', reject)
      .end();
  });
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

/** Polls until `name` reaches `value` (a watchdog of 10 s only guards against a hang). */
async function untilMetric(name: string, atLeast: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await metric(name);
    if (v >= atLeast) return v;
    if (Date.now() > deadline) throw new Error(`${name} stayed at ${v}, wanted ${atLeast}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Each e-mail of an echoed body: masked (`*`), changed otherwise (a pseudonym), or left as it was. */
function classify(body: string): Set<'mask' | 'pseudo' | 'clear'> {
  const values = (JSON.parse(body) as { people: { email: string }[] }).people.map((p) => p.email);
  return new Set(values.map((v, i) => (v === EMAILS[i] ? 'clear' : v.includes('*') ? 'mask' : 'pseudo')));
}

const PEOPLE = JSON.stringify({ people: EMAILS.map((email) => ({ email })) });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dpg-reload-'));
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as { port: number }).port;
  writeKeys(keyring([{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1 }]));
  const manifests = mkdtempSync(join(dir, 'm-'));
  cpSync(join(ROOT, 'config/manifests/customer.yaml'), join(manifests, 'customer.yaml'));
  kubeletWrite(join(dir, 'manifests'), { 'customer.yaml': (await import('node:fs')).readFileSync(join(manifests, 'customer.yaml'), 'utf8') });
  writeConfig({ job: 'Mask' });
  child = spawn(process.execPath, ['bin/dpg.js', 'serve', '--config', join(dir, 'config', 'gateway.yaml')], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'info', NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await waitForReady(child, ports, logs);
});

after(async () => {
  agent.destroy();
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  await new Promise((r) => upstream?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('dpg serve: live reconfiguration', () => {
  it('starts at generation 1 and masks', async () => {
    assert.equal(await metric('dpg_config_generation'), 1);
    assert.equal(await metric('dpg_config_reloads_total{result="success"}'), 0);
    const r = await viaProxy('/people', PEOPLE);
    assert.equal(r.status, 200);
    assert.deepEqual([...classify(r.body)], ['mask']);
  });

  it('follows the kubelet-style swap of the config directory (..data) without a signal', async () => {
    writeConfig({ job: 'Pseudonymise' });
    await untilMetric('dpg_config_generation', 2);
    assert.ok((await metric('dpg_config_last_reload_success_timestamp_seconds')) > 0);
    const r = await viaProxy('/people', PEOPLE);
    assert.deepEqual([...classify(r.body)], ['pseudo']);
  });

  it('refuses a bad config (file:line logged, counted) and keeps the one in force; SIGHUP reloads', async () => {
    const generation = await metric('dpg_config_generation');
    const failures = await metric('dpg_config_reloads_total{result="failure"}');
    writeConfig({ job: 'Mask', broken: true });
    await untilMetric('dpg_config_reloads_total{result="failure"}', failures + 1);
    assert.equal(await metric('dpg_config_generation'), generation);
    const refused = logs.find((l) => l.includes('config reload refused'));
    assert.ok(refused && /gateway\.yaml:\d+/.test(refused), 'the refusal names file:line');
    assert.deepEqual([...classify((await viaProxy('/people', PEOPLE)).body)], ['pseudo'], 'the previous config stays in force');

    writeConfig({ job: 'Pseudonymise' });
    await untilMetric('dpg_config_generation', generation + 1);

    // A keyring that does not load: refused as well, its material never logged.
    const bad = 'c2VjcmV0LW1hcmtlci1uZXZlci1sb2dnZWQ=';
    writeKeys(keyring([{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: bad }]));
    await untilMetric('dpg_config_reloads_total{result="failure"}', failures + 2);
    assert.ok(!logs.some((l) => l.includes(bad) || l.includes(M1)), 'no key material in the log');
    writeKeys(keyring([{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1 }]));
    await untilMetric('dpg_config_generation', generation + 2);

    // Fixed, and asked for by SIGHUP.
    writeConfig({ job: 'Mask' });
    const now = await metric('dpg_config_generation');
    child.kill('SIGHUP');
    await untilMetric('dpg_config_generation', now + 1);
    // The file event's own reload may follow; both give Mask.
    assert.deepEqual([...classify((await viaProxy('/people', PEOPLE)).body)], ['mask']);
  });

  it('adds and removes a reverse listener by reload', async () => {
    const before = logs.length;
    writeConfig({ job: 'Mask', reverse: true });
    const deadline = Date.now() + 10_000;
    let port: number | undefined;
    while (port === undefined && Date.now() < deadline) {
      for (const l of logs.slice(before)) if (l.includes('reverse proxy listening')) port = (JSON.parse(l) as { port: number }).port;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(port, 'a reverse listener started');
    const r = await viaProxy('/people', PEOPLE, port, false);
    assert.deepEqual([...classify(r.body)], ['mask']);
    writeConfig({ job: 'Mask' });
    while (!logs.slice(before).some((l) => l.includes('reverse proxy listener removed')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await assert.rejects(viaProxy('/people', PEOPLE, port, false), /ECONNREFUSED|ECONNRESET|socket hang up/);
  });

  it('rotates the key from a Secret written the kubelet way: new data under v2, v1 data still decrypts', async () => {
    const version = (text: string) => Number(/enc:v1:[^:]+:[^:]+:(\d+):/.exec(text)?.[1]);
    const first = await viaProxy('/enc', PEOPLE);
    assert.equal(version(first.body), 1);
    const generation = await metric('dpg_config_generation');
    writeKeys(
      keyring([
        { version: 2, activeFrom: new Date(Date.now() - 1000).toISOString(), material: M2 },
        { version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1 },
      ]),
    );
    await untilMetric('dpg_config_generation', generation + 1);
    const second = await viaProxy('/enc', PEOPLE);
    assert.equal(version(second.body), 2);
    for (const old of [first, second]) {
      const opened = await viaProxy('/dec', old.body);
      assert.equal(opened.status, 200);
      assert.deepEqual(JSON.parse(opened.body), JSON.parse(PEOPLE));
    }
  });

  it('no body mixes Mask and Pseudonymise while the job switches under concurrent requests', async () => {
    let stop = false;
    const seen = { mask: 0, pseudo: 0, mixed: 0, clear: 0, failed: 0 };
    const client = async () => {
      while (!stop) {
        try {
          const r = await viaProxy('/people', PEOPLE);
          if (r.status !== 200) seen.failed++;
          else {
            const kinds = classify(r.body);
            if (kinds.size > 1) seen.mixed++;
            else if (kinds.has('clear')) seen.clear++;
            else if (kinds.has('mask')) seen.mask++;
            else seen.pseudo++;
          }
        } catch {
          seen.failed++;
        }
      }
    };
    const clients = Array.from({ length: 6 }, client);
    let generation = await metric('dpg_config_generation');
    for (let i = 0; i < 4; i++) {
      const job = i % 2 === 0 ? 'Pseudonymise' : 'Mask';
      if (i % 2 === 0) writeConfig({ job });
      else {
        kubeletWrite(join(dir, 'config'), { 'gateway.yaml': configText({ job }) });
        child.kill('SIGHUP');
      }
      generation = await untilMetric('dpg_config_generation', generation + 1);
    }
    stop = true;
    await Promise.all(clients);
    assert.equal(seen.failed, 0, 'no request failed');
    assert.equal(seen.mixed, 0, 'no body mixed both jobs');
    assert.equal(seen.clear, 0, 'no value went through unprotected');
    assert.ok(seen.mask > 0 && seen.pseudo > 0, `both jobs were seen (${JSON.stringify(seen)})`);
  });
});
