// Where the forward proxy's p99 comes from, and what the cheap levers do to it: dpg serve (the
// build) in several processes side by side, each with other V8 flags, all sent the same 1 KB JSON
// POSTs at 1,000 req/s (open loop, bench/open-loop.ts) through an absolute-form target, rounds
// interleaved so the machine's drift hits every variant alike. Rows per variant: pass-through
// alone, routed Mask alone, and both at once (500 + 500 req/s) in the same process.
//
// Each dpg process carries bench/peers/tail-probe.mjs, which records the event loop's delay, every
// GC pause, and per request (numbered by the bench) when each phase happened. For the slowest 1% of
// requests the bench then splits the time seen by the client: outside the proxy's handling (before
// node:http had the head, or after the answer was written), the proxy's own work before the upstream
// request (routing; for Mask reading and protecting the body), the upstream exchange, and the GC
// pauses that overlapped it.
//
//   npm run build && npm run bench -- proxy-tail     (about 3 minutes; TAIL_ROUNDS, TAIL_MS,
//   TAIL_VARIANTS=<comma-separated name fragments>, TAIL_PHASES=0 to leave the per-request phases out,
//   TAIL_STEADY=<n> for n windows back to back per row instead of interleaved rounds,
//   TAIL_COMPARE=<another checkout, built> adds that build as shipped, e.g. the commit before a change)

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { writeDpgServeConfig } from './dpg-serve.ts';
import { serveOkUpstream } from './ok-upstream.ts';
import { stopChildren } from './stop-children.ts';
import { constantRate, oneKilobyteJson, type Percentiles } from './open-loop.ts';
import { cpuSeconds, rssMb } from './proc-stats.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const TS_LOADER = new URL('../scripts/ts-loader.mjs', import.meta.url).href;
const PROBE = fileURLToPath(new URL('./peers/tail-probe.mjs', import.meta.url));
const RATE = 1000;
const WARMUP_MS = 500;
const MEASURE_MS = Number(process.env.TAIL_MS ?? 2500);
const ROUNDS = Number(process.env.TAIL_ROUNDS ?? 3);
const PHASES = process.env.TAIL_PHASES !== '0';
/** TAIL_STEADY=<n>: instead of interleaved rounds, n windows back to back per row (client p99 as measured, not added). */
const STEADY = Number(process.env.TAIL_STEADY ?? 0);

/** The levers measured, each a dpg process of its own: node flags before bin/dpg.js. */
const VARIANTS: { name: string; flags: string[]; root?: string; env?: NodeJS.ProcessEnv }[] = [
  { name: 'as shipped', flags: [] },
  // The same sources started from the ES module build (dist/cli.js) instead of dist/serve.cjs with its code cache.
  { name: 'ES module build (DPG_CODE_CACHE=off)', flags: [], env: { DPG_CODE_CACHE: 'off' } },
  // V8 sizes the young generation from 1 MB per semi-space, doubling it (up to 16 MB) once as much
  // has survived scavenges, and halves it again when allocation slows: min = max pins it.
  { name: 'semi-space 16 MB', flags: ['--min-semi-space-size=16', '--max-semi-space-size=16'] },
  { name: 'semi-space 32 MB', flags: ['--min-semi-space-size=32', '--max-semi-space-size=32'] },
  { name: 'semi-space 64 MB', flags: ['--min-semi-space-size=64', '--max-semi-space-size=64'] },
  // The only semi-space flag NODE_OPTIONS takes.
  { name: 'max semi-space 32 MB', flags: ['--max-semi-space-size=32'] },
  // Read by V8 at each growth and each scavenge: `dpg serve` could set these at run time, as young-garbage.ts does.
  { name: 'semi-space growth x16', flags: ['--semi-space-growth-factor=16'] },
  { name: 'scavenge on the main thread only', flags: ['--no-parallel-scavenge'] },
];

// Another build beside this one, same run: its `dpg serve` is started from that checkout.
if (process.env.TAIL_COMPARE) VARIANTS.splice(1, 0, { name: `as shipped at ${process.env.TAIL_COMPARE}`, flags: [], root: process.env.TAIL_COMPARE });

// ---- the probe's report -------------------------------------------------------------------------

interface ProbeReport {
  readonly generation: number;
  readonly newSpaceMb: number;
  readonly loop: { p50: number; p99: number; max: number; mean: number };
  /** start, duration, kind … (kind 1: scavenge; 4: mark-compact; 8: incremental marking; 16: weak callbacks). */
  readonly gcs: number[];
  /** seq, start, created, sent, bodySent, upstream head, upstream end, finish, app body read (ms, the proxy's clock). */
  readonly records: number[][];
}

interface Proxy {
  readonly name: string;
  readonly child: ChildProcess;
  readonly origin: string;
  readonly out: string;
  readonly dir: string;
  stderr: string;
  /** Reports asked of its probe so far. */
  asked: number;
  /** RSS once it answered, before any load. */
  rssIdleMb: number;
}

/** Asks the probe for what it recorded since the last ask (and to start afresh). */
async function probe(p: Proxy): Promise<ProbeReport> {
  const generation = ++p.asked;
  p.child.kill('SIGUSR2');
  // A crowded machine can keep the proxy off the CPU for seconds: wait for this ask's report, not any.
  for (let i = 0; !p.stderr.includes(`tail-probe: written ${generation}\n`); i++) {
    if (i > 6000) throw new Error(`${p.name}: the probe did not answer within 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const report = JSON.parse(readFileSync(p.out, 'utf8')) as ProbeReport;
  if (report.generation !== generation) throw new Error(`${p.name}: probe report ${report.generation} read for ask ${generation}`);
  return report;
}

// ---- the split of the slowest requests ----------------------------------------------------------

/** Mean ms per part over a set of requests. */
interface Split {
  n: number;
  latency: number;
  outside: number;
  /** Before the upstream request: reading the app's body (a routed request's, read whole first). */
  bodyRead: number;
  /** Before the upstream request: the rest (routing; protecting a routed body). */
  beforeUpstream: number;
  pool: number;
  upload: number;
  upstream: number;
  download: number;
  answer: number;
  gc: number;
  withGc: number;
  /** Every matched request (not only the slowest): how many, and how many a GC pause overlapped. */
  all: number;
  allWithGc: number;
}

const emptySplit = (): Split => ({ n: 0, latency: 0, outside: 0, bodyRead: 0, beforeUpstream: 0, pool: 0, upload: 0, upstream: 0, download: 0, answer: 0, gc: 0, withGc: 0, all: 0, allWithGc: 0 });

/** GC pause ms overlapping [from, to] on the proxy's clock. */
function gcWithin(gcs: readonly number[], from: number, to: number): number {
  let ms = 0;
  for (let i = 0; i < gcs.length; i += 3) {
    const a = Math.max(from, gcs[i]);
    const b = Math.min(to, gcs[i] + gcs[i + 1]);
    if (b > a) ms += b - a;
  }
  return ms;
}

/** Adds the slowest 1% of `latencies` (client side, by seq) to `into`, matched with the probe's records. */
function splitSlowest(latencies: Map<number, number>, report: ProbeReport, into: Split): void {
  const bySeq = new Map(report.records.map((r) => [r[0], r]));
  for (const [seq, latency] of latencies) {
    const r = bySeq.get(seq);
    if (r === undefined || r[7] === 0) continue;
    into.all++;
    if (gcWithin(report.gcs, r[7] - latency, r[7]) > 0) into.allWithGc++;
  }
  const slow = [...latencies].sort((a, b) => b[1] - a[1]).slice(0, Math.max(1, Math.floor(latencies.size / 100)));
  for (const [seq, latency] of slow) {
    const r = bySeq.get(seq);
    // Unmatched, unfinished, or moments out of order (a request the probe saw only in part): left out.
    if (r === undefined || r[7] === 0 || !r.slice(1, 8).every((t, i, a) => i === 0 || t >= a[i - 1])) continue;
    const [, start, created, sent, bodySent, upHead, upEnd, finish, read] = r;
    // A routed body is read whole before the upstream request; a streamed one ends during the upload.
    const bodyRead = read !== undefined && read > 0 && read <= created ? read - start : 0;
    const gc = gcWithin(report.gcs, finish - latency, finish);
    into.n++;
    into.latency += latency;
    into.outside += latency - (finish - start);
    into.bodyRead += bodyRead;
    into.beforeUpstream += created - start - bodyRead;
    into.pool += sent - created;
    into.upload += bodySent - sent;
    into.upstream += upHead - bodySent;
    into.download += upEnd - upHead;
    into.answer += finish - upEnd;
    into.gc += gc;
    if (gc > 0) into.withGc++;
  }
}

// ---- rows ---------------------------------------------------------------------------------------

interface Part {
  readonly label: string;
  readonly path: string;
  readonly rate: number;
  latency: Percentiles[];
  split: Split;
}

interface Row {
  readonly proxy?: Proxy;
  readonly name: string;
  readonly parts: Part[];
  cpu: number;
  requests: number;
  loopP99: number[];
  loopMax: number;
  scavenges: number;
  scavengeMs: number;
  scavengeMax: number;
  majors: number;
  majorMs: number;
  seconds: number;
  /** The young generation's capacity at the end of each measured run, MB. */
  newSpaceMb: number[];
}

const part = (label: string, path: string, rate: number): Part => ({ label, path, rate, latency: [], split: emptySplit() });

async function startProxy(name: string, flags: string[], upstreamPort: number, root = ROOT, extraEnv: NodeJS.ProcessEnv = {}): Promise<Proxy> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-proxy-tail-'));
  const out = join(dir, 'probe.json');
  const dpg = await writeDpgServeConfig(dir, upstreamPort, [...flags, '--import', PROBE]);
  const env = { ...process.env, ...dpg.env, DPG_LOG_LEVEL: 'silent', TAIL_PROBE_OUT: out, TAIL_PROBE_PHASES: PHASES ? '1' : '0', ...extraEnv };
  const child = spawn(process.execPath, dpg.args, { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const p: Proxy = { name, child, origin: `http://127.0.0.1:${dpg.proxyPort}`, out, dir, stderr: '', asked: 0, rssIdleMb: 0 };
  child.stderr!.on('data', (d: Buffer) => (p.stderr += d.toString()));
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${p.stderr.slice(0, 500)}`);
    const pool = new Pool(p.origin, { connections: 1 });
    try {
      const r = await pool.request({ path: `http://127.0.0.1:${upstreamPort}/pass/x`, method: 'GET', headers: { host: `127.0.0.1:${upstreamPort}` } });
      await r.body.dump();
      if (r.statusCode === 200) break;
    } catch {
      if (i > 600) throw new Error(`${name} did not answer within 30 s`);
    } finally {
      await pool.close();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  p.rssIdleMb = rssMb(child.pid!);
  return p;
}

async function main(): Promise<void> {
  if (spawnSync(process.execPath, ['-e', 'require("fs").accessSync("dist/cli.js")'], { cwd: ROOT }).status !== 0) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  const body = oneKilobyteJson();
  const upstream = spawn(process.execPath, ['--import', TS_LOADER, SELF, 'serve-upstream'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const upstreamPort = await new Promise<number>((resolve, reject) => {
    let out = '';
    upstream.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    upstream.once('exit', (c) => reject(new Error(`upstream exited with ${c}`)));
  });
  const upstreamOrigin = `http://127.0.0.1:${upstreamPort}`;
  const pass = `${upstreamOrigin}/pass/x`;
  const mask = `${upstreamOrigin}/protect/x`;
  const wanted = process.env.TAIL_VARIANTS?.split(',') ?? [];
  const variants = VARIANTS.filter((v) => wanted.length === 0 || wanted.some((w) => v.name.includes(w)));

  const newRow = (name: string, parts: Part[], proxy?: Proxy): Row => ({
    proxy, name, parts, cpu: 0, requests: 0, loopP99: [], loopMax: 0, scavenges: 0, scavengeMs: 0, scavengeMax: 0, majors: 0, majorMs: 0, seconds: 0, newSpaceMb: [],
  });
  const rows: Row[] = [newRow('direct to upstream (baseline)', [part('direct', '/pass/x', RATE)])];
  const proxies: Proxy[] = [];
  for (const v of variants) {
    const p = await startProxy(v.name, v.flags, upstreamPort, v.root, v.env);
    proxies.push(p);
    rows.push(newRow(v.name, [part('pass-through', pass, RATE)], p));
    rows.push(newRow(v.name, [part('routed Mask', mask, RATE)], p));
    rows.push(newRow(v.name, [part('pass-through (mixed)', pass, RATE / 2), part('routed Mask (mixed)', mask, RATE / 2)], p));
  }

  const headers = { host: `127.0.0.1:${upstreamPort}` };
  const run = async (row: Row, ms: number, record: boolean): Promise<void> => {
    const origin = row.proxy?.origin ?? upstreamOrigin;
    const traces = row.parts.map(() => new Map<number, number>());
    const next = { n: 0 };
    if (record && row.proxy) await probe(row.proxy);
    const pid = row.proxy?.child.pid ?? upstream.pid!;
    const before = cpuSeconds(pid);
    const results = await Promise.all(
      row.parts.map((p, i) =>
        constantRate({ origin, path: p.path, headers: row.proxy ? headers : undefined, rate: p.rate, body, warmupMs: WARMUP_MS, measureMs: ms, trace: row.proxy ? { latencies: traces[i], next } : undefined }),
      ),
    );
    if (!record) return;
    row.cpu += cpuSeconds(pid) - before;
    row.requests += (RATE * (WARMUP_MS + ms)) / 1000;
    results.forEach((r, i) => row.parts[i].latency.push(r));
    if (!row.proxy) return;
    const report = await probe(row.proxy);
    row.parts.forEach((p, i) => splitSlowest(traces[i], report, p.split));
    row.loopP99.push(report.loop.p99);
    row.newSpaceMb.push(report.newSpaceMb);
    row.loopMax = Math.max(row.loopMax, report.loop.max);
    row.seconds += (WARMUP_MS + ms) / 1000;
    for (let i = 0; i < report.gcs.length; i += 3) {
      const [duration, kind] = [report.gcs[i + 1], report.gcs[i + 2]];
      if (kind === 1) {
        row.scavenges++;
        row.scavengeMs += duration;
        row.scavengeMax = Math.max(row.scavengeMax, duration);
      } else if (kind === 4) {
        row.majors++;
        row.majorMs += duration;
      }
    }
  };

  console.log(
    `proxy-tail bench: 1 KB JSON POST through the forward proxy at ${RATE} req/s open loop; ${ROUNDS} interleaved rounds of ${MEASURE_MS / 1000} s per row; ` +
      `per-request phases ${PHASES ? 'on' : 'off'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );
  for (const row of rows) await run(row, 1000, false); // first traffic compiles the hot paths
  if (STEADY > 0) {
    // Sustained load on one row at a time: how the young generation and the tail settle when the
    // traffic does not stop (the interleaved rounds leave each process idle between its rows).
    console.log(`\nsustained: ${STEADY} windows of ${MEASURE_MS / 1000} s back to back per row (window: added p99 | scavenges/s | young generation MB)`);
    for (const row of rows) {
      const cells: string[] = [];
      for (let w = 0; w < STEADY; w++) {
        const before = { scavenges: row.scavenges, seconds: row.seconds };
        await run(row, MEASURE_MS, true);
        const p99 = row.parts[0].latency[row.parts[0].latency.length - 1].p99;
        const rate = (row.scavenges - before.scavenges) / (row.seconds - before.seconds);
        cells.push(row.proxy ? `${p99.toFixed(1)} ms | ${rate.toFixed(1)} | ${row.newSpaceMb[row.newSpaceMb.length - 1]}` : `${p99.toFixed(1)} ms`);
      }
      console.log(`${row.name}, ${row.parts.map((p) => p.label).join(' + ')}: ${cells.join(' ; ')}`);
    }
  } else for (let round = 0; round < ROUNDS; round++) for (const row of rows) await run(row, MEASURE_MS, true);
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);

  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = rows[0].parts[0];
  const baseP50 = median(base.latency.map((r) => r.p50));
  const baseP99 = median(base.latency.map((r) => r.p99));
  console.log(`baseline (direct to the upstream, same run): p50 ${baseP50.toFixed(2)} ms, p99 ${baseP99.toFixed(2)} ms\n`);
  console.log('| variant | row | added p50 | added p99 | loop delay p99 / max | scavenges /s, mean / max ms | mark-compacts (ms) | young generation MB | CPU µs / req |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows.slice(1)) {
    for (const p of row.parts) {
      const cells = [
        row.name,
        p.label,
        `+${(median(p.latency.map((r) => r.p50)) - baseP50).toFixed(2)} ms`,
        `+${(median(p.latency.map((r) => r.p99)) - baseP99).toFixed(2)} ms`,
        `${median(row.loopP99).toFixed(1)} / ${row.loopMax.toFixed(1)} ms`,
        `${(row.scavenges / row.seconds).toFixed(1)}, ${(row.scavengeMs / Math.max(1, row.scavenges)).toFixed(2)} / ${row.scavengeMax.toFixed(2)}`,
        `${row.majors} (${row.majorMs.toFixed(1)})`,
        `${Math.min(...row.newSpaceMb)}–${Math.max(...row.newSpaceMb)}`,
        ((row.cpu / row.requests) * 1e6).toFixed(0),
      ];
      console.log(`| ${cells.join(' | ')} |`);
    }
  }
  if (PHASES) {
    console.log('\nThe slowest 1% of each row, mean ms per part (client latency = outside + body read + before upstream + pool + upload + upstream + download + answer):');
    console.log('| variant | row | n | client latency | outside the handler | body read (routed) | before upstream | pool | upload | upstream | download | answer | GC overlapping | share with a GC | all requests with a GC |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows.slice(1)) {
      for (const p of row.parts) {
        const s = p.split;
        const m = (x: number): string => (s.n === 0 ? '' : (x / s.n).toFixed(2));
        console.log(`| ${[row.name, p.label, s.n, m(s.latency), m(s.outside), m(s.bodyRead), m(s.beforeUpstream), m(s.pool), m(s.upload), m(s.upstream), m(s.download), m(s.answer), m(s.gc), s.n === 0 ? '' : `${((s.withGc / s.n) * 100).toFixed(0)}%`, s.all === 0 ? '' : `${((s.allWithGc / s.all) * 100).toFixed(1)}%`].join(' | ')} |`);
      }
    }
  }

  if (STEADY === 0) {
    // The issue-21 goal this bench can judge alone (no nginx here: bench/peers.bench.ts judges pass-through against it).
    const mixed = rows.find((r) => r.name === 'as shipped' && r.parts.length === 2);
    const added = mixed && median(mixed.parts[1].latency.map((r) => r.p99)) - baseP99;
    if (added !== undefined) console.log(`\nGoal (issue 21): routed Mask added p99 ≤ 2 ms with pass-through in the same process at the same time (as shipped, mixed row): +${added.toFixed(2)} ms: ${added <= 2 ? 'MET' : 'NOT MET'} (load average ${loadavg()[0].toFixed(2)})`);
  }

  console.log('\n| variant | RSS after start | RSS after the run |');
  console.log('|---|---|---|');
  for (const p of proxies) console.log(`| ${p.name} | ${p.rssIdleMb.toFixed(1)} MB | ${rssMb(p.child.pid!).toFixed(1)} MB |`);

  await stopChildren([upstream, ...proxies.map((p) => p.child)]);
  for (const p of proxies) rmSync(p.dir, { recursive: true, force: true });
}

if (process.argv[2] === 'serve-upstream') serveOkUpstream();
else await main();
