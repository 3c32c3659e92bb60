// Loaded into a proxy process under test (`node --import ./bench/peers/tail-probe.mjs bin/dpg.js serve …`,
// bench/proxy-tail.bench.ts) to find where a slow request's time went. Plain JavaScript: dpg serve
// runs the build, without the TypeScript loader. It records, until the bench asks (SIGUSR2):
//
//   - the event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution);
//   - every GC pause with its kind and start (PerformanceObserver 'gc');
//   - with TAIL_PROBE_PHASES=1, per request carrying an `x-bench-seq` header (the bench numbers its
//     requests; the proxy forwards the header upstream like any other), the moment of each phase
//     from diagnostics channels: node:http's request start and response finish, undici's request
//     created, head written, body sent, upstream head and upstream end, and when the app's request
//     body had been read to its end (for a routed request, before it is protected).
//
// On SIGUSR2 it writes what it has as JSON to $TAIL_PROBE_OUT, prints `tail-probe: written <n>` on
// stderr (n counts the reports), and starts afresh. Nothing here changes what the proxy sends.

import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const OUT = process.env.TAIL_PROBE_OUT;
const PHASES = process.env.TAIL_PROBE_PHASES === '1';
const SEQ = 'x-bench-seq';
// A record's moments: [0] node:http's request start, then these.
const CREATED = 1;
const SENT = 2;
const BODY_SENT = 3;
const UP_HEADERS = 4;
const UP_END = 5;
const FINISH = 6;
const BODY_READ = 7;

let loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
/** start, duration, kind (1 scavenge, 4 mark-compact, 8 incremental marking, 16 weak callbacks: perf_hooks' constants). */
let gcs = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push(e.startTime, e.duration, e.detail?.kind ?? e.kind);
}).observe({ entryTypes: ['gc'] });

/** seq → moments; only for requests the bench numbered. */
let records = new Map();
const ofServer = new WeakMap();
const ofUndici = new WeakMap();

/** The bench's sequence number in undici's request headers (a flat name/value array, or a string in older undici). */
function seqOfUndici(headers) {
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === SEQ) return Number(headers[i + 1]);
    return undefined;
  }
  if (typeof headers === 'string') {
    const m = /x-bench-seq: *(\d+)/i.exec(headers);
    return m ? Number(m[1]) : undefined;
  }
  return undefined;
}

const mark = (rec, at) => {
  if (rec !== undefined && rec[at] === 0) rec[at] = performance.now();
};

if (PHASES) {
  subscribe('http.server.request.start', ({ request, response }) => {
    const seq = request.headers[SEQ];
    if (seq === undefined) return;
    const rec = [performance.now(), 0, 0, 0, 0, 0, 0, 0];
    records.set(Number(seq), rec);
    ofServer.set(response, rec);
    // An 'end' listener does not start the stream flowing: whoever reads the body still decides when.
    request.once('end', () => mark(rec, BODY_READ));
  });
  subscribe('http.server.response.finish', ({ response }) => mark(ofServer.get(response), FINISH));
  subscribe('undici:request:create', ({ request }) => {
    const seq = seqOfUndici(request.headers);
    const rec = seq === undefined ? undefined : records.get(seq);
    if (rec === undefined) return;
    ofUndici.set(request, rec);
    mark(rec, CREATED);
  });
  subscribe('undici:client:sendHeaders', ({ request }) => mark(ofUndici.get(request), SENT));
  subscribe('undici:request:bodySent', ({ request }) => mark(ofUndici.get(request), BODY_SENT));
  subscribe('undici:request:headers', ({ request }) => mark(ofUndici.get(request), UP_HEADERS));
  subscribe('undici:request:trailers', ({ request }) => mark(ofUndici.get(request), UP_END));
}

/** Reports written so far: the bench matches each report to its ask by this number. */
let generation = 0;

process.on('SIGUSR2', () => {
  const ms = (ns) => ns / 1e6;
  generation++;
  const out = {
    generation,
    now: performance.now(),
    /** The young generation's capacity now (both semi-spaces), MB. */
    newSpaceMb: getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20,
    loop: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max), mean: ms(loop.mean), count: loop.count },
    gcs,
    records: [...records].map(([seq, rec]) => [seq, ...rec]),
  };
  if (OUT !== undefined) writeFileSync(OUT, JSON.stringify(out));
  loop.disable();
  loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  gcs = [];
  records = new Map();
  process.stderr.write(`tail-probe: written ${generation}\n`);
});
