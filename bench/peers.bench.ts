// The peer table: dpg beside nginx (a pass-through reverse proxy) and mitmproxy (with a masking
// addon, bench/peers/mitm_mask.py) on one 1 KB JSON workload, in one run, so the machine's drift
// hits every row alike. Each peer runs as its own process, started from nothing:
//
//   - added p50/p99 at 1,000 req/s (open-loop, bench/open-loop.ts), against direct calls to the upstream;
//   - max req/s: 32 keep-alive connections sending back to back for a few seconds;
//   - CPU seconds per 10,000 requests, from /proc (utime + stime of the peer's process tree) over
//     the 1,000 req/s runs;
//   - idle RSS one second after the peer first answered, before any load (process tree);
//   - start time: spawn to the first request answered through it.
//
// dpg runs as `dpg serve` from the build (bin/dpg.js) with its forward proxy (routed Mask and
// pass-through) and a reverse listener. The bench installs nothing: a missing peer is named with
// the package that provides it.
//
// After the table it judges issue 21's goals on this run's own figures, each MET or NOT MET:
// pass-through added p99 ≤ 2× nginx's (floor +0.5 ms), CPU per pass-through request ≤ 2× nginx's,
// routed Mask added p99 ≤ 2 ms.
//
//   npm run bench -- peers                  (about two minutes; PEERS_BENCH_MS, PEERS_BENCH_ROUNDS;
//   PEERS_CODE_CACHE=both adds a second dpg started from the ES module build, DPG_CODE_CACHE=off,
//   and prints its max req/s and CPU beside the code-cache build's)

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { freePort, writeDpgServeConfig } from './dpg-serve.ts';
import { writeNginxPassThrough } from './nginx-conf.ts';
import { cpuSeconds, rssMb } from './proc-stats.ts';
import { serveOkUpstream } from './ok-upstream.ts';
import { stopChildren } from './stop-children.ts';
import { constantRate, oneKilobyteJson, type Percentiles } from './open-loop.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const MEASURE_MS = Number(process.env.PEERS_BENCH_MS ?? 3000);
const ROUNDS = Number(process.env.PEERS_BENCH_ROUNDS ?? 3);
const RATE = 1000;
const WARMUP_MS = 500;
const MAX_CONNECTIONS = 32;
const MAX_MS = 3000;
/** `both`: dpg also from its ES module build (DPG_CODE_CACHE=off), rows beside the code-cache build's. */
const CODE_CACHE_BOTH = process.env.PEERS_CODE_CACHE === 'both';
const ESM_LABEL = 'dpg ES module build (DPG_CODE_CACHE=off)';

// ---- the upstream (a child process: its CPU is not the peers') ----------------------------------

function startUpstream(): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', new URL('../scripts/ts-loader.mjs', import.meta.url).href, SELF, 'serve-upstream'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (c) => reject(new Error(`upstream exited with ${c}`)));
  });
}

// ---- the peers ----------------------------------------------------------------------------------

interface Target {
  /** Row name in the table. */
  readonly name: string;
  readonly origin: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
}

interface Peer {
  readonly name: string;
  readonly child: ChildProcess;
  readonly startMs: number;
  readonly idleRssMb: number;
  readonly targets: readonly Target[];
  readonly dir: string;
}

async function answers(target: Target, body: string): Promise<boolean> {
  const pool = new Pool(target.origin, { connections: 1 });
  try {
    const r = await pool.request({ path: target.path, method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body });
    await r.body.dump();
    return r.statusCode === 200;
  } catch {
    return false;
  } finally {
    await pool.close();
  }
}

/** Spawns a peer and times it until `first` answers through it; then one idle second for its RSS. */
async function launch(name: string, dir: string, command: string, args: string[], env: NodeJS.ProcessEnv, targets: Target[], body: string): Promise<Peer> {
  const startedAt = performance.now();
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${stderr.slice(0, 500)}`);
    if (await answers(targets[0], body)) break;
    if (performance.now() - startedAt > 30_000) throw new Error(`${name} did not answer within 30 s: ${stderr.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const startMs = performance.now() - startedAt;
  await new Promise((r) => setTimeout(r, 1000));
  return { name, child, startMs, idleRssMb: rssMb(child.pid!), targets, dir };
}

function missing(command: string, pkg: string): string | undefined {
  const probe = spawnSync(command, ['--version'], { encoding: 'utf8' });
  return probe.error ? `${command} not found: apt-get update && apt-get install -y ${pkg}` : undefined;
}

async function startNginx(upstreamPort: number, body: string): Promise<Peer> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-peers-nginx-'));
  const port = await freePort();
  const args = writeNginxPassThrough(dir, port, upstreamPort);
  const target = { name: 'nginx 1.22 reverse proxy, pass-through', origin: `http://127.0.0.1:${port}`, path: '/pass/x' };
  return launch('nginx', dir, 'nginx', args, {}, [target], body);
}

async function startMitmproxy(upstreamPort: number, body: string): Promise<Peer> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-peers-mitm-'));
  const port = await freePort();
  const target = { name: 'mitmproxy 8 reverse + Mask addon', origin: `http://127.0.0.1:${port}`, path: '/protect/x' };
  const args = ['--mode', `reverse:http://127.0.0.1:${upstreamPort}`, '--listen-host', '127.0.0.1', '--listen-port', String(port), '-q', '-s', join(ROOT, 'bench/peers/mitm_mask.py'), '--set', `confdir=${dir}`];
  return launch('mitmproxy', dir, 'mitmdump', args, {}, [target], body);
}

/** `esm`: started from the ES module build (DPG_CODE_CACHE=off) instead of dist/serve.cjs with its code cache. */
async function startDpg(upstreamPort: number, body: string, esm = false): Promise<Peer> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-peers-dpg-'));
  const dpg = await writeDpgServeConfig(dir, upstreamPort);
  const label = esm ? ESM_LABEL : 'dpg';
  const viaProxy = { origin: `http://127.0.0.1:${dpg.proxyPort}`, headers: { host: `127.0.0.1:${upstreamPort}` } };
  const targets: Target[] = [
    { name: `${label} forward proxy + Mask`, ...viaProxy, path: `http://127.0.0.1:${upstreamPort}/protect/x` },
    { name: `${label} forward proxy, pass-through`, ...viaProxy, path: `http://127.0.0.1:${upstreamPort}/pass/x` },
    { name: `${label} reverse listener + Mask`, origin: `http://127.0.0.1:${dpg.reversePort}`, path: '/protect/x' },
  ];
  return launch(label, dir, process.execPath, dpg.args, esm ? { ...dpg.env, DPG_CODE_CACHE: 'off' } : dpg.env, targets, body);
}

// ---- load ---------------------------------------------------------------------------------------

/**
 * Closed loop: MAX_CONNECTIONS connections sending back to back; completed 200s per second. 503s are
 * counted apart: dpg sheds load at its overload bounds (limits.overload) by design.
 */
async function maxRate(target: Target, body: string): Promise<{ rps: number; errors: number; shed: number }> {
  const pool = new Pool(target.origin, { connections: MAX_CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { 'content-type': 'application/json', ...target.headers };
  let done = 0;
  let errors = 0;
  let shed = 0;
  const warmEnd = performance.now() + WARMUP_MS;
  let measureStart = 0;
  const end = warmEnd + MAX_MS;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      try {
        const r = await pool.request({ path: target.path, method: 'POST', headers, body });
        await r.body.dump();
        if (performance.now() >= warmEnd) {
          if (measureStart === 0) measureStart = performance.now();
          if (r.statusCode === 200) done++;
          else if (r.statusCode === 503) shed++;
          else errors++;
        }
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: MAX_CONNECTIONS }, worker));
  await pool.close();
  return { rps: done / ((performance.now() - measureStart) / 1000), errors, shed };
}

interface Row {
  readonly target: Target;
  readonly peer?: Peer;
  latency: Percentiles[];
  cpu: number;
  requests: number;
  max?: { rps: number; errors: number; shed: number };
}

async function main(): Promise<void> {
  const body = oneKilobyteJson();
  const absent = [missing('nginx', 'nginx-light'), missing('mitmdump', 'mitmproxy')].filter((m) => m !== undefined);
  if (spawnSync(process.execPath, ['-e', 'require("fs").accessSync("dist/cli.js")'], { cwd: ROOT }).status !== 0) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  const upstream = await startUpstream();
  const peers: Peer[] = [];
  peers.push(await startDpg(upstream.port, body));
  if (CODE_CACHE_BOTH) peers.push(await startDpg(upstream.port, body, true));
  if (!missing('nginx', 'nginx-light')) peers.push(await startNginx(upstream.port, body));
  if (!missing('mitmdump', 'mitmproxy')) peers.push(await startMitmproxy(upstream.port, body));
  for (const line of absent) console.log(`peer skipped: ${line}`);

  const direct: Target = { name: 'direct to upstream (baseline)', origin: `http://127.0.0.1:${upstream.port}`, path: '/protect/x' };
  const rows: Row[] = [{ target: direct, latency: [], cpu: 0, requests: 0 }];
  for (const peer of peers) for (const target of peer.targets) rows.push({ target, peer, latency: [], cpu: 0, requests: 0 });

  const load = (row: Row, ms: number): Promise<Percentiles> =>
    constantRate({ origin: row.target.origin, path: row.target.path, headers: row.target.headers, rate: RATE, body, warmupMs: WARMUP_MS, measureMs: ms });
  console.log(`peers bench: 1 KB JSON POST; ${RATE} req/s open-loop, median of ${ROUNDS} interleaved rounds of ${MEASURE_MS / 1000} s; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const row of rows) await load(row, 1000); // first traffic compiles the hot paths: not recorded
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of rows) {
      const pid = row.peer?.child.pid ?? upstream.child.pid!;
      const before = cpuSeconds(pid);
      const r = await load(row, MEASURE_MS);
      row.cpu += cpuSeconds(pid) - before;
      row.requests += (RATE * (WARMUP_MS + MEASURE_MS)) / 1000;
      row.latency.push(r);
    }
  }
  for (const row of rows) row.max = await maxRate(row.target, body);

  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = { p50: median(rows[0].latency.map((r) => r.p50)), p99: median(rows[0].latency.map((r) => r.p99)) };
  console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('\n| peer | added p50 @1k/s | added p99 @1k/s | max req/s (32 conns) | CPU s / 10k req | idle RSS | start to first answer | errors @1k/s | errors at max (503 shed) |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const p50 = median(row.latency.map((r) => r.p50));
    const p99 = median(row.latency.map((r) => r.p99));
    const errors = row.latency.reduce((a, r) => a + r.errors, 0);
    const isBase = row === rows[0];
    const cells = [
      row.target.name,
      isBase ? `p50 ${p50.toFixed(2)} ms` : `+${(p50 - base.p50).toFixed(2)} ms`,
      isBase ? `p99 ${p99.toFixed(2)} ms` : `+${(p99 - base.p99).toFixed(2)} ms`,
      (row.max?.rps ?? 0).toFixed(0),
      isBase ? `${((row.cpu / row.requests) * 10_000).toFixed(2)} (upstream)` : ((row.cpu / row.requests) * 10_000).toFixed(2),
      row.peer ? `${row.peer.idleRssMb.toFixed(1)} MB` : '',
      row.peer ? `${row.peer.startMs.toFixed(0)} ms` : '',
      String(errors),
      `${row.max?.errors ?? 0} (${row.max?.shed ?? 0})`,
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
  console.log('\nCPU for dpg rows is its one process; a dpg row\'s idle RSS and start time are the process\'s (shared by its three rows).');

  // The goals of issue 21, judged on this run's own baseline (docs/performance.md, peer table).
  const find = (fragment: string): Row | undefined => rows.find((r) => r.target.name.includes(fragment));
  const addedP99 = (row: Row): number => median(row.latency.map((r) => r.p99)) - base.p99;
  const cpuPer10k = (row: Row): number => (row.cpu / row.requests) * 10_000;
  const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');
  const passRow = find('dpg forward proxy, pass-through');
  const maskRow = find('dpg forward proxy + Mask');
  const nginxRow = find('nginx');
  console.log('\nGoals (issue 21):');
  if (passRow && nginxRow) {
    const limit = Math.max(2 * addedP99(nginxRow), 0.5);
    console.log(`  pass-through added p99 ≤ 2× nginx's (floor +0.5 ms): +${addedP99(passRow).toFixed(2)} ms against ≤ +${limit.toFixed(2)} ms: ${verdict(addedP99(passRow) <= limit)}`);
    const ratio = cpuPer10k(passRow) / cpuPer10k(nginxRow);
    console.log(`  CPU per pass-through request ≤ 2× nginx's: ${cpuPer10k(passRow).toFixed(2)} against ${cpuPer10k(nginxRow).toFixed(2)} s / 10k (${ratio.toFixed(2)}×): ${verdict(ratio <= 2)}`);
  } else console.log('  pass-through added p99 and CPU against nginx: not judged (nginx missing: apt-get install -y nginx-light)');
  if (maskRow) console.log(`  routed Mask added p99 ≤ 2 ms: +${addedP99(maskRow).toFixed(2)} ms: ${verdict(addedP99(maskRow) <= 2)}`);

  if (CODE_CACHE_BOTH) {
    // Same sources, two ways of loading them: dist/serve.cjs through vm.Script with the code cache, or dist/cli.js.
    console.log('\nCode cache against the ES module build (same run; ratio above 1: the code-cache build does more):');
    for (const kind of ['forward proxy + Mask', 'forward proxy, pass-through', 'reverse listener + Mask']) {
      const cached = find(`dpg ${kind}`);
      const esm = find(`${ESM_LABEL} ${kind}`);
      if (!cached?.max || !esm?.max) continue;
      console.log(
        `  ${kind}: max req/s ${cached.max.rps.toFixed(0)} against ${esm.max.rps.toFixed(0)} (${(cached.max.rps / esm.max.rps).toFixed(2)}×); ` +
          `CPU ${cpuPer10k(cached).toFixed(2)} against ${cpuPer10k(esm).toFixed(2)} s / 10k (${(cpuPer10k(cached) / cpuPer10k(esm)).toFixed(2)}×); ` +
          `added p99 +${addedP99(cached).toFixed(2)} against +${addedP99(esm).toFixed(2)} ms`,
      );
    }
  }

  await stopChildren([upstream.child, ...peers.map((p) => p.child)]);
  for (const p of peers) rmSync(p.dir, { recursive: true, force: true });
}

if (process.argv[2] === 'serve-upstream') serveOkUpstream();
else await main();
