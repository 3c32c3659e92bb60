// What the gateway's event loop computes while heavy bodies arrive (issue 18, head of line). Starts
// `dpg serve` from dist/ under `--cpu-prof` (every thread writes a profile; the main thread's is
// the one with thread id 0), posts the head-of-line bench's three heavy documents to /api/protect
// at once (5 MB SQL, 10 MB JSON, 10 MB XML; built and encoded before the clock starts), and reads
// the main thread's samples between the first byte sent and the last answer read: busy time by
// function, and each stretch of the loop busy without a break (a stall for every other request)
// with what filled it. Counted from samples, so the split holds on a busy machine.
//   node --import ./scripts/ts-loader.mjs bench/hol-profile.ts
//   BENCH_SCALE=0.5 …  (documents at half the size)   BENCH_PROFILE_KEEP=/tmp/p …  (keep the profiles there)
//   BENCH_WARM_WORKER=1 …  (the profiled round finds its worker running; by default it was reaped, as in head-of-line)
//   BENCH_GATEWAY_FLAGS='--trace-gc' …  (more node flags for the gateway; its stdout lines that are not JSON are printed)
//   BENCH_PROFILE_INTERVAL_US=100 …  (sampling interval)   BENCH_MIN_STRETCH_MS=5 …  (stretches listed)

import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { buildDist } from '../scripts/build.mjs';
import { freePort } from './dpg-serve.ts';
import { envelopeOf, heavyDocuments } from './hol-documents.ts';
import type { CpuProfile, ProfileNode } from './profile-table.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const INTERVAL_US = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 100);
const MIN_STRETCH_MS = Number(process.env.BENCH_MIN_STRETCH_MS ?? 5);
const MiB = 1024 * 1024;
const IDLE_MS = 3000;
const WARM_WORKER = process.env.BENCH_WARM_WORKER === '1';


/**
 * One sample: when (µs, monotonic clock), how long it stands for, and its stack (leaf first). The
 * profiler samples by the wall clock: a gap far above the interval is the thread runnable without a
 * core (the sampling signal waits for it), so `us` is split into `run` (up to RUN_CAP intervals)
 * and `wait` (the rest), and the figures hold apart on a busy machine.
 */
interface Sample {
  readonly at: number;
  readonly us: number;
  readonly run: number;
  readonly wait: number;
  readonly stack: readonly string[];
}

const RUN_CAP = 3;

function frameName(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url === '' ? '' : ` ${url.replace(/^.*\//, '')}:${lineNumber + 1}`;
  return `${functionName === '' ? '(anonymous)' : functionName}${file}`;
}

function samplesOf(profile: CpuProfile): Sample[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<number, string[]>();
  const stackOf = (id: number): string[] => {
    let s = stacks.get(id);
    if (s) return s;
    s = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at)!;
      if (n.callFrame.functionName !== '(root)') s.push(frameName(n));
    }
    stacks.set(id, s);
    return s;
  };
  const out: Sample[] = [];
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    // A sample stands for the time until the next one.
    const next = profile.timeDeltas[i + 1] ?? INTERVAL_US;
    const run = Math.min(next, RUN_CAP * INTERVAL_US);
    out.push({ at: t, us: next, run, wait: next - run, stack: stackOf(profile.samples[i]!) });
  }
  return out;
}

const idle = (s: Sample): boolean => s.stack[0] === '(idle)';

function top(counts: Map<string, number>, n: number): [string, number][] {
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function add(counts: Map<string, number>, key: string, us: number): void {
  counts.set(key, (counts.get(key) ?? 0) + us);
}

const sum = (xs: readonly Sample[], k: 'us' | 'run' | 'wait'): number => xs.reduce((a, s) => a + s[k], 0);

const ms = (us: number): string => (us / 1000).toFixed(1);

/** The first JS frame of ours (not node's internals) under the leaf: what asked for the work. */
function ownCaller(stack: readonly string[]): string {
  for (const f of stack) if (/ (cli|serve|chunk-[^ ]*|protect-worker)\.c?js:/.test(f) || /\.ts:/.test(f)) return f;
  return stack.find((f) => !f.startsWith('(')) ?? stack[0] ?? '?';
}

export function report(samples: readonly Sample[], from: number, to: number): string[] {
  const inWindow = samples.filter((s) => s.at >= from && s.at <= to);
  const busy = inWindow.filter((s) => !idle(s));
  const out: string[] = [];
  out.push(
    `main thread, ${ms(to - from)} ms from the first heavy byte sent to the last answer read: busy ${ms(sum(busy, 'us'))} ms ` +
      `(on a core ~${ms(sum(busy, 'run'))}, runnable without one ~${ms(sum(busy, 'wait'))})`,
  );
  const self = new Map<string, number>();
  const callers = new Map<string, number>();
  for (const s of busy) {
    add(self, s.stack[0]!, s.run);
    add(callers, ownCaller(s.stack), s.run);
  }
  out.push('  on-core time by leaf function (self):');
  for (const [f, us] of top(self, 15)) out.push(`    ${ms(us).padStart(8)} ms  ${f}`);
  out.push('  on-core time by the nearest gateway frame on the stack:');
  for (const [f, us] of top(callers, 12)) out.push(`    ${ms(us).padStart(8)} ms  ${f}`);
  // Stretches: the loop busy with no idle sample in between; each is a stall for every other request.
  const stretches: Sample[][] = [];
  let run: Sample[] = [];
  for (const s of inWindow) {
    if (idle(s)) {
      if (run.length > 0) stretches.push(run);
      run = [];
    } else run.push(s);
  }
  if (run.length > 0) stretches.push(run);
  const long = stretches.filter((r) => sum(r, 'us') >= MIN_STRETCH_MS * 1000);
  const longest = long.reduce((m, r) => Math.max(m, sum(r, 'us')), 0);
  out.push(
    `  stretches of the loop busy without a break ≥ ${MIN_STRETCH_MS} ms: ${long.length}, ${ms(long.reduce((a, r) => a + sum(r, 'us'), 0))} ms in all ` +
      `(on a core ~${ms(long.reduce((a, r) => a + sum(r, 'run'), 0))}), longest ${ms(longest)} ms; the longest 12 (wall ms [on a core]: what filled them, on-core ms):`,
  );
  for (const r of long.sort((a, b) => sum(b, 'us') - sum(a, 'us')).slice(0, 12)) {
    const within = new Map<string, number>();
    for (const s of r) add(within, s.stack[0] === ownCaller(s.stack) ? s.stack[0]! : `${s.stack[0]} ← ${ownCaller(s.stack)}`, s.run);
    out.push(`    ${ms(sum(r, 'us')).padStart(6)} [${ms(sum(r, 'run'))}] at +${ms(r[0]!.at - from)} ms: ${top(within, 3).map(([f, u]) => `${ms(u)} ${f}`).join('; ')}`);
  }
  return out;
}

/** The gateway's main thread (its TID is its PID): user and system CPU, time on a core and runnable without one (ms). */
function mainThreadTimes(pid: number): { user: number; system: number; run: number; wait: number } {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const sched = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(' ');
  return { user: Number(f[11]) * 10, system: Number(f[12]) * 10, run: Number(sched[0]) / 1e6, wait: Number(sched[1]) / 1e6 };
}

async function main(): Promise<void> {
  await buildDist({ quiet: true });
  const dir = mkdtempSync(join(tmpdir(), 'dpg-hol-profile-'));
  const [http, grpc, proxy] = [await freePort(), await freePort(), await freePort()];
  const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', `listen: 127.0.0.1:${http}`)
    .replace('listen: 127.0.0.1:9090', `listen: 127.0.0.1:${grpc}`)
    .replace('listen: 127.0.0.1:15001', `listen: 127.0.0.1:${proxy}`)
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
    .replace('maxBodyBytes: 10485760', 'maxBodyBytes: 67108864')
    .replace('limits:\n', `limits:\n  workers: { idleMs: ${IDLE_MS} }\n`);
  if (!config.includes('workers: { idleMs')) throw new Error('the profile config was not edited');
  writeFileSync(join(dir, 'gateway.yaml'), config);
  const profiles = join(dir, 'profiles');
  const flags = (process.env.BENCH_GATEWAY_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const gw = spawn(process.execPath, [...flags, '--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${INTERVAL_US}`, 'bin/dpg.js', 'serve', '-c', join(dir, 'gateway.yaml')], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'bench', DPG_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const { lines } = await import('../test/helpers/netns.ts');
    const out = lines(gw.stdout);
    await out.waitFor(/"msg":"ready"/, 120_000);
    const tokenRes = await request(`http://127.0.0.1:${http}/gateway/identity/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': 'demo-api-key' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'demo-client', client_secret: 'demo-secret' }).toString(),
    });
    const token = ((await tokenRes.body.json()) as { access_token: string }).access_token;
    const bodies = heavyDocuments(SCALE).map((h) => ({ type: h.type, mb: h.dataSet.length / MiB, body: Buffer.from(envelopeOf(h)) }));
    const send = async (b: (typeof bodies)[number]): Promise<number> => {
      const res = await request(`http://127.0.0.1:${http}/api/protect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-resource-token': token, 'x-data-set-type': b.type },
        body: b.body,
        headersTimeout: 600_000,
        bodyTimeout: 600_000,
      });
      for await (const _ of res.body);
      return res.statusCode;
    };
    // One round to warm the event loop's code; the profiled round follows once the worker has been
    // reaped (idleMs), as in the head-of-line bench, so it starts a new worker (BENCH_WARM_WORKER=1: it does not).
    await Promise.all(bodies.map(send));
    await new Promise((r) => setTimeout(r, WARM_WORKER ? 0 : IDLE_MS + 2000));
    const seenBefore = out.all().length;
    const t0 = mainThreadTimes(gw.pid!);
    const from = Number(process.hrtime.bigint() / 1000n);
    const statuses = await Promise.all(bodies.map(send));
    const to = Number(process.hrtime.bigint() / 1000n);
    const t1 = mainThreadTimes(gw.pid!);
    const during = out.all().slice(seenBefore).filter((l) => !l.startsWith('{'));
    gw.kill('SIGTERM');
    await new Promise((r) => gw.once('exit', r));
    const files = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
    const main = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f));
    if (!main) throw new Error(`no main-thread profile among ${files.join(', ')}`);
    console.log(`heavy: ${bodies.map((b) => `${b.type} ${b.mb.toFixed(1)} MB → ${statuses[bodies.indexOf(b)]}`).join(', ')}; sampled every ${INTERVAL_US} µs; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
    console.log(
      `main thread by the kernel's count: user ${(t1.user - t0.user).toFixed(0)} ms, system ${(t1.system - t0.system).toFixed(0)} ms; ` +
        `on a core ${(t1.run - t0.run).toFixed(0)} ms, runnable without one ${(t1.wait - t0.wait).toFixed(0)} ms`,
    );
    for (const line of report(samplesOf(JSON.parse(readFileSync(join(profiles, main), 'utf8')) as CpuProfile), from, to)) console.log(line);
    if (during.length > 0) console.log(`gateway stdout during the profiled round (not log lines):\n${during.join('\n')}`);
    if (process.env.BENCH_PROFILE_KEEP) {
      cpSync(profiles, process.env.BENCH_PROFILE_KEEP, { recursive: true });
      console.log(`profiles kept in ${process.env.BENCH_PROFILE_KEEP}`);
    }
  } finally {
    if (gw.exitCode === null) gw.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
