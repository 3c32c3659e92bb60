// Head of line (issue 18): while a 5 MB SQL script, a 10 MB JSON and a 10 MB XML document are
// protected on /api/protect, 1 KB Mask requests on /api/protect, through the forward proxy and
// through the transparent listener keep their p99 near the idle p99 of the same run. Each mode is a
// real `dpg serve` child (dist/) in a network namespace made for the run, as UID 10001, with
// `dpg capture` redirecting port 80 to its transparent listener: `limits.workers.max: 0`
// (everything inline, as before workers), the default pool, and — with BENCH_BASE=<checkout with
// dist/ built> — another build's default pool, side by side. The light load is open-loop (sends
// follow the clock, latency from each send), run by a driver process in the namespace; the heavy
// documents come from a client process of their own (their 25 MB built and encoded before the run),
// so the driver's loop measures the gateway, not its own JSON.stringify and writes.
// Per door it prints the goal (loaded p99 ≤ 2× idle p99) and MET / NOT MET, and, with the gateway
// traced (bench/hol-trace.mjs loaded into it), where the slowest light requests spent their time
// (bench/hol-breakdown.ts): legs, gateway loop stalls, GC pauses, the driver's own stalls.
// Also: the heavy documents' own throughput per mode, the gateway's RSS idle, busy and after the
// worker is reaped, and per thread group (event loop, threads lowered by limits.workers.nice, the
// rest) the CPU used and the time spent runnable without a core (/proc/<pid>/task/*/schedstat):
// counted figures that hold on a busy machine, where wall-clock ratios do not.
//   npm run bench -- head-of-line            (root, iptables; 3–7 minutes per mode at full size, by machine load)
//   BENCH_SCALE=0.2 …  (heavy documents at a fifth of the size)   BENCH_RATE=40 … (light req/s per door)
//   BENCH_MODES=workers,nice0,inline,stgc,oldclient,base …  (which modes, in that order; default nice0,workers;
//     stgc: the gateway under `node --single-threaded-gc`; oldclient: the heavy documents sent by the driver, as before)
//   BENCH_GATEWAY_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/x' …  (node flags for the gateway, e.g. a profile of its threads)
//   BENCH_TRACE=0 …  (no trace hook in the gateway)   BENCH_HEAVY_CLIENT=driver …  (the heavy documents sent by the driver itself, as before)

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { buildDist } from '../scripts/build.mjs';
import { oneKilobyteJson } from './open-loop.ts';
import { envelopeOf, heavyDocuments as documentsAt } from './hol-documents.ts';
import { breakdown, type Gc, type GatewayTrace, type LightSample, type Stall } from './hol-breakdown.ts';
import { traceLoop } from './hol-trace.mjs';
import { formatSplit, sampleThreads, threadSplit, type ThreadSplit } from './thread-stats.ts';

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TS_LOADER = join(ROOT, 'scripts/ts-loader.mjs');
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RATE = Number(process.env.BENCH_RATE ?? 20);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const BASE = process.env.BENCH_BASE;
const TRACE = process.env.BENCH_TRACE !== '0';
const MODES = (process.env.BENCH_MODES ?? `nice0,workers${BASE ? ',base' : ''}`).split(',');
const MiB = 1024 * 1024;
const heavyDocuments = () => documentsAt(SCALE);
const HOST = 'api.bench.test';
const HOST_ADDRESS = '198.51.100.10';
const PORTS = { http: 18080, proxy: 15001, transparent: 15006 };

// ---- roles: the orchestrator (outside), the upstream, the driver and the heavy client (inside) -----

interface Latencies {
  lat: number[];
  errors: number;
  samples: LightSample[];
}

interface HeavyResult {
  readonly type: string;
  readonly mb: number;
  readonly ms: number;
  readonly status: number;
  /** Bytes of the answer, read to the end. */
  readonly answerBytes: number;
  /** Epoch ms: sent, answer read. */
  readonly sentAt: number;
  readonly doneAt: number;
}

interface DriverResult {
  readonly idle: Record<string, Latencies>;
  readonly loaded: Record<string, Latencies>;
  readonly heavy: HeavyResult[];
  readonly rss: { idle: number; busy: number; afterReap: number };
  /** CPU seconds of the main thread and of the whole process while the heavy documents ran alone (no light load), and that phase's wall time. */
  readonly alone: { main: number; all: number; wall: number };
  /** Per thread group, while the heavy documents ran alone and while they ran beside the light load. */
  readonly threads: { readonly alone: ThreadSplit; readonly loaded: ThreadSplit };
  /** Where the heavy documents were sent from: a process of their own, or the driver's own loop (BENCH_HEAVY_CLIENT=driver). */
  readonly heavyClient: 'process' | 'driver';
  /** Epoch ms of the loaded phase, and the driver's own loop stalls and GC pauses (hol-trace.mjs). */
  readonly loadedSpan: { readonly from: number; readonly to: number };
  readonly driverTrace: { readonly stalls: Stall[]; readonly gcs: Gc[] };
}

/** CPU seconds (user + system) of the gateway's main thread (its TID is its PID) and of the whole process. */
function cpuSeconds(pid: number): { main: number; all: number } {
  const ticks = (path: string): number => {
    const fields = readFileSync(path, 'utf8').replace(/^.*\) /, '').split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
  };
  return { main: ticks(`/proc/${pid}/task/${pid}/stat`) / 100, all: ticks(`/proc/${pid}/stat`) / 100 };
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : Number.NaN;
}

async function serveUpstream(): Promise<void> {
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  await new Promise<void>((r) => upstream.listen(80, HOST_ADDRESS, r));
  process.stdout.write('{"ready":true}\n');
}

interface Door {
  readonly name: string;
  readonly pool: Pool;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Open-loop 1 KB requests on every door at RATE/s each until `done()`; latencies per door, each request tagged `<phase>.<door>.<n>`. */
async function lightLoad(doors: readonly Door[], done: () => boolean, minMs: number, phase: string): Promise<Record<string, Latencies>> {
  const out: Record<string, Latencies> = Object.fromEntries(doors.map((d) => [d.name, { lat: [] as number[], errors: 0, samples: [] as LightSample[] }]));
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  let sent = 0;
  const interval = 1000 / RATE;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (start + sent * interval <= now) {
        doors.forEach((d, i) => {
          const at = performance.now();
          const seq = `${phase}.${i}.${sent}`;
          const r = out[d.name]!;
          inflight.push(
            d.pool
              .request({ path: d.path, method: 'POST', headers: { ...d.headers, 'x-hol-seq': seq }, body: d.body })
              .then(async (res) => {
                await res.body.dump();
                if (res.statusCode !== 200) r.errors++;
                const ms = performance.now() - at;
                r.lat.push(ms);
                r.samples.push({ seq, at: performance.timeOrigin + at, ms });
              })
              .catch(() => {
                r.errors++;
              }),
          );
        });
        sent++;
      }
      if (now - start >= minMs && done()) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(inflight);
  return out;
}

async function tokenFor(): Promise<string> {
  const res = await request(`http://127.0.0.1:${PORTS.http}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': 'demo-api-key' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'demo-client', client_secret: 'demo-secret' }).toString(),
  });
  return ((await res.body.json()) as { access_token: string }).access_token;
}

/** One heavy document to /api/protect; the answer is read to its end (not dumped: that would cut it short). */
async function sendHeavy(token: string, type: string, mb: number, body: Buffer | string, tag: string): Promise<HeavyResult> {
  const t0 = performance.now();
  const res = await request(`http://127.0.0.1:${PORTS.http}/api/protect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-resource-token': token, 'x-data-set-type': type, 'x-hol-seq': `heavy.${tag}.${type}` },
    body,
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  let answerBytes = 0;
  for await (const chunk of res.body) answerBytes += (chunk as Buffer).length;
  const t1 = performance.now();
  return { type, mb, ms: t1 - t0, status: res.statusCode, answerBytes, sentAt: performance.timeOrigin + t0, doneAt: performance.timeOrigin + t1 };
}


/**
 * The heavy client in a process of its own (the default): its bodies are built and encoded before
 * it says ready, so sending them costs the light load's driver nothing; "go <tag>" on stdin sends
 * all three at once and answers one JSON line.
 */
async function heavyClient(token: string): Promise<void> {
  const bodies = heavyDocuments().map((h) => ({ type: h.type, mb: h.dataSet.length / MiB, body: Buffer.from(envelopeOf(h)) }));
  process.stdout.write('{"ready":true}\n');
  let partial = '';
  for await (const chunk of process.stdin) {
    partial += String(chunk);
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const tag = partial.slice(0, nl).replace(/^go /, '');
      partial = partial.slice(nl + 1);
      // A failed send is reported (status 0, the error's code), not thrown: the driver prints it.
      const heavy = await Promise.all(
        bodies.map((b) =>
          sendHeavy(token, b.type, b.mb, b.body, tag).catch((err: NodeJS.ErrnoException): HeavyResult => {
            process.stderr.write(`heavy ${b.type} failed: ${err.code ?? err.name}\n`);
            return { type: b.type, mb: b.mb, ms: Number.NaN, status: 0, answerBytes: 0, sentAt: 0, doneAt: 0 };
          }),
        ),
      );
      process.stdout.write(JSON.stringify({ round: tag, heavy }) + '\n');
    }
  }
}

interface HeavySender {
  round(tag: string): Promise<HeavyResult[]>;
  close(): void;
}

async function heavySender(token: string, where: 'process' | 'driver'): Promise<HeavySender> {
  if (where === 'driver') {
    // The arrangement before: the driver stringifies and writes the 25 MB itself, between light sends.
    const HEAVY = heavyDocuments();
    return { round: (tag) => Promise.all(HEAVY.map((h) => sendHeavy(token, h.type, h.dataSet.length / MiB, envelopeOf(h), tag))), close: () => undefined };
  }
  const child = spawn(process.execPath, ['--import', TS_LOADER, SELF, 'heavy', token], { cwd: ROOT, env: process.env, stdio: ['pipe', 'pipe', 'inherit'] });
  const { lines } = await import('../test/helpers/netns.ts');
  const out = lines(child.stdout);
  await out.waitFor(/"ready":true/, 120_000);
  return {
    async round(tag) {
      child.stdin!.write(`go ${tag}\n`);
      const line = await out.waitFor(new RegExp(`"round":"${tag}"`), 1_800_000);
      return (JSON.parse(line) as { heavy: HeavyResult[] }).heavy;
    },
    close: () => child.stdin!.end(),
  };
}

/** Idle baseline, then the three heavy documents at once with the light load on; one JSON line out. */
async function drive(gatewayPid: number): Promise<void> {
  const token = await tokenFor();
  const heavyClientAt = process.env.BENCH_HEAVY_CLIENT === 'driver' ? 'driver' : 'process';
  const heavy0 = await heavySender(token, heavyClientAt);
  const light = JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: oneKilobyteJson() });
  const routed = { path: '/v1/orders', headers: { 'content-type': 'application/json', host: HOST }, body: oneKilobyteJson() };
  const doors: Door[] = [
    { name: '/api/protect', pool: new Pool(`http://127.0.0.1:${PORTS.http}`, { connections: 16 }), path: '/api/protect', headers: { 'content-type': 'application/json', 'x-resource-token': token }, body: light },
    { name: 'forward proxy', pool: new Pool(`http://127.0.0.1:${PORTS.proxy}`, { connections: 16 }), ...routed, path: `http://${HOST}/v1/orders` },
    // Straight to the upstream's address: `dpg capture` redirects it to the transparent listener.
    { name: 'transparent', pool: new Pool(`http://${HOST_ADDRESS}:80`, { connections: 16 }), ...routed },
  ];
  await lightLoad(doors, () => true, 2000, 'warm'); // warm-up
  const rssIdle = rssMb(gatewayPid);
  // The heavy documents alone first: what they cost the main thread, with nothing else to count.
  const c0 = cpuSeconds(gatewayPid);
  const s0 = sampleThreads(gatewayPid);
  const t0 = performance.now();
  await heavy0.round('alone');
  const c1 = cpuSeconds(gatewayPid);
  const threadsAlone = threadSplit(gatewayPid, s0, sampleThreads(gatewayPid));
  const alone = { main: c1.main - c0.main, all: c1.all - c0.all, wall: (performance.now() - t0) / 1000 };
  const idle = await lightLoad(doors, () => true, IDLE_MS, 'idle');
  let pending = true;
  let rssBusy = 0;
  const watch = setInterval(() => (rssBusy = Math.max(rssBusy, rssMb(gatewayPid))), 250);
  const s1 = sampleThreads(gatewayPid);
  const trace = traceLoop();
  const from = performance.timeOrigin + performance.now();
  const heavyRun = heavy0.round('loaded').finally(() => (pending = false));
  const loaded = await lightLoad(doors, () => !pending, 3000, 'loaded');
  const heavy = await heavyRun;
  const to = performance.timeOrigin + performance.now();
  trace.stop();
  const threadsLoaded = threadSplit(gatewayPid, s1, sampleThreads(gatewayPid));
  clearInterval(watch);
  heavy0.close();
  // After idleMs (3 s here) the workers are reaped: the RSS an idle sidecar returns to.
  await new Promise((r) => setTimeout(r, 5000));
  const rssAfter = rssMb(gatewayPid);
  await Promise.all(doors.map((d) => d.pool.close()));
  const result: DriverResult = {
    idle,
    loaded,
    heavy,
    rss: { idle: rssIdle, busy: rssBusy, afterReap: rssAfter },
    alone,
    threads: { alone: threadsAlone, loaded: threadsLoaded },
    heavyClient: heavyClientAt,
    loadedSpan: { from, to },
    driverTrace: { stalls: trace.stalls, gcs: trace.gcs },
  };
  process.stdout.write(JSON.stringify(result) + '\n');
}

function gatewayConfig(root: string, workers: string): string {
  const config = readFileSync(join(root, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', `listen: 127.0.0.1:${PORTS.http}`)
    .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:15001', `listen: 127.0.0.1:${PORTS.proxy}`)
    .replace('manifests: manifests', `manifests: ${join(root, 'config/manifests')}`)
    .replace('maxBodyBytes: 10485760', 'maxBodyBytes: 67108864')
    .replace('grpc:\n', 'grpc:\n  enabled: false\n')
    .replace(
      'routes: []                      # see docs/proxy.md',
      `routes:\n    - name: bench\n      match: { host: ${HOST}, port: 80 }\n      request: { manifest: customer, jobType: Mask }`,
    )
    .replace('  reverse: []', `  reverse: []\n  transparent: { listen: 127.0.0.1:${PORTS.transparent}, ipv6: false }`)
    .replace('limits:\n', `limits:\n  workers: ${workers}\n`);
  for (const want of ['name: bench', 'transparent: {', 'workers: ']) if (!config.includes(want)) throw new Error(`the bench config was not edited (${want})`);
  return config;
}

const p = (lat: number[], q: number): number => {
  const s = [...lat].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function orchestrate(): Promise<void> {
  const { createNamespace, iptablesSkipReason, lines, netnsSkipReason, sharedTempDir, userTempDir } = await import('../test/helpers/netns.ts');
  const skip = netnsSkipReason() ?? iptablesSkipReason();
  if (skip) {
    console.log(`head-of-line bench skipped (it needs a network namespace and iptables for the transparent door): ${skip}`);
    return;
  }
  await buildDist({ quiet: true });
  const MODE_SETUP: Record<string, { root: string; workers: string; label: string; flags?: string[]; heavyClient?: 'driver' }> = {
    inline: { root: ROOT, workers: '{ max: 0 }', label: 'this build, inline (limits.workers.max: 0)' },
    workers: { root: ROOT, workers: '{ idleMs: 3000 }', label: 'this build, workers (defaults: limits.workers.nice 10)' },
    nice0: { root: ROOT, workers: '{ idleMs: 3000, nice: 0 }', label: 'this build, workers at the event loop priority (limits.workers.nice: 0)' },
    oldclient: { root: ROOT, workers: '{ idleMs: 3000 }', label: "this build, workers (defaults), heavy documents sent by the light load's driver (the bench before)", heavyClient: 'driver' },
    stgc: { root: ROOT, workers: '{ idleMs: 3000 }', label: 'this build, workers (defaults), node --single-threaded-gc', flags: ['--single-threaded-gc'] },
    ...(BASE ? { base: { root: BASE, workers: '{ idleMs: 3000 }', label: `base build ${BASE}, workers (defaults)` } } : {}),
  };
  const HEAVY = heavyDocuments();
  console.log(
    `heavy: ${HEAVY.map((h) => `${h.type} ${(h.dataSet.length / MiB).toFixed(1)} MB`).join(', ')} (Mask, /api/protect, all three at once); ` +
      `light: 1 KB Mask at ${RATE} req/s on each door, open loop; idle baseline ${IDLE_MS / 1000} s`,
  );
  const ns = await createNamespace('hol', { hosts: { [HOST]: HOST_ADDRESS } });
  const dir = sharedTempDir('dpg-hol-');
  const children: ChildProcess[] = [];
  try {
    await ns.must('ip', ['addr', 'add', `${HOST_ADDRESS}/32`, 'dev', 'lo']);
    const upstream = ns.spawn(process.execPath, ['--import', TS_LOADER, SELF, 'upstream'], { cwd: ROOT });
    children.push(upstream);
    await lines(upstream.stdout).waitFor(/"ready":true/, 60_000);
    const captureConfig = join(dir, 'capture.yaml');
    writeFileSync(captureConfig, gatewayConfig(ROOT, '{ max: 0 }'));
    await ns.must(process.execPath, [join(ROOT, 'bin/dpg.js'), 'capture', '--include-ports', '80', '-c', captureConfig], { cwd: ROOT });
    const results: ModeResult[] = [];
    for (const mode of MODES) {
      const setup = MODE_SETUP[mode];
      if (!setup) throw new Error(`unknown mode ${mode} (BENCH_BASE unset?)`);
      const file = join(dir, `gateway-${mode}.yaml`);
      writeFileSync(file, gatewayConfig(setup.root, setup.workers));
      const home = userTempDir(10001);
      const flags = [...(setup.flags ?? []), ...(process.env.BENCH_GATEWAY_FLAGS ?? '').split(' ').filter((f) => f !== '')];
      // hol-trace.mjs inside the gateway: its loop stalls, GC pauses and per-request times (BENCH_TRACE=0: none).
      if (TRACE) flags.push('--import', join(ROOT, 'bench/hol-trace.mjs'));
      const traceFile = join(home, 'hol-trace.json');
      const gw = ns.spawn(process.execPath, [...flags, join(setup.root, 'bin/dpg.js'), 'serve', '-c', file], {
        uid: 10001,
        cwd: setup.root,
        env: { HOME: home, TMPDIR: home, DPG_DATA_DIR: join(home, 'data'), DPG_LOG_LEVEL: 'info', NODE_ENV: 'bench', ...(TRACE ? { DPG_HOL_TRACE: traceFile } : {}) },
      });
      children.push(gw);
      gw.stderr?.on('data', (d: Buffer) => process.stderr.write(`[gateway ${mode}] ${d}`));
      const exited = new Promise<never>((_, reject) => gw.once('exit', (code) => reject(new Error(`the ${mode} gateway exited (${code}) before it was ready`))));
      await Promise.race([lines(gw.stdout).waitFor(/"msg":"ready"/, 120_000), exited]);
      exited.catch(() => undefined);
      const before = loadavg();
      const knobs = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('BENCH_') && e[1] !== undefined));
      if (setup.heavyClient) knobs.BENCH_HEAVY_CLIENT = setup.heavyClient;
      const driver = ns.spawn(process.execPath, ['--import', TS_LOADER, SELF, 'driver', String(gw.pid)], { cwd: ROOT, env: knobs });
      driver.stderr?.on('data', (d: Buffer) => process.stderr.write(`[driver] ${d}`));
      const line = await lines(driver.stdout).waitFor(/^\{"idle"/, 1_800_000);
      const load: [string, string] = [before, loadavg()];
      gw.kill('SIGTERM');
      await new Promise((r) => (gw.exitCode !== null ? r(undefined) : gw.once('exit', r)));
      const trace = TRACE && existsSync(traceFile) ? (JSON.parse(readFileSync(traceFile, 'utf8')) as GatewayTrace) : undefined;
      results.push({ label: setup.label, r: JSON.parse(line) as DriverResult, load, trace });
    }
    report(results);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await ns.close();
  }
}

interface ModeResult {
  readonly label: string;
  readonly r: DriverResult;
  readonly load: [string, string];
  readonly trace?: GatewayTrace;
}

function report(results: ModeResult[]): void {
  for (const { label, r, load, trace } of results) {
    console.log(`\n${label}   (load average before ${load[0]}, after ${load[1]})`);
    // Heavy documents shed (503) or failed leave nothing to measure head of line against.
    const valid = r.heavy.every((h) => h.status === 200);
    if (!valid) console.log(`  heavy documents answered ${r.heavy.map((h) => `${h.type} ${h.status}`).join(', ')}: nothing was protected beside the light load, so no verdict`);
    console.log(`  ${'door'.padEnd(14)} ${'idle p99'.padStart(10)} ${'loaded p99'.padStart(11)} ${'ratio'.padStart(7)}   loaded p50   idle n / loaded n / errors`);
    for (const [door, idle] of Object.entries(r.idle)) {
      const loaded = r.loaded[door]!;
      const ratio = p(loaded.lat, 0.99) / p(idle.lat, 0.99);
      console.log(
        `  ${door.padEnd(14)} ${p(idle.lat, 0.99).toFixed(1).padStart(7)} ms ${p(loaded.lat, 0.99).toFixed(1).padStart(8)} ms ${ratio.toFixed(2).padStart(6)}×   ` +
          `${p(loaded.lat, 0.5).toFixed(1).padStart(7)} ms   ${idle.lat.length} / ${loaded.lat.length} / ${idle.errors + loaded.errors}   goal ≤ 2×: ${!valid ? 'NOT MEASURED' : ratio <= 2 ? 'MET' : 'NOT MET'}`,
      );
    }
    for (const h of [...r.heavy].sort((a, b) => a.type.localeCompare(b.type))) {
      console.log(`  heavy ${h.type.padEnd(4)} ${h.mb.toFixed(1)} MB: ${(h.ms / 1000).toFixed(1)} s (${(h.mb / (h.ms / 1000)).toFixed(2)} MB/s) status ${h.status}, answer ${(h.answerBytes / MiB).toFixed(1)} MB`);
    }
    const total = r.heavy.reduce((s, h) => s + h.mb, 0);
    const span = Math.max(...r.heavy.map((h) => h.ms));
    console.log(`  heavy total ${total.toFixed(1)} MB in ${(span / 1000).toFixed(1)} s: ${(total / (span / 1000)).toFixed(2)} MB/s`);
    console.log(`  gateway RSS: idle ${r.rss.idle} MB, peak while heavy ${r.rss.busy} MB, 5 s after (workers reaped) ${r.rss.afterReap} MB`);
    const a = r.alone;
    console.log(
      `  heavy documents alone (no light load): ${(a.wall).toFixed(1)} s; CPU of the main thread ${a.main.toFixed(2)} s (${((a.main / total) * 1000).toFixed(0)} ms per MB), ` +
        `of the other threads (workers, GC helpers) ${(a.all - a.main).toFixed(2)} s; ${(total / a.all).toFixed(2)} MB per CPU second`,
    );
    if (r.threads) {
      console.log(`  threads, heavy alone:  ${formatSplit(r.threads.alone)}`);
      console.log(`  threads, heavy + light: ${formatSplit(r.threads.loaded)}`);
    }
    console.log(`  heavy client: ${r.heavyClient === 'process' ? 'a process of its own' : "the light load's driver (BENCH_HEAVY_CLIENT=driver)"}`);
    if (trace) {
      const samples = Object.fromEntries(Object.entries(r.loaded).map(([door, l]) => [door, l.samples]));
      for (const line of breakdown({ loaded: samples, span: r.loadedSpan, gateway: trace, driver: r.driverTrace })) console.log(line);
    }
  }
}

const role = process.argv[2];
if (role === 'upstream') await serveUpstream();
else if (role === 'driver') await drive(Number(process.argv[3]));
else if (role === 'heavy') await heavyClient(process.argv[3]!);
else await orchestrate();
