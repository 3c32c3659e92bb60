// Added latency of the egress proxy for 1 KB JSON POSTs at a constant 500 and 1,000 req/s, p50/p99,
// next to direct calls, the proxy in pass-through, and nginx as a pass-through reverse proxy.
// Upstream, proxy and load generator run in separate processes; the generator is open-loop
// (sends follow the clock, not the answers; latency is measured from each actual send).
//
// Every scenario gets one unrecorded warm-up run first (the proxy's first traffic compiles and
// optimises its hot paths; without it the first round's p99 was 20-70 ms).
//
//   node --import ./scripts/ts-loader.mjs bench/proxy.bench.ts            (about a minute)
//
// Diagnosis knobs (environment): PROXY_BENCH_MS (round length, default 2000), PROXY_BENCH_ROUNDS,
// PROXY_BENCH_RATES (e.g. 1000), PROXY_BENCH_ONLY (scenario name fragment), PROXY_BENCH_VERBOSE=1
// (every round, plus GC pauses and event-loop delay of the upstream and proxy children),
// PROXY_BENCH_PROXY_FLAGS (node flags for the proxy child, e.g. --trace-gc), PROXY_BENCH_PROFILE=/tmp/p
// (CPU profile and allocation sampling of both children, written when they stop).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { maskRoute, startBenchProxy } from './bench-proxy.ts';
import { writeNginxPassThrough } from './nginx-conf.ts';
import { serveOkUpstream } from './ok-upstream.ts';
import { constantRate, oneKilobyteJson, type Percentiles } from './open-loop.ts';

/** Children load TypeScript the same way `npm run bench` does. */
const TS_LOADER = new URL('../scripts/ts-loader.mjs', import.meta.url).href;

const SELF = fileURLToPath(import.meta.url);
const RATES = (process.env.PROXY_BENCH_RATES ?? '500,1000').split(',').map(Number);
const WARMUP_MS = 500;
/** One unrecorded run per scenario before the first round. */
const FIRST_WARMUP_MS = 1000;
const MEASURE_MS = Number(process.env.PROXY_BENCH_MS ?? 2000);
/** Scenarios run interleaved, several rounds; the median round is reported (shared CI machines are noisy). */
const ROUNDS = Number(process.env.PROXY_BENCH_ROUNDS ?? 3);
/** Diagnosis: print every round, and pass extra flags (e.g. --trace-gc, --cpu-prof) to the proxy child. */
const VERBOSE = process.env.PROXY_BENCH_VERBOSE === '1';
const PROXY_FLAGS = (process.env.PROXY_BENCH_PROXY_FLAGS ?? '').split(' ').filter((f) => f !== '');

// ---- child processes -------------------------------------------------------------------------

async function serveUpstream(): Promise<void> {
  if (VERBOSE) reportPauses('upstream');
  serveOkUpstream();
}

async function serveProxy(upstreamPort: number): Promise<void> {
  const proxy = await startBenchProxy(
    {
      routes: [maskRoute('bench-mask', '127.0.0.1', upstreamPort)],
      reverse: [{ listen: { host: '127.0.0.1', port: 0 }, upstream: `http://127.0.0.1:${upstreamPort}` }],
    },
    mkdtempSync(join(tmpdir(), 'dpg-bench-')),
  );
  process.stdout.write(JSON.stringify({ port: proxy.reverse[0].port }) + '\n');
  if (VERBOSE) reportPauses('proxy');
}

/** Diagnosis: GC pauses and event-loop delay of this process, printed to stderr when it is stopped. */
async function reportPauses(who: string): Promise<void> {
  const { PerformanceObserver, monitorEventLoopDelay } = await import('node:perf_hooks');
  const gcs: number[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e.duration);
  }).observe({ entryTypes: ['gc'] });
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let writeProfiles = async (): Promise<void> => {};
  if (process.env.PROXY_BENCH_PROFILE) {
    // Allocation sampling that keeps what minor and major GCs collected: where the garbage comes from.
    const { Session } = await import('node:inspector/promises');
    const session = new Session();
    session.connect();
    await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true } as object);
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    writeProfiles = async () => {
      const { writeFileSync } = await import('node:fs');
      const heap = await session.post('HeapProfiler.stopSampling');
      writeFileSync(`${process.env.PROXY_BENCH_PROFILE}-${who}.heapprofile`, JSON.stringify(heap.profile));
      const cpu = await session.post('Profiler.stop');
      writeFileSync(`${process.env.PROXY_BENCH_PROFILE}-${who}.cpuprofile`, JSON.stringify(cpu.profile));
    };
  }
  process.once('SIGTERM', async () => {
    await writeProfiles();
    gcs.sort((a, b) => b - a);
    const total = gcs.reduce((a, b) => a + b, 0);
    process.stderr.write(
      `[${who}] gc: ${gcs.length} pauses, total ${total.toFixed(1)} ms, >1 ms: ${gcs.filter((d) => d > 1).length}, worst ${gcs.slice(0, 5).map((d) => d.toFixed(2)).join(' ')}; ` +
        `loop delay p50 ${(loop.percentile(50) / 1e6).toFixed(2)} p99 ${(loop.percentile(99) / 1e6).toFixed(2)} max ${(loop.max / 1e6).toFixed(2)} ms\n`,
    );
    process.exit(0);
  });
}

function startChild(args: string[], flags: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '--import', TS_LOADER, SELF, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let port: number | undefined;
    child.stdout?.on('data', (d: Buffer) => {
      // After the port line, the child's stdout (e.g. --trace-gc) is passed on when diagnosing.
      if (port !== undefined) {
        if (VERBOSE) process.stderr.write(d);
        return;
      }
      out += d.toString();
      const match = /^\{"port":(\d+)\}$/m.exec(out);
      if (match === null) return;
      port = Number(match[1]);
      if (VERBOSE) process.stderr.write(out.replace(match[0], ''));
      resolve({ child, port });
    });
    child.once('exit', (c) => reject(new Error(`child ${args[0]} exited with ${c}`)));
  });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** nginx as a keep-alive pass-through reverse proxy, or undefined when it is not installed. */
async function startNginx(upstreamPort: number): Promise<{ child: ChildProcess; port: number } | undefined> {
  const probe = spawnSync('nginx', ['-v'], { encoding: 'utf8' });
  if (probe.error) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'dpg-bench-nginx-'));
  const port = await freePort();
  const args = writeNginxPassThrough(dir, port, upstreamPort);
  const child = spawn('nginx', args, { stdio: 'ignore' });
  // Wait until it accepts connections.
  const pool = new Pool(`http://127.0.0.1:${port}`);
  for (let i = 0; i < 50; i++) {
    try {
      const r = await pool.request({ path: '/', method: 'GET' });
      await r.body.dump();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await pool.close();
  return { child, port };
}

// ---- load generator --------------------------------------------------------------------------

/** Open-loop load at `rate` against one of the scenario ports (bench/open-loop.ts). */
function loadAt(port: number, path: string, rate: number, body: string, measureMs = MEASURE_MS): Promise<Percentiles> {
  return constantRate({ origin: `http://127.0.0.1:${port}`, path, rate, body, warmupMs: WARMUP_MS, measureMs });
}

const SCENARIO = {
  direct: 'direct to upstream (baseline)',
  nginx: 'nginx pass-through',
  pass: 'dpg proxy pass-through',
  mask: 'dpg proxy + Mask (1 KB JSON)',
};

async function main(): Promise<void> {
  const body = oneKilobyteJson();
  const upstream = await startChild(['serve-upstream']);
  const proxy = await startChild(['serve-proxy', String(upstream.port)], PROXY_FLAGS);
  const nginx = await startNginx(upstream.port);

  const only = process.env.PROXY_BENCH_ONLY;
  const scenarios: { name: string; port: number; path: string }[] = [
    { name: SCENARIO.direct, port: upstream.port, path: '/protect/x' },
    { name: SCENARIO.nginx, port: nginx?.port ?? -1, path: '/pass/x' },
    { name: SCENARIO.pass, port: proxy.port, path: '/pass/x' },
    { name: SCENARIO.mask, port: proxy.port, path: '/protect/x' },
  ].filter((s) => only === undefined || s.name === SCENARIO.direct || s.name.includes(only));

  console.log(`proxy bench: 1 KB JSON POST, open-loop constant rate, median of ${ROUNDS} interleaved rounds of ${MEASURE_MS / 1000} s (after ${WARMUP_MS / 1000} s warm-up)`);
  if (!nginx) console.log('nginx skipped: not installed (apt-get update && apt-get install -y nginx-light   or   nginx)');
  for (const s of scenarios) if (s.port !== -1) await loadAt(s.port, s.path, Math.max(...RATES), body, FIRST_WARMUP_MS);
  const rounds = new Map<string, Percentiles[]>();
  for (const rate of RATES) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of scenarios) {
        if (s.port === -1) continue;
        const key = `${s.name}@${rate}`;
        const r = await loadAt(s.port, s.path, rate, body);
        if (VERBOSE) console.log(`  round ${round} ${key}: p50 ${r.p50.toFixed(3)} p99 ${r.p99.toFixed(3)} max ${r.max.toFixed(3)}`);
        rounds.set(key, [...(rounds.get(key) ?? []), r]);
      }
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const results = new Map<string, Percentiles>();
  for (const [key, rs] of rounds) {
    results.set(key, { p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), max: median(rs.map((r) => r.max)), maxAtMs: 0, errors: rs.reduce((a, r) => a + r.errors, 0) });
  }
  const fmt = (n: number): string => n.toFixed(3).padStart(8);
  console.log(`${'scenario'.padEnd(32)} ${'rate'.padStart(6)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'+p50'.padStart(8)} ${'+p99'.padStart(8)} errors`);
  for (const rate of RATES) {
    const base = results.get(`${scenarios[0].name}@${rate}`) as Percentiles;
    for (const s of scenarios) {
      const r = results.get(`${s.name}@${rate}`);
      if (!r) continue;
      console.log(`${s.name.padEnd(32)} ${String(rate).padStart(6)} ${fmt(r.p50)} ${fmt(r.p99)} ${fmt(r.p50 - base.p50)} ${fmt(r.p99 - base.p99)} ${r.errors}`);
    }
  }
  const at1k = (name: string): Percentiles | undefined => results.get(`${name}@1000`);
  const base1k = at1k(SCENARIO.direct) as Percentiles;
  const mask1k = at1k(SCENARIO.mask);
  const pass1k = at1k(SCENARIO.pass);
  const nginx1k = at1k(SCENARIO.nginx);
  if (mask1k) console.log(`goal: added p99 with Mask at 1,000 req/s <= 2 ms: ${(mask1k.p99 - base1k.p99).toFixed(3)} ms`);
  if (nginx1k && pass1k) {
    const ratio = (pass1k.p99 - base1k.p99) / Math.max(0.001, nginx1k.p99 - base1k.p99);
    console.log(`goal: pass-through added p99 <= 2x nginx's: dpg +${(pass1k.p99 - base1k.p99).toFixed(3)} ms vs nginx +${(nginx1k.p99 - base1k.p99).toFixed(3)} ms (x${ratio.toFixed(2)})`);
  }
  const children = [upstream.child, proxy.child, nginx?.child].filter((c) => c !== undefined);
  await Promise.all(children.map((c) => new Promise((r) => { c.once('exit', r); c.kill('SIGTERM'); })));
}

const [mode, arg] = process.argv.slice(2);
if (mode === 'serve-upstream') await serveUpstream();
else if (mode === 'serve-proxy') await serveProxy(Number(arg));
else await main();
