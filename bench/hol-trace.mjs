// Where a light request's time goes while heavy documents are protected (bench/head-of-line.bench.ts).
// Plain JS so the gateway under test (dist/) can load it with `--import`: then, on its main thread,
// it records
//   - event-loop stalls: a 5 ms interval timer that fired late, with what the loop's thread did in
//     the gap, read from /proc/self/task/<pid>/schedstat (on a core / runnable without one / asleep),
//   - garbage collections (perf_hooks `gc` entries: start, duration, kind),
//   - each HTTP request that carries the bench's `x-hol-seq` header: when node:http parsed its
//     headers, when its body ended, when the upstream answered (undici's diagnostics channels, proxy
//     doors) and when the answer was finished,
// and writes them as one JSON document to $DPG_HOL_TRACE when the process exits. The bench's driver
// imports traceLoop() for its own loop. Timestamps are epoch milliseconds (performance.timeOrigin +
// performance.now()), comparable between processes on one machine. Only bench headers and timings
// are recorded: never a header value other than x-hol-seq, never a byte of a body.

import diagnostics from 'node:diagnostics_channel';
import { readFileSync, writeFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

export const epochNow = () => performance.timeOrigin + performance.now();

/** The calling process's main thread: ms on a core, ms runnable without one (Linux; zeros elsewhere). */
function loopSchedstat() {
  try {
    const f = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ');
    return [Number(f[0]) / 1e6, Number(f[1]) / 1e6];
  } catch {
    return [0, 0];
  }
}

const GC_KINDS = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };

/**
 * Starts recording this thread's loop stalls and GC pauses. A stall is a tick that came `minStallMs`
 * or more late; `run`/`wait` are the loop thread's ms on a core and runnable without one over the
 * whole gap (the rest of the gap it slept: idle, or blocked off-CPU).
 */
export function traceLoop({ tickMs = 5, minStallMs = 10 } = {}) {
  const stalls = [];
  const gcs = [];
  let last = epochNow();
  let [run0, wait0] = loopSchedstat();
  const timer = setInterval(() => {
    const t = epochNow();
    const [run, wait] = loopSchedstat();
    if (t - last - tickMs >= minStallMs) stalls.push({ at: last, ms: t - last, run: run - run0, wait: wait - wait0 });
    last = t;
    run0 = run;
    wait0 = wait;
  }, tickMs);
  timer.unref();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ at: performance.timeOrigin + e.startTime, ms: e.duration, kind: GC_KINDS[e.detail?.kind] ?? String(e.detail?.kind) });
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stalls,
    gcs,
    stop() {
      clearInterval(timer);
      observer.disconnect();
    },
  };
}

/** The bench's own request tag: in node:http's parsed headers, or in undici's request headers (array or string). */
function seqOf(headers) {
  if (!headers) return undefined;
  if (typeof headers === 'object' && !Array.isArray(headers)) return headers['x-hol-seq'];
  const m = /x-hol-seq(?::\s*|,)([^\r\n,]+)/i.exec(Array.isArray(headers) ? headers.map(String).join(',') : String(headers));
  return m?.[1]?.trim();
}

function traceRequests() {
  const requests = new Map();
  const entry = (seq) => {
    let r = requests.get(seq);
    if (!r) requests.set(seq, (r = { seq }));
    return r;
  };
  diagnostics.subscribe('http.server.request.start', ({ request }) => {
    const seq = seqOf(request.headers);
    if (seq === undefined) return;
    const r = entry(seq);
    r.start ??= epochNow();
    request.once('end', () => (r.bodyEnd ??= epochNow()));
  });
  diagnostics.subscribe('http.server.response.finish', ({ request }) => {
    const seq = seqOf(request.headers);
    if (seq !== undefined) entry(seq).finish ??= epochNow();
  });
  diagnostics.subscribe('undici:request:create', ({ request }) => {
    const seq = seqOf(request.headers);
    if (seq !== undefined) entry(seq).upstreamSent ??= epochNow();
  });
  diagnostics.subscribe('undici:request:headers', ({ request }) => {
    const seq = seqOf(request.headers);
    if (seq !== undefined) entry(seq).upstreamAnswered ??= epochNow();
  });
  return requests;
}

const out = process.env.DPG_HOL_TRACE;
if (out && isMainThread && process.argv.some((a) => /dpg(\.js)?$/.test(a))) {
  const loop = traceLoop();
  const requests = traceRequests();
  process.once('exit', () => {
    writeFileSync(out, JSON.stringify({ pid: process.pid, stalls: loop.stalls, gcs: loop.gcs, requests: [...requests.values()] }));
  });
}
