// Footprint of `dpg serve` as it ships (the compiled build, bin/dpg.js): start to /readyz 200, and
// the resident memory of its whole process tree idle, after a token request and 1,000 protected
// requests, for the default config (every door) and the sidecar profile (egress proxy only).
// Baselines in the same run: a bare `node -e` idling, and a node that imports the libraries the
// gateway bundles. Each dpg process also reports its process.memoryUsage() split (through a tiny
// --import hook, bench/memory-report.mjs, answering SIGUSR2).
//
// Then the sidecar profile started from dist/serve.cjs with its V8 code cache (what `dpg serve`
// does) and from the ES module build (DPG_CODE_CACHE=off, the same-run baseline), in turn, with the
// verdict on start to ready ≤ 300 ms and idle ≤ 60 MB.
//
//   npm run bench -- footprint          (about two minutes; FOOTPRINT_RUNS=5 for more start samples)
//   FOOTPRINT_BASE=/path/to/other/checkout …  (its dist/ built): the sidecar profile of that build and
//   of this one started in turn, side by side, same machine, same minute (a base line for changes)

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildDist } from '../scripts/build.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BASE = process.env.FOOTPRINT_BASE;
const RUNS = Number(process.env.FOOTPRINT_RUNS ?? 3);
const IDLE_MS = Number(process.env.FOOTPRINT_IDLE_MS ?? 2000);
const LONG_IDLE_MS = Number(process.env.FOOTPRINT_LONG_IDLE_MS ?? 15000);

/** Resident set of a process and all its descendants, in MiB. */
function treeRss(pid: number): number {
  let kib = 0;
  const visit = (p: number) => {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      return;
    }
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      // no children file: no children
    }
    for (const c of children) visit(c);
  };
  visit(pid);
  return kib / 1024;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));
}

async function idleNode(code: string): Promise<number> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `${code}; setInterval(() => {}, 1000);`], { stdio: 'ignore' });
  await sleep(IDLE_MS + 500);
  const rss = treeRss(child.pid!);
  child.kill();
  await exited(child);
  return rss;
}

const ports = { http: 28180, grpc: 28190, proxy: 28101, admin: 28120 };
/** The sidecar profile reads its keyring from DPG_KEYRING (NODE_ENV=production refuses a generated one). */
const KEYRING = `keys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${Buffer.alloc(32, 9).toString('base64')}" }\n`;

interface Gateway {
  readonly child: ChildProcess;
  readonly readyMs: number;
  /** CPU time (user + system) the process had used when it answered ready: less sensitive to load. */
  readonly cpuMs: number;
  memory(): Promise<string>;
  stop(): Promise<number | null>;
}

/** utime + stime of a process from /proc/PID/stat, in ms (clock ticks of 10 ms). */
function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** One GET with node:http (lighter than fetch, whose first call loads undici into this process). */
function statusOf(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpGet(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
}

async function startGateway(config: string, dataDir: string, readyUrl: string, root = ROOT, extraEnv: Record<string, string> = {}): Promise<Gateway> {
  const started = performance.now();
  let report = '';
  const child = spawn(process.execPath, ['--import', join(ROOT, 'bench/memory-report.mjs'), join(root, 'bin/dpg.js'), 'serve', '--config', join(root, config)], {
    cwd: root,
    env: {
      ...process.env,
      DPG_DATA_DIR: dataDir,
      DPG_HTTP_ADDR: `127.0.0.1:${ports.http}`,
      DPG_GRPC_ADDR: `127.0.0.1:${ports.grpc}`,
      DPG_PROXY_ADDR: `127.0.0.1:${ports.proxy}`,
      // The sidecar profile's admin listener (127.0.0.1:15020 in config/sidecar.yaml) on a port of the bench's; the default config has none.
      DPG_ADMIN_ADDR: config.includes('sidecar') ? `127.0.0.1:${ports.admin}` : 'off',
      DPG_KEYRING: KEYRING,
      DPG_LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => (report += d.toString()));
  for (;;) {
    if ((await statusOf(readyUrl)) === 200) break;
    if (child.exitCode !== null) throw new Error(`dpg serve exited: ${report}`);
    if (performance.now() - started > 15_000) throw new Error('dpg serve not ready after 15 s');
    await sleep(2);
  }
  const readyMs = performance.now() - started;
  const cpuMs = cpuTimeMs(child.pid!);
  return {
    child,
    readyMs,
    cpuMs,
    async memory() {
      report = '';
      child.kill('SIGUSR2');
      for (let i = 0; i < 100 && !report.includes('\n'); i++) await sleep(10);
      return report.trim();
    },
    async stop() {
      child.kill('SIGTERM');
      return exited(child);
    },
  };
}

async function protectedRequests(count: number): Promise<void> {
  const base = `http://127.0.0.1:${ports.http}`;
  const tokenResponse = await fetch(`${base}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'x-api-key': 'demo-api-key', 'content-type': 'application/x-www-form-urlencoded' },
    body: 'client_id=demo-client&client_secret=demo-secret&grant_type=client_credentials',
  });
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
  const body = JSON.stringify({
    manifestName: 'customer',
    jobType: 'Pseudonymise',
    dataSet: [{ name: 'Jane Doe', email: 'jane.doe@example.com', cardNumber: '4111 1111 1111 1111', ssn: '123-45-6789' }],
  });
  let next = 0;
  const worker = async () => {
    while (next++ < count) {
      const r = await fetch(`${base}/api/protect`, { method: 'POST', headers: { 'x-resource-token': token, 'content-type': 'application/json' }, body });
      if (r.status !== 200) throw new Error(`protect answered ${r.status}`);
      await r.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (x: number) => `${x.toFixed(1)} MB`;

await buildDist({ quiet: true });
const dataDir = mkdtempSync(join(tmpdir(), 'dpg-footprint-'));
try {
  const bare = await idleNode('');
  const libs = await idleNode(
    "await Promise.all(['undici', '@grpc/grpc-js', '@grpc/proto-loader', 'pino', 'jose', 'prom-client', 'yaml', 'busboy'].map((m) => import(m)))",
  );
  const bareStarts: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await exited(spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }));
    bareStarts.push(performance.now() - t);
  }
  const bareStartMs = median(bareStarts);
  console.log(`baseline: bare node idle ${mb(bare)}; node importing undici, @grpc/grpc-js, @grpc/proto-loader, pino, jose, prom-client, yaml, busboy: ${mb(libs)}`);

  const profiles = [
    { name: 'default config (every door)', config: 'config/gateway.yaml', ready: `http://127.0.0.1:${ports.http}/readyz`, goalIdle: 80, load: true },
    { name: 'sidecar profile (proxy only)', config: 'config/sidecar.yaml', ready: `http://127.0.0.1:${ports.admin}/readyz`, goalIdle: 60, load: false },
  ];
  for (const profile of profiles) {
    // First start creates the data directory's keyring, signing keys and CA; not measured.
    await (await startGateway(profile.config, dataDir, profile.ready)).stop();
    const readyTimes: number[] = [];
    const cpuTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const g = await startGateway(profile.config, dataDir, profile.ready);
      readyTimes.push(g.readyMs);
      cpuTimes.push(g.cpuMs);
      await g.stop();
    }
    const g = await startGateway(profile.config, dataDir, profile.ready);
    await sleep(IDLE_MS);
    const idle = treeRss(g.child.pid!);
    const idleSplit = await g.memory();
    await sleep(LONG_IDLE_MS - IDLE_MS);
    const longIdle = treeRss(g.child.pid!);
    const verdict = (ok: boolean) => (ok ? 'MET' : 'NOT MET');
    console.log(
      `\n${profile.name}: start to /readyz 200: median ${median(readyTimes).toFixed(0)} ms (${readyTimes.map((t) => t.toFixed(0)).join(', ')}; goal ≤ 300 ms on a quiet machine: ${verdict(median(readyTimes) <= 300)}); CPU time used by then: median ${median(cpuTimes)} ms; bare node -e 0 takes ${bareStartMs.toFixed(0)} ms`,
    );
    console.log(`  idle after ${IDLE_MS / 1000} s: ${mb(idle)} (bare node ${mb(bare)}, libraries ${mb(libs)}); after ${LONG_IDLE_MS / 1000} s: ${mb(longIdle)} (goal ≤ ${profile.goalIdle} MB: ${verdict(longIdle <= profile.goalIdle)})`);
    console.log(`  ${idleSplit}`);
    if (profile.load) {
      await protectedRequests(1000);
      await sleep(IDLE_MS);
      const loaded = treeRss(g.child.pid!);
      console.log(`  after a token request and 1,000 protected requests: ${mb(loaded)} (goal ≤ 100 MB)`);
      console.log(`  ${await g.memory()}`);
    }
    const code = await g.stop();
    if (code !== 0) throw new Error(`dpg serve exited ${code} on SIGTERM`);
  }
  await codeCacheSideBySide(dataDir);
  if (BASE) await sideBySide(BASE, dataDir);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}

/**
 * The sidecar profile started from dist/serve.cjs with its V8 code cache (what `dpg serve` does) and
 * from the ES module build (DPG_CODE_CACHE=off: the same-run baseline), in turn, RUNS times each.
 */
async function codeCacheSideBySide(dir: string): Promise<void> {
  const ready = `http://127.0.0.1:${ports.admin}/readyz`;
  const modes = [
    { name: 'ES module build (DPG_CODE_CACHE=off)', env: { DPG_CODE_CACHE: 'off' } as Record<string, string>, ready: [] as number[], cpu: [] as number[], idle: 0 },
    { name: 'dist/serve.cjs with the code cache', env: {}, ready: [] as number[], cpu: [] as number[], idle: 0 },
  ];
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  for (let i = 0; i < Math.max(RUNS, 5); i++) {
    for (const m of modes) {
      const g = await startGateway('config/sidecar.yaml', dir, ready, ROOT, m.env);
      m.ready.push(g.readyMs);
      m.cpu.push(g.cpuMs);
      await g.stop();
    }
  }
  for (const m of modes) {
    const g = await startGateway('config/sidecar.yaml', dir, ready, ROOT, m.env);
    await sleep(LONG_IDLE_MS);
    m.idle = treeRss(g.child.pid!);
    await g.stop();
  }
  console.log(`\nsidecar profile, code cache side by side (in turn; load average ${load} → ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}):`);
  for (const m of modes) {
    console.log(
      `  ${m.name.padEnd(40)} start to /readyz 200 median ${median(m.ready).toFixed(0)} ms (${m.ready.map((t) => t.toFixed(0)).join(', ')}), CPU median ${median(m.cpu)} ms; idle ${mb(m.idle)} after ${LONG_IDLE_MS / 1000} s`,
    );
  }
  const [esm, cached] = modes;
  const verdict = median(cached!.ready) <= 300 ? 'MET' : 'NOT MET';
  console.log(`  start to ready with the code cache: median ${median(cached!.ready).toFixed(0)} ms against ${median(esm!.ready).toFixed(0)} ms without (goal ≤ 300 ms on a quiet machine: ${verdict}); idle ${mb(cached!.idle)} (goal ≤ 60 MB: ${cached!.idle <= 60 ? 'MET' : 'NOT MET'})`);
}

/** The sidecar profile of another build and of this one, started in turn RUNS times each, then idle side by side. */
async function sideBySide(base: string, dir: string): Promise<void> {
  const ready = `http://127.0.0.1:${ports.admin}/readyz`;
  const builds = [
    { name: `base ${base}`, root: base, ready: [] as number[], cpu: [] as number[], idle: 0, longIdle: 0 },
    { name: 'this build', root: ROOT, ready: [] as number[], cpu: [] as number[], idle: 0, longIdle: 0 },
  ];
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  for (const b of builds) await (await startGateway('config/sidecar.yaml', dir, ready, b.root)).stop();
  for (let i = 0; i < RUNS; i++) {
    for (const b of builds) {
      const g = await startGateway('config/sidecar.yaml', dir, ready, b.root);
      b.ready.push(g.readyMs);
      b.cpu.push(g.cpuMs);
      await g.stop();
    }
  }
  for (const b of builds) {
    const g = await startGateway('config/sidecar.yaml', dir, ready, b.root);
    await sleep(IDLE_MS);
    b.idle = treeRss(g.child.pid!);
    await sleep(LONG_IDLE_MS - IDLE_MS);
    b.longIdle = treeRss(g.child.pid!);
    await g.stop();
  }
  console.log(`\nsidecar profile side by side (${RUNS} starts each, in turn; load average ${load} → ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}):`);
  for (const b of builds) {
    console.log(
      `  ${b.name.padEnd(40)} start to /readyz 200 median ${median(b.ready).toFixed(0)} ms (${b.ready.map((t) => t.toFixed(0)).join(', ')}), CPU median ${median(b.cpu)} ms (${b.cpu.join(', ')}); ` +
        `idle ${mb(b.idle)} after ${IDLE_MS / 1000} s, ${mb(b.longIdle)} after ${LONG_IDLE_MS / 1000} s`,
    );
  }
}
