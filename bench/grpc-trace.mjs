// Where routed gRPC calls wait inside the gateway (bench/grpc-route.bench.ts, GRPC_BENCH_TRACE=1).
// Plain JS so the gateway under test (dist/) can load it with `--import`. On the main thread of
// `dpg serve` it records, until the process exits:
//   - each gRPC call's phases from the gateway's diagnostics channel (src/proxy/http2/call-trace.ts):
//     request id → { phase: epoch ms },
//   - event-loop stalls and garbage collections (hol-trace.mjs's traceLoop),
// and writes them as one JSON document to $DPG_GRPC_TRACE. Only ids, phase names and times: the
// channel carries nothing else.

import diagnostics from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { traceLoop } from './hol-trace.mjs';

const out = process.env.DPG_GRPC_TRACE;
if (out && isMainThread && process.argv.some((a) => /dpg(\.js)?$/.test(a))) {
  const calls = new Map();
  diagnostics.subscribe('dpg:proxy:grpc-call', ({ requestId, phase, at }) => {
    let c = calls.get(requestId);
    if (c === undefined) calls.set(requestId, (c = {}));
    c[phase] ??= at;
  });
  const loop = traceLoop({ tickMs: 5, minStallMs: 5 });
  process.once('exit', () => {
    writeFileSync(out, JSON.stringify({ pid: process.pid, calls: Object.fromEntries(calls), stalls: loop.stalls, gcs: loop.gcs }));
  });
}
