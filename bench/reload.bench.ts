// Reload under load and key rotation (issue 18, item 2 and 3 figures), on a real `dpg serve` child
// (dist/) whose config, manifests and keyring live in directories written the way the kubelet writes
// ConfigMap and Secret volumes (timestamped directory, `..data` symlink swap).
//
// 1. Baseline: BENCH_RATE req/s (default 1,000) through the forward proxy, no reload, BENCH_BASELINE_S.
// 2. Reload under load: the same load for BENCH_SECONDS (default 60) while the main route's job is
//    switched between Mask and Pseudonymise every second (a kubelet-style config write). Counted:
//    failed requests, bodies mixing both jobs, values left in clear, generations reached.
// 3. Key rotation: a new keyring version written the kubelet way; the time until new data is
//    encrypted under it (polled every 20 ms), three rotations; then every older token still decrypts.
//
//   npm run bench -- reload          BENCH_RATE=500 BENCH_SECONDS=20 npm run bench -- reload

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, ProxyAgent, request } from 'undici';
import { buildDist } from '../scripts/build.mjs';
import { kubeletWrite } from '../test/helpers/kubelet-atomic-writer.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 15);
const EMAILS = Array.from({ length: 8 }, (_, i) => `person.${i}.example@example.com`);
const PEOPLE = JSON.stringify({ people: EMAILS.map((email) => ({ email })) });

interface Version {
  version: number;
  activeFrom: string;
  material: string;
}
const keyring = (versions: Version[]): string =>
  `defaultKey: default\nkeys:\n  - id: default\n    versions:\n${versions.map((v) => `      - { version: ${v.version}, activeFrom: "${v.activeFrom}", material: "${v.material}" }`).join('\n')}\n`;

async function main(): Promise<void> {
  await buildDist({ quiet: true });
  const dir = mkdtempSync(join(tmpdir(), 'dpg-bench-reload-'));
  const upstream: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as { port: number }).port;
  const config = (job: string): string =>
    [
      'http: { enabled: false }',
      'grpc: { enabled: false }',
      'admin: { listen: 127.0.0.1:0 }',
      `keys: { source: file, file: ${join(dir, 'keys', 'keyring.yaml')} }`,
      `manifests: ${join(dir, 'manifests')}`,
      'proxy:',
      '  enabled: true',
      '  listen: 127.0.0.1:0',
      '  routes:',
      ...[
        ['dec', '/dec', 'Decrypt'],
        ['enc', '/enc', 'Encrypt'],
        ['main', '/**', job],
      ].map(([name, path, j]) => `    - name: ${name}\n      match: { host: 127.0.0.1, port: ${upstreamPort}, path: "${path}" }\n      request: { manifest: customer, jobType: ${j} }`),
      'logging: { level: warn }',
      '',
    ].join('\n');
  const versions: Version[] = [{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: randomBytes(32).toString('base64') }];
  kubeletWrite(join(dir, 'keys'), { 'keyring.yaml': keyring(versions) }, 0o444);
  kubeletWrite(join(dir, 'manifests'), { 'customer.yaml': readFileSync(join(ROOT, 'config/manifests/customer.yaml'), 'utf8') });
  kubeletWrite(join(dir, 'config'), { 'gateway.yaml': config('Mask') });

  const child: ChildProcess = spawn(process.execPath, ['bin/dpg.js', 'serve', '--config', join(dir, 'config', 'gateway.yaml')], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'info', NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports: Record<string, number> = {};
  await new Promise<void>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const e = JSON.parse(line) as { listener?: string; port?: number; msg?: string };
          if (e.listener && e.port) ports[e.listener] = e.port;
          if (e.msg === 'ready') resolve();
        } catch {
          /* not JSON */
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`dpg serve exited with ${code}`)));
  });
  const proxy = new ProxyAgent({ uri: `http://127.0.0.1:${ports.proxy}`, connections: 64 } as ConstructorParameters<typeof ProxyAgent>[0]);
  const admin = new Agent();
  const target = `http://127.0.0.1:${upstreamPort}`;
  const post = async (path: string, body: string): Promise<{ status: number; text: string }> => {
    const res = await request(`${target}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: proxy });
    return { status: res.statusCode, text: await res.body.text() };
  };
  const generation = async (): Promise<number> => {
    const res = await request(`http://127.0.0.1:${ports.admin}/metrics`, { dispatcher: admin });
    const text = await res.body.text();
    return Number(/^dpg_config_generation (\d+)/m.exec(text)?.[1]);
  };

  /** Open-loop load for `seconds`; every answer is classified. */
  const load = async (seconds: number, onSecond?: (s: number) => void) => {
    const c = { sent: 0, ok: 0, failed: 0, mixed: 0, clear: 0, mask: 0, pseudo: 0, latencies: [] as number[] };
    const one = async (): Promise<void> => {
      const t = performance.now();
      try {
        const r = await post('/people', PEOPLE);
        c.latencies.push(performance.now() - t);
        if (r.status !== 200) {
          c.failed++;
          return;
        }
        const values = (JSON.parse(r.text) as { people: { email: string }[] }).people.map((p) => p.email);
        const kinds = new Set(values.map((v, i) => (v === EMAILS[i] ? 'clear' : v.includes('*') ? 'mask' : 'pseudo')));
        if (kinds.has('clear')) c.clear++;
        if (kinds.size > 1) c.mixed++;
        else if (kinds.has('mask')) c.mask++;
        else if (kinds.has('pseudo')) c.pseudo++;
        c.ok++;
      } catch {
        c.failed++;
      }
    };
    const pending: Promise<void>[] = [];
    const start = performance.now();
    const interval = 1000 / RATE;
    let second = 0;
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        const now = performance.now();
        while (start + c.sent * interval <= now && c.sent < RATE * seconds) {
          pending.push(one());
          c.sent++;
        }
        const s = Math.floor((now - start) / 1000);
        if (s > second && s < seconds) {
          second = s;
          onSecond?.(s);
        }
        if (c.sent >= RATE * seconds) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    await Promise.all(pending);
    const elapsed = (performance.now() - start) / 1000;
    c.latencies.sort((a, b) => a - b);
    const pct = (p: number) => c.latencies[Math.min(c.latencies.length - 1, Math.floor((p / 100) * c.latencies.length))] ?? NaN;
    return { ...c, rate: c.sent / elapsed, p50: pct(50), p99: pct(99) };
  };
  const fmt = (r: Awaited<ReturnType<typeof load>>) =>
    `sent ${r.sent} (${r.rate.toFixed(0)}/s)  ok ${r.ok}  failed ${r.failed}  mixed ${r.mixed}  clear ${r.clear}  mask ${r.mask}  pseudonymise ${r.pseudo}  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms`;

  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}  (cores: ${(await import('node:os')).availableParallelism()})`);
  for (let i = 0; i < 200; i++) await post('/people', PEOPLE); // warm-up
  const baseline = await load(BASELINE_S);
  console.log(`baseline, no reload, ${BASELINE_S} s at ${RATE}/s:  ${fmt(baseline)}`);

  const g0 = await generation();
  let job = 'Mask';
  const switched = await load(SECONDS, () => {
    job = job === 'Mask' ? 'Pseudonymise' : 'Mask';
    kubeletWrite(join(dir, 'config'), { 'gateway.yaml': config(job) });
  });
  await new Promise((r) => setTimeout(r, 600));
  const g1 = await generation();
  console.log(`job switched every second, ${SECONDS} s at ${RATE}/s:  ${fmt(switched)}  generations ${g0} → ${g1} (${g1 - g0} reloads took effect)`);
  console.log(`load average after the load: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  // Key rotation, the kubelet way.
  const version = (text: string) => Number(/enc:v1:[^:]+:[^:]+:(\d+):/.exec(text)?.[1]);
  const tokens: string[] = [(await post('/enc', PEOPLE)).text];
  const times: number[] = [];
  for (let v = 2; v <= 4; v++) {
    versions.unshift({ version: v, activeFrom: new Date().toISOString(), material: randomBytes(32).toString('base64') });
    const t0 = performance.now();
    kubeletWrite(join(dir, 'keys'), { 'keyring.yaml': keyring(versions) }, 0o444);
    for (;;) {
      const r = await post('/enc', PEOPLE);
      if (version(r.text) === v) {
        times.push(performance.now() - t0);
        tokens.push(r.text);
        break;
      }
      if (performance.now() - t0 > 30_000) throw new Error(`version ${v} not in use after 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  let opened = 0;
  for (const t of tokens) {
    const r = await post('/dec', t);
    if (r.status === 200 && r.text === PEOPLE) opened++;
  }
  console.log(
    `key rotation (kubelet-style Secret write → new data under the new version): ${times.map((t) => `${t.toFixed(0)} ms`).join(', ')}; ` +
      `tokens of versions 1–4 decrypted afterwards: ${opened}/${tokens.length}`,
  );

  await proxy.close();
  await admin.close();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await new Promise((r) => upstream.close(r));
  rmSync(dir, { recursive: true, force: true });
}

await main();
