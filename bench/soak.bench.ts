// The soak: one `dpg serve` process driven through every door at once, at a steady total rate, for
// minutes to hours, sampled every 10 s. It shows what single-request tests cannot: memory, handles
// and descriptors that creep, latency that drifts, and rare failures that only volume finds.
//
//   SOAK_MINUTES=30 npm run bench -- soak      (root: a network namespace and iptables for the transparent door)
//
// Doors, round-robin at SOAK_RATE req/s in total (open loop: sends follow the clock): the forward
// proxy with routed Mask and routed Pseudonymise (absolute-form HTTP), routed Mask in an intercepted
// CONNECT (HTTPS), pass-through (absolute-form, unrouted host) and a blind tunnel (CONNECT, unrouted
// host, TLS to the upstream); the transparent listener, routed Mask on a captured port and spliced on
// an unrouted captured port (the namespace has `dpg capture`); the reverse listener with Mask;
// /api/protect; /file/protect (multipart CSV); gRPC ProtectValues. Every 25th request of a door
// closes its connection (undici `reset`), so connections and tunnels churn as in real traffic.
// A request fails when its status is not 200, its connection breaks, or its answer is wrong: a
// protected door that returns the card number in clear, or a pass-through door that altered it.
//
// Every 10 s the driver samples the gateway process: RSS and open descriptors from /proc/<pid>,
// heap used, event-loop delay (p99 over the 10 s) and active handles from its /metrics (admin
// listener). Output: docs/reliability/soak-<date>.csv and .svg (SOAK_OUT to change the folder),
// and the goals checked against the first and last SOAK_WINDOW_MINUTES (default 5, at most a third
// of the run): RSS grows < 10% after the first window, descriptors and handles do not grow,
// 0 failed requests, last window's p99 ≤ 1.5 × the first's.
//
// Knobs (environment): SOAK_MINUTES (default 2), SOAK_RATE (default 500), SOAK_WINDOW_MINUTES,
// SOAK_OUT (output folder), SOAK_SAMPLE_SECONDS (default 10).

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DoorTargets } from '../test/helpers/door-clients.ts';
import { labSkipReason, ROOT, startLab } from './gateway-lab.ts';
import { linePlot } from './svg-plot.ts';

const SELF = fileURLToPath(import.meta.url);
const MINUTES = Number(process.env.SOAK_MINUTES ?? 2);
const RATE = Number(process.env.SOAK_RATE ?? 500);
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 10);
const WINDOW_MINUTES = Number(Math.min(Number(process.env.SOAK_WINDOW_MINUTES ?? 5), MINUTES / 3).toFixed(2));
const OUT = process.env.SOAK_OUT ?? join(ROOT, 'docs/reliability');
/** Every Nth request of a door closes its connection afterwards. */
const RESET_EVERY = 25;
/** Requests waiting for an answer, at most (see the send loop). */
const MAX_INFLIGHT = 2000;

/** A figure for the log and CSV; a metric that could not be read is empty. */
const f = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '');

// ---- the driver (inside the namespace, as root): load, samples, summary -------------------------

interface DriverSpec {
  readonly pid: number;
  readonly targets: DoorTargets;
  readonly adminPort: number;
  readonly rate: number;
  readonly seconds: number;
  readonly sampleSeconds: number;
}

export interface Sample {
  readonly minute: number;
  readonly rssMb: number;
  readonly heapUsedMb: number;
  readonly loopDelayP99Ms: number;
  readonly handles: number;
  readonly fds: number;
  /** CPU time the gateway used in the period, as a share of one core (%). */
  readonly cpuPercent: number;
  readonly requests: number;
  readonly failed: number;
  /** Sends not made because MAX_INFLIGHT requests were already waiting. */
  readonly skipped: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

async function drive(spec: DriverSpec): Promise<void> {
  const { request } = await import('undici');
  const { bearerToken, makeDoors } = await import('../test/helpers/door-clients.ts');
  let bearer = await bearerToken(spec.targets.ports.http);
  // Tokens live 15 minutes (the default config): a long soak takes a new one every 5.
  const refresh = setInterval(() => void bearerToken(spec.targets.ports.http).then((t) => (bearer = t), () => undefined), 300_000);
  const { doors, close } = makeDoors(spec.targets, () => bearer);

  // Latencies of the current sample period, and of the whole run by minute (for the windows' p99).
  let period: number[] = [];
  let periodFailed = 0;
  let periodSkipped = 0;
  const byDoor = doors.map(() => ({ sent: 0, failed: 0, reasons: new Map<string, number>() }));
  const all: Float64Array[] = [];
  const allAt: Float64Array[] = [];
  let count = 0;
  const record = (sentAtS: number, ms: number): void => {
    const chunk = Math.floor(count / 65536);
    if (all[chunk] === undefined) {
      all[chunk] = new Float64Array(65536);
      allAt[chunk] = new Float64Array(65536);
    }
    all[chunk][count % 65536] = ms;
    allAt[chunk][count % 65536] = sentAtS;
    count++;
  };

  const start = performance.now();
  const send = (i: number): Promise<void> => {
    const doorIndex = i % doors.length;
    const stats = byDoor[doorIndex];
    const reset = ++stats.sent % RESET_EVERY === 0;
    const sentAt = performance.now();
    return doors[doorIndex].send(reset).then(
      (outcome) => {
        if (outcome.kind !== 'ok') return fail(stats, `${outcome.kind}${outcome.detail ? ` ${outcome.detail}` : ''}`);
        const ms = performance.now() - sentAt;
        period.push(ms);
        record((sentAt - start) / 1000, ms);
      },
      (err: Error) => fail(stats, `thrown ${err.name}`),
    );
  };
  const fail = (stats: (typeof byDoor)[number], reason: string): void => {
    periodFailed++;
    stats.failed++;
    stats.reasons.set(reason, (stats.reasons.get(reason) ?? 0) + 1);
  };

  const scrape = async (): Promise<Record<string, number>> => {
    const res = await request(`http://127.0.0.1:${spec.adminPort}/metrics`);
    const text = await res.body.text();
    const values: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^(nodejs_heap_size_used_bytes|nodejs_eventloop_lag_p99_seconds|nodejs_active_handles_total|process_open_fds) ([0-9.e+-]+)$/.exec(line);
      if (m) values[m[1]] = Number(m[2]);
    }
    return values;
  };
  const percentile = (xs: number[], q: number): number => (xs.length === 0 ? NaN : xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]);
  const cpuTicks = (): number => {
    // utime and stime: fields 14 and 15 of /proc/<pid>/stat, after the parenthesised command name.
    const fields = readFileSync(`/proc/${spec.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  let lastTicks = cpuTicks();
  let lastTickAt = performance.now();
  const sample = async (): Promise<void> => {
    const ticks = cpuTicks();
    const now = performance.now();
    // USER_HZ is 100 on Linux: a tick is 10 ms.
    const cpuPercent = ((ticks - lastTicks) * 10 * 100) / (now - lastTickAt);
    lastTicks = ticks;
    lastTickAt = now;
    const status = readFileSync(`/proc/${spec.pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    const fds = readdirSync(`/proc/${spec.pid}/fd`).length;
    const m = await scrape();
    const latencies = period.sort((a, b) => a - b);
    const s: Sample = {
      minute: (performance.now() - start) / 60_000,
      rssMb: rssKb / 1024,
      heapUsedMb: (m.nodejs_heap_size_used_bytes ?? NaN) / 2 ** 20,
      loopDelayP99Ms: (m.nodejs_eventloop_lag_p99_seconds ?? NaN) * 1000,
      handles: m.nodejs_active_handles_total ?? NaN,
      fds,
      cpuPercent,
      requests: latencies.length + periodFailed,
      failed: periodFailed,
      skipped: periodSkipped,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
    };
    period = [];
    periodFailed = 0;
    periodSkipped = 0;
    process.stdout.write(JSON.stringify({ sample: s }) + '\n');
  };

  const intervalMs = 1000 / spec.rate;
  const end = start + spec.seconds * 1000;
  const inflight = new Set<Promise<void>>();
  let sent = 0;
  let skipped = 0;
  let nextSample = start + spec.sampleSeconds * 1000;
  const sampling: Promise<void>[] = [];
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      // Timer ticks, not a busy loop: a spinning generator would steal the CPU it is measuring.
      while (start + sent * intervalMs <= now && start + sent * intervalMs < end) {
        // A gateway that cannot keep up would make the backlog (and this process) grow without
        // bound: past MAX_INFLIGHT a scheduled send is skipped, and counted.
        if (inflight.size >= MAX_INFLIGHT) {
          sent++;
          skipped++;
          periodSkipped++;
          continue;
        }
        const p = send(sent++);
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      if (now >= nextSample) {
        nextSample += spec.sampleSeconds * 1000;
        sampling.push(sample().catch((err: Error) => void process.stderr.write(`sample failed: ${err.message}\n`)));
      }
      if (start + sent * intervalMs >= end) resolve();
      else setTimeout(tick, 0);
    };
    tick();
  });
  await Promise.all([...inflight]);
  await Promise.all(sampling);
  clearInterval(refresh);

  // p99 of the first and last window (by send time), for the drift goal.
  const windowS = (spec.seconds * WINDOW_MINUTES) / MINUTES;
  const first: number[] = [];
  const last: number[] = [];
  for (let k = 0; k < count; k++) {
    const at = allAt[Math.floor(k / 65536)][k % 65536];
    const ms = all[Math.floor(k / 65536)][k % 65536];
    if (at < windowS) first.push(ms);
    else if (at >= spec.seconds - windowS) last.push(ms);
  }
  first.sort((a, b) => a - b);
  last.sort((a, b) => a - b);
  const doorsOut = doors.map((d, i) => ({ name: d.name, sent: byDoor[i].sent, failed: byDoor[i].failed, reasons: Object.fromEntries(byDoor[i].reasons) }));
  process.stdout.write(JSON.stringify({ summary: { sent: sent - skipped, skipped, firstP99: percentile(first, 0.99), lastP99: percentile(last, 0.99), doors: doorsOut } }) + '\n');
  await close();
}

// ---- the run (host side, root) ------------------------------------------------------------------

interface Summary {
  readonly sent: number;
  readonly skipped: number;
  readonly firstP99: number;
  readonly lastP99: number;
  readonly doors: { name: string; sent: number; failed: number; reasons: Record<string, number> }[];
}

async function main(): Promise<void> {
  const skip = await labSkipReason();
  if (skip) {
    console.log(`soak bench skipped: ${skip}`);
    return;
  }
  const lab = await startLab();
  try {
    const gateway = await lab.startGateway();
    const uptimeBefore = spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
    const startedAt = new Date();
    console.log(
      `soak: ${MINUTES} min at ${RATE} req/s over 11 doors, samples every ${SAMPLE_SECONDS} s, windows of ${WINDOW_MINUTES} min; ` +
        `${cpus().length} cores; load before: ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ${startedAt.toISOString()}`,
    );
    const spec: DriverSpec = {
      pid: gateway.pid,
      targets: gateway.targets,
      adminPort: gateway.ports.admin,
      rate: RATE,
      seconds: MINUTES * 60,
      sampleSeconds: SAMPLE_SECONDS,
    };
    const driver = lab.spawn(SELF, 'drive', JSON.stringify(spec));
    driver.stderr?.on('data', (d: Buffer) => process.stderr.write(`[driver] ${d}`));
    const samples: Sample[] = [];
    const loads: number[] = [];
    let summary: Summary | undefined;
    await new Promise<void>((resolve, reject) => {
      let partial = '';
      driver.stdout?.on('data', (d: Buffer) => {
        const parts = (partial + d.toString()).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          if (!line.startsWith('{')) continue;
          // JSON writes NaN (a metric that could not be read) as null.
          const msg = JSON.parse(line, (_k, v) => (v === null ? NaN : v)) as { sample?: Sample; summary?: Summary };
          if (msg.sample) {
            samples.push(msg.sample);
            loads.push(loadavg()[0]);
            const s = msg.sample;
            console.log(
              `  ${f(s.minute).padStart(5)} min  rss ${f(s.rssMb)} MB  heap ${f(s.heapUsedMb)} MB  loop p99 ${f(s.loopDelayP99Ms)} ms  ` +
                `handles ${s.handles}  fds ${s.fds}  cpu ${f(s.cpuPercent, 0)}%  req ${s.requests} failed ${s.failed} skipped ${s.skipped}  p50 ${f(s.p50Ms)} p99 ${f(s.p99Ms)} ms  load ${loadavg()[0].toFixed(2)}`,
            );
          }
          if (msg.summary) summary = msg.summary;
        }
      });
      driver.once('exit', (code) => (code === 0 && summary ? resolve() : reject(new Error(`driver exited ${code}`))));
    });
    const result = summary as Summary;
    const stamp = startedAt.toISOString().slice(0, 10);
    const verdicts = judge(samples, result);
    const uptimeAfter = spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();

    mkdirSync(OUT, { recursive: true });
    const header = 'minute,rss_mb,heap_used_mb,loop_delay_p99_ms,active_handles,open_fds,cpu_percent,requests,failed,skipped,p50_ms,p99_ms,load_1min';
    const rows = samples.map((s, i) =>
      [f(s.minute, 2), f(s.rssMb), f(s.heapUsedMb), f(s.loopDelayP99Ms, 2), s.handles, s.fds, f(s.cpuPercent, 0), s.requests, s.failed, s.skipped, f(s.p50Ms, 2), f(s.p99Ms, 2), loads[i].toFixed(2)].join(','),
    );
    writeFileSync(join(OUT, `soak-${stamp}.csv`), [header, ...rows].join('\n') + '\n');
    const title = `dpg soak ${startedAt.toISOString().slice(0, 16)}Z: ${MINUTES} min, ${RATE} req/s offered over 11 doors, ${result.sent} requests, ${result.doors.reduce((a, d) => a + d.failed, 0)} failed`;
    const svg = plot(title, samples, loads, `nice ${spawnSync('nice', { encoding: 'utf8' }).stdout.trim()}; load before: ${uptimeBefore.replace(/.*load average: /, '')}; samples every ${SAMPLE_SECONDS} s`);
    writeFileSync(join(OUT, `soak-${stamp}.svg`), svg);

    console.log(`\nper door (sent / failed):`);
    for (const d of result.doors) console.log(`  ${d.name.padEnd(30)} ${String(d.sent).padStart(8)} ${String(d.failed).padStart(6)}${d.failed ? `  ${JSON.stringify(d.reasons)}` : ''}`);
    const errorLines = [...gateway.log.errors.values()].reduce((a, n) => a + n, 0);
    console.log(`gateway log: ${gateway.log.lines} lines, ${errorLines} at error level${errorLines ? ` ${JSON.stringify(Object.fromEntries(gateway.log.errors))}` : ''}`);
    for (const v of verdicts) console.log(`goal: ${v}`);
    console.log(`load before: ${uptimeBefore}\nload after:  ${uptimeAfter}`);
    console.log(`written: ${join(OUT, `soak-${stamp}.csv`)} and .svg`);
  } finally {
    await lab.close();
  }
}

function plot(title: string, samples: readonly Sample[], loads: readonly number[], note: string): string {
  const x = samples.map((s) => s.minute);
  return linePlot(
    title,
    x,
    [
      { title: 'Memory', unit: 'MB', series: [{ label: 'RSS', values: samples.map((s) => s.rssMb), color: '#1f77b4' }, { label: 'heap used', values: samples.map((s) => s.heapUsedMb), color: '#ff7f0e' }] },
      { title: 'Descriptors and handles', unit: '', series: [{ label: 'open fds', values: samples.map((s) => s.fds), color: '#2ca02c' }, { label: 'active handles', values: samples.map((s) => s.handles), color: '#9467bd' }] },
      { title: 'Latency (10 s periods)', unit: 'ms', series: [{ label: 'p50', values: samples.map((s) => s.p50Ms), color: '#17becf' }, { label: 'p99', values: samples.map((s) => s.p99Ms), color: '#d62728' }, { label: 'event-loop delay p99', values: samples.map((s) => s.loopDelayP99Ms), color: '#8c564b' }] },
      { title: 'Requests per period', unit: '', series: [{ label: 'answered', values: samples.map((s) => s.requests - s.failed), color: '#2ca02c' }, { label: 'failed', values: samples.map((s) => s.failed), color: '#d62728' }, { label: 'skipped (2,000 waiting)', values: samples.map((s) => s.skipped), color: '#7f7f7f' }] },
      { title: 'Gateway CPU (% of one core), machine load (1-min average, 2 cores)', unit: '', series: [{ label: 'gateway CPU %', values: samples.map((s) => s.cpuPercent), color: '#e377c2' }, { label: 'load average', values: loads, color: '#7f7f7f' }] },
    ],
    note,
  );
}

/** Draws the plot again from a CSV the soak wrote (the plot's look can change after a long run). */
function replot(csvFile: string, title: string, note: string): void {
  const [header, ...rows] = readFileSync(csvFile, 'utf8').trim().split('\n');
  const cols = header.split(',');
  const at = (row: string[], name: string): number => (row[cols.indexOf(name)] === '' ? NaN : Number(row[cols.indexOf(name)]));
  const parsed = rows.map((r) => r.split(','));
  const samples: Sample[] = parsed.map((r) => ({
    minute: at(r, 'minute'),
    rssMb: at(r, 'rss_mb'),
    heapUsedMb: at(r, 'heap_used_mb'),
    loopDelayP99Ms: at(r, 'loop_delay_p99_ms'),
    handles: at(r, 'active_handles'),
    fds: at(r, 'open_fds'),
    cpuPercent: at(r, 'cpu_percent'),
    requests: at(r, 'requests'),
    failed: at(r, 'failed'),
    skipped: at(r, 'skipped'),
    p50Ms: at(r, 'p50_ms'),
    p99Ms: at(r, 'p99_ms'),
  }));
  writeFileSync(csvFile.replace(/\.csv$/, '.svg'), plot(title, samples, parsed.map((r) => at(r, 'load_1min')), note));
}

/** The goals, each as one line ending in MET or NOT MET. */
function judge(samples: readonly Sample[], summary: Summary): string[] {
  const w = WINDOW_MINUTES;
  const after = samples.filter((s) => s.minute >= w);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const met = (ok: boolean): string => (ok ? 'MET' : 'NOT MET');
  const rssBase = after[0]?.rssMb ?? NaN;
  const rssMax = Math.max(...after.map((s) => s.rssMb));
  const growth = rssMax / rssBase - 1;
  // Descriptors and handles move with the connections open at the moment of the sample: the
  // median of the window right after warm-up against the median of the last window.
  const early = samples.filter((s) => s.minute >= w && s.minute < 2 * w + 1e-9);
  const late = samples.filter((s) => s.minute >= MINUTES - w);
  const fdEarly = median(early.map((s) => s.fds));
  const fdLate = median(late.map((s) => s.fds));
  const hEarly = median(early.map((s) => s.handles));
  const hLate = median(late.map((s) => s.handles));
  const failed = summary.doors.reduce((a, d) => a + d.failed, 0);
  const ratio = summary.lastP99 / summary.firstP99;
  return [
    `RSS after the first ${w} min grows < 10%: ${rssBase.toFixed(1)} → max ${rssMax.toFixed(1)} MB (${(growth * 100).toFixed(1)}%) ${met(growth < 0.1)}`,
    `descriptors do not grow: median ${fdEarly} (minutes ${w}-${Number((2 * w).toFixed(2))}) → ${fdLate} (last ${w}) ${met(fdLate <= fdEarly * 1.05 + 2)}`,
    `handles do not grow: median ${hEarly} → ${hLate} ${met(hLate <= hEarly * 1.05 + 2)}`,
    `0 failed requests: ${failed} of ${summary.sent} ${met(failed === 0)}${summary.skipped ? ` (${summary.skipped} sends skipped: ${MAX_INFLIGHT} requests were waiting, the offered rate was not reached)` : ''}`,
    `last ${w} min p99 ≤ 1.5 × first ${w} min p99: ${summary.lastP99.toFixed(1)} vs ${summary.firstP99.toFixed(1)} ms (×${ratio.toFixed(2)}) ${met(ratio <= 1.5)}`,
  ];
}

const [mode, arg, ...rest] = process.argv.slice(2);
if (mode === 'replot') replot(arg, rest[0] ?? '', rest[1] ?? '');
else if (mode === 'drive') await drive(JSON.parse(arg) as DriverSpec);
else await main();
