// What one pass-through request costs the forward proxy, counted rather than timed (the machine is
// shared, so wall time means little): CPU µs per request of the proxy's process (from /proc), and
// from V8's own GC trace (--trace-gc-nvp) the bytes allocated and promoted per request and the
// scavenges and full GCs per 10,000 requests. "Promoted" counts what scavenges copied into old
// space; objects V8 pretenures (allocates in old space directly) are not in it.
//
// Each row is its own process started from nothing, sent 1 KB JSON POSTs through an absolute-form
// target, as apps send with HTTP_PROXY, one after another on one keep-alive connection (so the
// counts do not depend on how busy the machine is; PROXY_CPU_SEQUENTIAL=0: open loop at 1,000 req/s):
//   - dpg serve (the build, bin/dpg.js, shipped config), pass-through and routed Mask;
//   - floors in the same run, each a few lines of node: what a forward proxy on node:http costs
//     with undici's dispatch(), with undici's stream() (dpg before issue 21), with node:http's own
//     keep-alive Agent, with pooled `net` sockets upstream read by node's own llhttp (HTTPParser,
//     as node:http's client uses it: the floor of a raw pass-through after node:http read the
//     request), and a raw TCP relay (no HTTP parsing at all: the floor of a `net` pipe);
//   - nginx as a pass-through reverse proxy when it is installed.
//
//   npm run build && npm run bench -- proxy-cpu      (about a minute; PROXY_CPU_MS, PROXY_CPU_ROUNDS,
//   PROXY_CPU_ONLY=<row name fragment>; PROXY_CPU_PRETENURING=1 adds dpg with V8's allocation-site
//   pretenuring left on; PROXY_CPU_COMPARE=<another checkout, built> adds that build's rows;
//   PROXY_CPU_ESM=1 adds dpg started from its ES module build, DPG_CODE_CACHE=off;
//   PROXY_CPU_PROFILE=<dir> runs each dpg under --cpu-prof and prints where its samples fell)

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, Agent as HttpAgent, type ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, Pool, type Dispatcher } from 'undici';
import { writeDpgServeConfig, freePort } from './dpg-serve.ts';
import { writeNginxPassThrough } from './nginx-conf.ts';
import { serveOkUpstream } from './ok-upstream.ts';
import { constantRate, oneKilobyteJson, type Percentiles } from './open-loop.ts';
import { cpuSeconds } from './proc-stats.ts';
import { summariseProfiles } from './cpu-profile-top.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const TS_LOADER = new URL('../scripts/ts-loader.mjs', import.meta.url).href;
const RATE = 1000;
const MEASURE_MS = Number(process.env.PROXY_CPU_MS ?? 5000);
const ROUNDS = Number(process.env.PROXY_CPU_ROUNDS ?? 1);
const GC_FLAGS = ['--trace-gc-nvp'];
/**
 * Default: the requests one after another on one keep-alive connection (as many as 1,000 req/s
 * would send in the round), so each row's counts do not depend on how busy the machine is: with
 * one request in flight, what survives a scavenge is what the code keeps, not a queue. 0: open loop
 * at 1,000 req/s, where a slow row builds a queue and everything queued survives.
 */
const SEQUENTIAL = process.env.PROXY_CPU_SEQUENTIAL !== '0';

// ---- floors: minimal forward proxies on node (child processes) ---------------------------------

/** The upstream of every floor: the bench's one upstream, whatever the absolute-form target says. */
function floorServer(upstreamPort: number, kind: string): void {
  const origin = `http://127.0.0.1:${upstreamPort}`;
  if (kind === 'tcp-relay') {
    const server = createTcpServer((client) => {
      const up = connect(upstreamPort, '127.0.0.1');
      client.pipe(up).pipe(client);
      client.on('error', () => up.destroy());
      up.on('error', () => client.destroy());
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n'));
    return;
  }
  if (kind === 'llhttp-upstream') {
    llhttpUpstreamFloor(upstreamPort);
    return;
  }
  const agent = new Agent({ keepAliveTimeout: 30_000, pipelining: 1 });
  const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 256 });
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const path = new URL(req.url ?? '/').pathname;
    const headers = { ...req.headers };
    delete headers.connection;
    if (kind === 'http-agent') {
      const up = httpRequest({ host: '127.0.0.1', port: upstreamPort, path, method: req.method, headers, agent: httpAgent }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    } else if (kind === 'undici-stream') {
      agent
        .stream({ origin, path, method: req.method as Dispatcher.HttpMethod, headers: headers as Record<string, string>, body: req }, ({ statusCode, headers: h }) => {
          res.writeHead(statusCode, h as Record<string, string>);
          return res;
        })
        .catch(() => res.destroy());
    } else {
      // undici-dispatch: a handler that writes straight to the response.
      agent.dispatch({ origin, path, method: req.method as Dispatcher.HttpMethod, headers: headers as Record<string, string>, body: req }, {
        onConnect() {},
        onHeaders(statusCode, raw, resume) {
          res.writeHead(statusCode, raw.map(String));
          res.on('drain', resume);
          return true;
        },
        onData(chunk) {
          return res.write(chunk);
        },
        onComplete() {
          res.end();
        },
        onError() {
          res.destroy();
        },
      });
    }
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n'));
}

/** node's binding of llhttp, as node:http's own client drives it (lib/_http_common.js). */
interface LlhttpParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(chunk: Buffer): number | Error;
  [callback: number]: unknown;
}
interface LlhttpBinding {
  HTTPParser: { new (): LlhttpParser; RESPONSE: number; kOnHeadersComplete: number; kOnBody: number; kOnMessageComplete: number };
}

/**
 * A floor, not a proxy: node:http reads the request, its head is written and its body piped to a
 * pooled upstream `net` socket (head and a first body chunk in one write), and the response is read
 * by llhttp and answered through ServerResponse. No timeouts, no error paths, no hop-by-hop
 * filtering beyond Connection: what such a pass-through costs at least.
 */
function llhttpUpstreamFloor(upstreamPort: number): void {
  const { HTTPParser } = (process as unknown as { binding(name: string): LlhttpBinding }).binding('http_parser');
  interface Upstream {
    readonly socket: Socket;
    res?: ServerResponse;
  }
  const idle: Upstream[] = [];
  const open = (): Upstream => {
    const socket = connect(upstreamPort, '127.0.0.1');
    socket.setNoDelay(true);
    const up: Upstream = { socket };
    const parser = new HTTPParser();
    parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
    parser[HTTPParser.kOnHeadersComplete] = (_maj: number, _min: number, headers: string[], _m: unknown, _u: unknown, status: number) => {
      up.res!.writeHead(status, headers);
    };
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => {
      up.res!.write(chunk);
    };
    parser[HTTPParser.kOnMessageComplete] = () => {
      const res = up.res!;
      up.res = undefined;
      idle.push(up);
      res.end();
    };
    socket.on('data', (chunk: Buffer) => parser.execute(chunk));
    socket.on('error', () => up.res?.destroy());
    return up;
  };
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const up = idle.pop() ?? open();
    up.res = res;
    let head = `${req.method} ${new URL(req.url ?? '/').pathname} HTTP/1.1\r\n`;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() !== 'connection') head += `${raw[i]}: ${raw[i + 1]}\r\n`;
    up.socket.cork();
    up.socket.write(head + '\r\n');
    req.on('data', (chunk: Buffer) => up.socket.write(chunk));
    req.on('end', () => up.socket.uncork());
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n'));
}

// ---- GC trace of a child ------------------------------------------------------------------------

interface GcTotals {
  scavenges: number;
  full: number;
  allocated: number;
  promoted: number;
}

/** Sums --trace-gc-nvp lines from a child's stdout; `take()` returns the totals since the last take. */
function gcCounter(child: ChildProcess): { take(): GcTotals } {
  let totals: GcTotals = { scavenges: 0, full: 0, allocated: 0, promoted: 0 };
  let partial = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const kind = / gc=(\w+)/.exec(line)?.[1];
      if (kind === undefined) continue;
      if (kind === 's') totals.scavenges++;
      else totals.full++;
      totals.allocated += Number(/ allocated=(\d+)/.exec(line)?.[1] ?? 0);
      totals.promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    }
  });
  return {
    take() {
      const t = totals;
      totals = { scavenges: 0, full: 0, allocated: 0, promoted: 0 };
      return t;
    },
  };
}

// ---- candidates ---------------------------------------------------------------------------------

interface Row {
  readonly name: string;
  readonly origin: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly child: ChildProcess;
  readonly gc?: { take(): GcTotals };
  cpu: number;
  requests: number;
  gcTotals: GcTotals;
  latency: Percentiles[];
}

function waitForPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) {
        child.stdout!.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (c) => reject(new Error(`child exited with ${c}`)));
  });
}

async function answering(origin: string, path: string, headers: Record<string, string> | undefined, body: string): Promise<void> {
  const pool = new Pool(origin, { connections: 1 });
  try {
    for (let i = 0; i < 600; i++) {
      try {
        const r = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
        await r.body.dump();
        if (r.statusCode === 200) return;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${origin}${path} did not answer 200 within 30 s`);
  } finally {
    await pool.close();
  }
}

/** `count` requests back to back on one keep-alive connection; latency percentiles of the lot. */
async function closedLoop(row: Row, count: number, body: string): Promise<Percentiles> {
  const pool = new Pool(row.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { 'content-type': 'application/json', ...row.headers };
  const latencies: number[] = [];
  let errors = 0;
  for (let i = 0; i < count; i++) {
    const sentAt = performance.now();
    try {
      const r = await pool.request({ path: row.path, method: 'POST', headers, body });
      await r.body.dump();
      if (r.statusCode !== 200) errors++;
    } catch {
      errors++;
    }
    latencies.push(performance.now() - sentAt);
  }
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1], maxAtMs: 0, errors };
}

const emptyTotals = (): GcTotals => ({ scavenges: 0, full: 0, allocated: 0, promoted: 0 });

async function main(): Promise<void> {
  if (spawnSync(process.execPath, ['-e', 'require("fs").accessSync("dist/cli.js")'], { cwd: ROOT }).status !== 0) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  const body = oneKilobyteJson();
  const upstream = spawn(process.execPath, ['--import', TS_LOADER, SELF, 'serve-upstream'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const upstreamPort = await waitForPort(upstream);
  const upstreamOrigin = `http://127.0.0.1:${upstreamPort}`;
  const absolute = (path: string): { path: string; headers: Record<string, string> } => ({ path: `${upstreamOrigin}${path}`, headers: { host: `127.0.0.1:${upstreamPort}` } });
  const rows: Row[] = [];
  const dirs: string[] = [];
  const only = process.env.PROXY_CPU_ONLY;
  const wanted = (name: string): boolean => only === undefined || name.includes(only);

  /** PROXY_CPU_PROFILE: each dpg writes its CPU profile under this directory as it exits. */
  const profileDir = process.env.PROXY_CPU_PROFILE;
  const profiles: { label: string; dir: string }[] = [];
  /**
   * dpg serve from a build (`root`: a checkout with dist/), with extra node flags and environment;
   * rows named after `label`, those PROXY_CPU_ONLY leaves out not sent any traffic.
   */
  const startDpg = async (root: string, label: string, flags: string[], env: NodeJS.ProcessEnv = {}): Promise<void> => {
    const names = [`${label}, pass-through`, `${label}, routed Mask`];
    if (!names.some(wanted)) return;
    const dir = mkdtempSync(join(tmpdir(), 'dpg-proxy-cpu-'));
    dirs.push(dir);
    const profiling: string[] = [];
    if (profileDir !== undefined) {
      const into = join(profileDir, label.replace(/[^A-Za-z0-9]+/g, '-'));
      profiles.push({ label, dir: into });
      profiling.push('--cpu-prof', `--cpu-prof-dir=${into}`);
    }
    const dpg = await writeDpgServeConfig(dir, upstreamPort, [...GC_FLAGS, ...profiling, ...flags]);
    const child = spawn(process.execPath, dpg.args, { cwd: root, env: { ...process.env, ...dpg.env, DPG_LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    const gc = gcCounter(child);
    const origin = `http://127.0.0.1:${dpg.proxyPort}`;
    await answering(origin, absolute('/pass/x').path, absolute('/pass/x').headers, body);
    if (wanted(names[0])) rows.push({ name: names[0], origin, ...absolute('/pass/x'), child, gc, cpu: 0, requests: 0, gcTotals: emptyTotals(), latency: [] });
    if (wanted(names[1])) rows.push({ name: names[1], origin, ...absolute('/protect/x'), child, gc, cpu: 0, requests: 0, gcTotals: emptyTotals(), latency: [] });
  };
  await startDpg(ROOT, 'dpg forward proxy', []);
  // The same sources started from the ES module build (dist/cli.js) instead of dist/serve.cjs with its code cache.
  if (process.env.PROXY_CPU_ESM === '1') await startDpg(ROOT, 'dpg ES module build', [], { DPG_CODE_CACHE: 'off' });
  // The same build with V8's default allocation-site pretenuring (what src/core/young-garbage.ts turns off).
  if (process.env.PROXY_CPU_PRETENURING === '1') await startDpg(ROOT, 'dpg, V8 pretenuring on', ['--allocation-site-pretenuring']);
  // Another checkout's build beside this one (e.g. the commit before a change), same run.
  if (process.env.PROXY_CPU_COMPARE) await startDpg(process.env.PROXY_CPU_COMPARE, `dpg at ${process.env.PROXY_CPU_COMPARE}`, []);
  const floors: [string, string][] = [
    ['undici-dispatch', 'floor: node:http + undici dispatch()'],
    ['undici-stream', 'floor: node:http + undici stream()'],
    ['http-agent', 'floor: node:http + http.Agent keep-alive'],
    ['llhttp-upstream', 'floor: node:http + pooled net sockets read by llhttp'],
    ['tcp-relay', 'floor: raw TCP relay (net pipe, no parsing)'],
  ];
  for (const [kind, name] of floors) {
    if (!wanted(name)) continue;
    // process.binding('http_parser') warns (DEP0111) once: the floor reaches llhttp the way node:http does internally.
    const quiet = kind === 'llhttp-upstream' ? ['--no-deprecation'] : [];
    const child = spawn(process.execPath, [...GC_FLAGS, ...quiet, '--import', TS_LOADER, SELF, 'floor', kind, String(upstreamPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await waitForPort(child);
    const gc = gcCounter(child);
    rows.push({ name, origin: `http://127.0.0.1:${port}`, ...absolute('/pass/x'), child, gc, cpu: 0, requests: 0, gcTotals: emptyTotals(), latency: [] });
  }
  if (wanted('nginx') && !spawnSync('nginx', ['-v']).error) {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-proxy-cpu-nginx-'));
    dirs.push(dir);
    const port = await freePort();
    const child = spawn('nginx', writeNginxPassThrough(dir, port, upstreamPort), { stdio: ['ignore', 'pipe', 'inherit'] });
    await answering(`http://127.0.0.1:${port}`, '/pass/x', undefined, body);
    rows.push({ name: 'nginx 1.22 reverse proxy, pass-through', origin: `http://127.0.0.1:${port}`, path: '/pass/x', child, cpu: 0, requests: 0, gcTotals: emptyTotals(), latency: [] });
  } else if (wanted('nginx')) console.log('nginx skipped: not installed (apt-get update && apt-get install -y nginx-light)');

  const how = SEQUENTIAL ? `${(RATE * MEASURE_MS) / 1000} requests one after another on one connection` : `${RATE} req/s open-loop for ${MEASURE_MS / 1000} s`;
  console.log(`proxy-cpu bench: 1 KB JSON POST through an absolute-form target, ${ROUNDS} round(s) per row of ${how}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const load = (row: Row, ms: number): Promise<Percentiles> =>
    SEQUENTIAL ? closedLoop(row, (RATE * ms) / 1000, body) : constantRate({ origin: row.origin, path: row.path, headers: row.headers, rate: RATE, body, warmupMs: 0, measureMs: ms });
  for (const row of rows) await load(row, 2000); // first traffic compiles the hot paths: not counted
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of rows) {
      await new Promise((r) => setTimeout(r, 300));
      row.gc?.take();
      const before = cpuSeconds(row.child.pid!);
      const r = await load(row, MEASURE_MS);
      row.cpu += cpuSeconds(row.child.pid!) - before;
      row.requests += (RATE * MEASURE_MS) / 1000;
      row.latency.push(r);
      // The GC trace lines of the last requests are still on their way through the pipe.
      await new Promise((r) => setTimeout(r, 300));
      const t = row.gc?.take() ?? emptyTotals();
      row.gcTotals = { scavenges: row.gcTotals.scavenges + t.scavenges, full: row.gcTotals.full + t.full, allocated: row.gcTotals.allocated + t.allocated, promoted: row.gcTotals.promoted + t.promoted };
    }
  }
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  console.log('| row | CPU µs / request | allocated B / request | promoted B / request | scavenges / 10k | full GCs / 10k | p50 / p99 ms (noisy) | errors |');
  console.log('|---|---|---|---|---|---|---|---|');
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const row of rows) {
    const per = (n: number): string => (n / row.requests).toFixed(0);
    const per10k = (n: number): string => ((n / row.requests) * 10_000).toFixed(1);
    const v8 = row.gc !== undefined;
    const cells = [
      row.name,
      ((row.cpu / row.requests) * 1e6).toFixed(0),
      v8 ? per(row.gcTotals.allocated) : '',
      v8 ? per(row.gcTotals.promoted) : '',
      v8 ? per10k(row.gcTotals.scavenges) : '',
      v8 ? per10k(row.gcTotals.full) : '',
      `${median(row.latency.map((r) => r.p50)).toFixed(2)} / ${median(row.latency.map((r) => r.p99)).toFixed(2)}`,
      String(row.latency.reduce((a, r) => a + r.errors, 0)),
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
  console.log('\nCPU is the proxy process alone (user + system, /proc ticks), not the load generator or the upstream.');

  const children = new Set([upstream, ...rows.map((r) => r.child)]);
  await Promise.all(
    [...children].map(
      (c) =>
        new Promise((r) => {
          if (c.exitCode !== null) return r(undefined);
          c.once('exit', r);
          c.kill('SIGTERM');
        }),
    ),
  );
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  for (const p of profiles) {
    console.log(`\nWhere ${p.label}'s CPU went (--cpu-prof, every row it served, warm-up included; ${p.dir}):\n`);
    console.log(summariseProfiles(p.dir));
  }
}

const [mode, a, b] = process.argv.slice(2);
if (mode === 'serve-upstream') serveOkUpstream();
else if (mode === 'floor') floorServer(Number(b), a);
else await main();
