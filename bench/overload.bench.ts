// Overload (issue 18 item 4): a real `dpg serve` child (dist/) in the sidecar profile (HTTP API and
// gRPC off, the admin port on) masks 1 KB JSON through the forward proxy. First its capacity is
// measured (closed loop); then, open-loop (sends follow the clock), the same run's baseline at half
// the capacity, the gateway with shedding turned off at 3× capacity, and the default shedding at
// 3× capacity for BENCH_SECONDS (60 by default, as the issue names): answers counted by status,
// 503s checked for Retry-After, p99 of the accepted requests, the gateway's peak RSS, whether it
// stayed alive and became ready again. Accepted latency two ways: from each request's scheduled send
// (what the application sees, the client's own queue included: at 3× its connections cannot carry
// the rate) and from the moment the request's bytes were written on a socket to its answer (what
// the gateway adds; undici's `undici:client:sendHeaders` diagnostics channel marks the write).
//   npm run bench -- overload        (~2.5 minutes)     BENCH_SECONDS=20 … for a shorter run
//   BENCH_OVERLOAD='{ maxEventLoopUtilization: 0.95 }' …  (limits.overload for the "defaults" gateway instead)

import { spawn, type ChildProcess } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { buildDist } from '../scripts/build.mjs';
import { oneKilobyteJson } from './open-loop.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const OVERLOAD = process.env.BENCH_OVERLOAD;
/** Info, as in production: one audit line per request goes to the gateway's stdout (read by this process). */
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** The sidecar's documented bound on RSS under overload (docs/operations.md#overload). */
const RSS_BOUND_MB = 256;
/** Accepted requests' latency from their write, p99: bounded means within the proxy's own request budget. */
const P99_BOUND_MS = 2000;
/** Client connections: more than the proxy's request bound (256), fewer than its maxConnections (1024). */
const CONNECTIONS = 600;
/** The header that ties undici's write of a request to the bench's own record of it. */
const ID_HEADER = 'x-bench-request';
const ID_PATTERN = /\r\nx-bench-request: (\d+)\r\n/;

/** When each request's headers (and then its body) were written on a socket, by request number. */
const writtenAt = new Map<number, number>();
subscribe('undici:client:sendHeaders', (message) => {
  const m = ID_PATTERN.exec(`\r\n${(message as { headers: string }).headers}`);
  if (m) writtenAt.set(Number(m[1]), performance.now());
});
let nextRequest = 0;

interface Gateway {
  readonly child: ChildProcess;
  readonly proxy: number;
  readonly admin: number;
  stop(): Promise<void>;
}

async function startGateway(dir: string, upstreamPort: number, overload: string | undefined): Promise<Gateway> {
  const file = join(dir, `gateway-${Date.now()}.yaml`);
  writeFileSync(
    file,
    [
      'http: { enabled: false }',
      'grpc: { enabled: false }',
      'keys: { source: generated }',
      `manifests: ${join(ROOT, 'config/manifests')}`,
      'admin: { listen: 127.0.0.1:0 }',
      'proxy:',
      '  listen: 127.0.0.1:0',
      '  routes:',
      `    - { name: bench, match: { host: 127.0.0.1, port: ${upstreamPort} }, request: { manifest: customer, jobType: Mask } }`,
      ...(overload === undefined ? [] : ['limits:', `  overload: ${overload}`]),
      '',
    ].join('\n'),
  );
  // memory-report.mjs: on SIGUSR2 the gateway writes its memory split (heap, external) to stderr.
  const child = spawn(process.execPath, ['--import', join(ROOT, 'bench/memory-report.mjs'), 'bin/dpg.js', 'serve', '-c', file], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: LOG_LEVEL, NODE_ENV: 'bench' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports: Record<string, number> = {};
  // Info level, as in production: the listeners' addresses and `ready` come from the log; audit lines keep flowing.
  await new Promise<void>((resolve, reject) => {
    let buffer = '';
    let started = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      // After `ready` the audit lines are drained unread: parsing 10,000 lines a second here would
      // slow this reader and make the gateway's log wait in its memory (a stalled collector is a
      // case of its own, bounded by LOG_BUFFER_MAX_BYTES in src/core/logger.ts).
      if (started) return;
      buffer += chunk.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const e = JSON.parse(line) as { listener?: string; port?: number; msg?: string };
          if (e.listener && typeof e.port === 'number') ports[e.listener] = e.port;
          if (e.msg === 'ready') {
            started = true;
            resolve();
          }
        } catch {
          // not JSON
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`dpg serve exited ${code}`)));
  });
  return {
    child,
    proxy: ports.proxy!,
    admin: ports.admin!,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    },
  };
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const pct = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/** Closed loop with `concurrency` senders for `ms`: requests answered 200 per second (and the other statuses seen). */
async function capacity(pool: Pool, path: string, body: string, concurrency: number, ms: number): Promise<number> {
  let ok = 0;
  const others: Record<number, number> = {};
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.body.dump();
        if (res.statusCode === 200) ok++;
        else others[res.statusCode] = (others[res.statusCode] ?? 0) + 1;
      }
    }),
  );
  if (Object.keys(others).length > 0) console.log(`  capacity run: ${ok} × 200, others ${JSON.stringify(others)}`);
  return (ok * 1000) / ms;
}

interface LoadResult {
  readonly sent: number;
  readonly ok: number;
  readonly shed: number;
  readonly shedWithRetryAfter: number;
  readonly other: number;
  readonly p50: number;
  readonly p99: number;
  /** Accepted requests from their write on a socket to the answer. */
  readonly written: { readonly p50: number; readonly p99: number; readonly n: number };
  readonly peakRssMb: number;
  /** Highest dpg_in_flight_requests{door="proxy"} and dpg_event_loop_lag_seconds seen (scraped every second). */
  readonly peakInFlight: number;
  readonly peakLagMs: number;
  readonly alive: boolean;
}

/** Open loop at `rate` req/s for `ms`, sampling the gateway's RSS every 500 ms. */
async function openLoop(gw: Gateway, pool: Pool, path: string, body: string, rate: number, ms: number): Promise<LoadResult> {
  const lat: number[] = [];
  const fromWrite: number[] = [];
  let ok = 0;
  let shed = 0;
  let shedWithRetryAfter = 0;
  let other = 0;
  let peakRssMb = rssMb(gw.child.pid!);
  let peakInFlight = 0;
  let peakLagMs = 0;
  const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, rssMb(gw.child.pid!))), 500);
  const scraper = setInterval(() => {
    request(`http://127.0.0.1:${gw.admin}/metrics`)
      .then((r) => r.body.text())
      .then((text) => {
        const inFlight = /^dpg_in_flight_requests\{door="proxy"\} (\d+)/m.exec(text);
        const lag = /^dpg_event_loop_lag_seconds ([\d.e-]+)/m.exec(text);
        if (inFlight) peakInFlight = Math.max(peakInFlight, Number(inFlight[1]));
        if (lag) peakLagMs = Math.max(peakLagMs, Number(lag[1]) * 1000);
      })
      .catch(() => undefined);
  }, 1000);
  const inflight: Promise<void>[] = [];
  const interval = 1000 / rate;
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (start + sent * interval <= now && sent * interval < ms) {
        const at = performance.now();
        const id = nextRequest++;
        inflight.push(
          pool
            .request({ path, method: 'POST', headers: { 'content-type': 'application/json', [ID_HEADER]: String(id) }, body })
            .then(async (res) => {
              await res.body.dump();
              const end = performance.now();
              const written = writtenAt.get(id);
              writtenAt.delete(id);
              if (res.statusCode === 200) {
                ok++;
                lat.push(end - at);
                if (written !== undefined) fromWrite.push(end - written);
              } else if (res.statusCode === 503) {
                shed++;
                if (res.headers['retry-after'] !== undefined) shedWithRetryAfter++;
              } else other++;
            })
            .catch(() => {
              writtenAt.delete(id);
              other++;
            }),
        );
        sent++;
      }
      if (sent * interval >= ms) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  // The gateway's memory split as the last request is sent (near its peak): heap, external, buffers.
  gw.child.kill('SIGUSR2');
  await Promise.all(inflight);
  clearInterval(sampler);
  clearInterval(scraper);
  lat.sort((a, b) => a - b);
  fromWrite.sort((a, b) => a - b);
  const written = { p50: pct(fromWrite, 0.5), p99: pct(fromWrite, 0.99), n: fromWrite.length };
  return { sent, ok, shed, shedWithRetryAfter, other, p50: pct(lat, 0.5), p99: pct(lat, 0.99), written, peakRssMb, peakInFlight, peakLagMs, alive: gw.child.exitCode === null && gw.child.signalCode === null };
}

async function readyAgain(admin: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      const res = await request(`http://127.0.0.1:${admin}/readyz`);
      await res.body.dump();
      if (res.statusCode === 200) return true;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const line = (name: string, rate: number, r: LoadResult): string =>
  `${name.padEnd(34)} ${String(Math.round(rate)).padStart(5)}/s  sent ${String(r.sent).padStart(6)}  200 ${String(r.ok).padStart(6)}  503 ${String(r.shed).padStart(6)} (Retry-After ${r.shedWithRetryAfter})  other ${String(r.other).padStart(5)}  ` +
  `accepted from schedule p50 ${r.p50.toFixed(1)} / p99 ${r.p99.toFixed(1)} ms, from write p50 ${r.written.p50.toFixed(1)} / p99 ${r.written.p99.toFixed(1)} ms (n ${r.written.n})  peak RSS ${r.peakRssMb} MB  peak in flight ${r.peakInFlight}  peak loop lag ${Math.round(r.peakLagMs)} ms  alive ${r.alive}`;

async function main(): Promise<void> {
  await buildDist();
  // The upstream in a process of its own, so its work never delays the load generator's clock.
  const upstream = spawn(
    process.execPath,
    ['-e', "const s=require('node:http').createServer((q,r)=>{q.resume();q.on('end',()=>r.writeHead(200,{'content-type':'text/plain'}).end('ok'))});s.listen(0,'127.0.0.1',()=>console.log(s.address().port))"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const upstreamPort = await new Promise<number>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const dir = mkdtempSync(join(tmpdir(), 'dpg-bench-overload-'));
  const body = oneKilobyteJson();
  const path = `http://127.0.0.1:${upstreamPort}/v1/orders`;
  console.log(`overload bench: ${SECONDS} s at 3× capacity, ${CONNECTIONS} client connections; load average ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  try {
    // Shedding off: every bound far above what the run reaches, the loop guard off.
    const off = await startGateway(dir, upstreamPort, '{ maxRequestsInFlight: 1000000, maxBytesInFlight: 1000000000000, maxEventLoopDelayMs: 0, maxEventLoopLagMs: 0, maxEventLoopUtilization: 1 }');
    const defaults = await startGateway(dir, upstreamPort, OVERLOAD);
    if (OVERLOAD) console.log(`the "defaults" gateway runs with limits.overload ${OVERLOAD}`);
    let cap: number;
    {
      // Measured with shedding off, so the figure is the gateway's own, not its bounds'.
      const pool = new Pool(`http://127.0.0.1:${off.proxy}`, { connections: 32 });
      await capacity(pool, path, body, 32, 2000); // warm-up
      cap = await capacity(pool, path, body, 32, 5000);
      await pool.close();
    }
    console.log(`capacity (closed loop, 32 senders, 5 s): ${Math.round(cap)} req/s; idle RSS ${rssMb(defaults.child.pid!)} MB (defaults), ${rssMb(off.child.pid!)} MB (off)`);
    {
      const pool = new Pool(`http://127.0.0.1:${defaults.proxy}`, { connections: CONNECTIONS });
      const base = await openLoop(defaults, pool, path, body, cap / 2, 10_000);
      console.log(line('baseline 0.5× (defaults), 10 s', cap / 2, base));
      await pool.close();
    }
    {
      const pool = new Pool(`http://127.0.0.1:${off.proxy}`, { connections: CONNECTIONS });
      const r = await openLoop(off, pool, path, body, cap * 3, Math.min(SECONDS, 20) * 1000);
      console.log(line(`shedding off 3×, ${Math.min(SECONDS, 20)} s`, cap * 3, r));
      await pool.close();
    }
    await off.stop();
    {
      const pool = new Pool(`http://127.0.0.1:${defaults.proxy}`, { connections: CONNECTIONS });
      const r = await openLoop(defaults, pool, path, body, cap * 3, SECONDS * 1000);
      console.log(line(`shedding defaults 3×, ${SECONDS} s`, cap * 3, r));
      console.log(
        `RSS bound at 3× with the defaults: peak ${r.peakRssMb} MB (goal ≤ ${RSS_BOUND_MB} MB, docs/operations.md#overload): ${r.peakRssMb <= RSS_BOUND_MB ? 'MET' : 'NOT MET'}; ` +
          `alive ${r.alive}; accepted from write p99 ${r.written.p99.toFixed(0)} ms (goal ≤ ${P99_BOUND_MS} ms: ${r.written.p99 <= P99_BOUND_MS ? 'MET' : 'NOT MET'})`,
      );
      await pool.close();
      console.log(`ready again after the load: ${await readyAgain(defaults.admin)}`);
      const metrics = await (await request(`http://127.0.0.1:${defaults.admin}/metrics`)).body.text();
      for (const l of metrics.split('\n')) if (l.startsWith('dpg_overload_shed_total{')) console.log(`  ${l}`);
    }
    console.log(`load average after: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    await defaults.stop();
  } finally {
    upstream.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
