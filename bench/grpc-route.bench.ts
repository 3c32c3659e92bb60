// Routed gRPC unary Mask through the forward proxy (CONNECT, TLS intercepted, HTTP/2), next to
// the same calls made directly to the upstream: added p50/p99 at a fixed open-loop rate with a
// ~1 KB message. A real gRPC route (a .proto file and the `customer` manifest) on `dpg serve` from
// the build, its own process; the @grpc/grpc-js upstream in another (bench/peers/grpc-echo-server.mjs).
// Run `npm run build` first.
//
// The load client decides what the baseline measures. grpc-js at 1,000 calls/s is itself the
// slowest part (its p99 is 15-20 ms straight to the upstream, and every millisecond the proxy adds
// is queued behind its own work), so the verdict is taken with a gRPC client of a few lines on
// node:http2 (one session, each call a stream: HEADERS, one DATA frame, trailers read); grpc-js
// is measured beside it for the app's view. Every socket of the path has Nagle's algorithm off
// (node:http2 sets it on its sessions' sockets, the proxy on those it accepts, grpc-js on its own;
// the CONNECT tunnel's is set here), so no call waits for a delayed ACK on our side.
//
//   npm run bench -- grpc-route        (GRPC_BENCH_RATE calls/s, default 1000; GRPC_BENCH_SECONDS, default 8;
//                                      GRPC_BENCH_CLIENT: h2 | grpc-js | both, default both)
//   GRPC_BENCH_TRACE=1                 the gateway traced (bench/grpc-trace.mjs): where the slowest 1%
//                                      of the node:http2 client's calls waited, phase by phase
//   GRPC_BENCH_COMPARE=<dir>           a second gateway from another build (<dir>/bin/dpg.js, built,
//                                      e.g. `git archive <commit>` + npm run build) measured in the same
//                                      rounds, alternating with this one: a same-run A/B of a change
//   GRPC_BENCH_GATEWAY_FLAGS="…"       node flags for the gateways (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof)

import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect as h2connect, constants as h2constants, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { freePort } from './dpg-serve.ts';
import { cpuSeconds } from './proc-stats.ts';
import { stopChildren } from './stop-children.ts';
import { tempDir, upstreamPki } from '../test/proxy/helpers.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RATE = Number(process.env.GRPC_BENCH_RATE ?? 1000);
const SECONDS = Number(process.env.GRPC_BENCH_SECONDS ?? 8);
const CLIENTS = (process.env.GRPC_BENCH_CLIENT ?? 'both') === 'both' ? ['h2', 'grpc-js'] : [process.env.GRPC_BENCH_CLIENT ?? 'h2'];
const TRACE = process.env.GRPC_BENCH_TRACE === '1';
const COMPARE = process.env.GRPC_BENCH_COMPARE;
const GATEWAY_FLAGS = (process.env.GRPC_BENCH_GATEWAY_FLAGS ?? '').split(' ').filter((f) => f !== '');
const GOAL_MS = 2;
/** A call not over by then is cancelled and counted as an error: a round always ends. */
const CALL_TIMEOUT_MS = 15_000;

const dir = tempDir();
const protoFile = join(dir, 'partner.proto');
writeFileSync(
  protoFile,
  `syntax = "proto3";
package partner.v1;
message Customer { string name = 1; string email = 2; string card_number = 3; string notes = 4; int64 id = 5; string plan = 6; }
service Customers { rpc Put(Customer) returns (Customer); }
`,
);
const Customers = (grpc.loadPackageDefinition(protoLoader.loadSync(protoFile, { keepCase: true, longs: String })) as unknown as { partner: { v1: { Customers: grpc.ServiceClientConstructor } } }).partner.v1.Customers;
const message = {
  name: 'Jane Doe',
  email: 'jane.doe@example.com',
  card_number: '4111 1111 1111 1111',
  notes: `order notes ${'lorem ipsum dolor sit amet '.repeat(34)}`,
  id: '42',
  plan: 'gold',
};

const pki = upstreamPki(tempDir());
writeFileSync(join(dir, 'up.crt'), pki.certPem);
writeFileSync(join(dir, 'up.key'), pki.keyPem);
const children: ChildProcess[] = [];
// A bench that fails half-way leaves no gateway or upstream behind.
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
const up = spawn(process.execPath, [join(ROOT, 'bench/peers/grpc-echo-server.mjs'), protoFile, join(dir, 'up.crt'), join(dir, 'up.key')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
children.push(up);
const port = Number(String((await once(up.stdout!, 'data'))[0]).trim());

/** One `dpg serve` with the partner route; `root`: the build it runs (this one, or GRPC_BENCH_COMPARE's). */
interface Gateway {
  readonly label: string;
  readonly proc: ChildProcess;
  readonly port: number;
  readonly caPem: string;
  readonly traceFile: string | undefined;
}

async function startGateway(label: string, root: string, trace: boolean): Promise<Gateway> {
  const proxyPort = await freePort();
  const home = tempDir();
  const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', `listen: 127.0.0.1:${await freePort()}`)
    .replace('listen: 127.0.0.1:9090', `listen: 127.0.0.1:${await freePort()}`)
    .replace('listen: 127.0.0.1:15001', `listen: 127.0.0.1:${proxyPort}\n  upstreamCa: ${pki.caFile}`)
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
    .replace(
      'routes: []                      # see docs/proxy.md',
      `routes:\n    - name: partner\n      match: { host: 127.0.0.1, port: ${port}, path: "/partner.v1.Customers/*" }\n      grpc: { protoFiles: [${protoFile}] }\n      request: { manifest: customer, jobType: Mask }`,
    );
  writeFileSync(join(home, 'gateway.yaml'), config);
  const traceFile = trace ? join(home, 'grpc-trace.json') : undefined;
  const proc = spawn(process.execPath, [...GATEWAY_FLAGS, ...(trace ? ['--import', join(ROOT, 'bench/grpc-trace.mjs')] : []), join(root, 'bin/dpg.js'), 'serve', '--config', join(home, 'gateway.yaml')], {
    cwd: root,
    env: { ...process.env, DPG_DATA_DIR: join(home, 'data'), DPG_LOG_LEVEL: 'error', NODE_ENV: 'test', ...(traceFile ? { DPG_GRPC_TRACE: traceFile } : {}) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(proc);
  for (let i = 0; i < 300; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${proxyPort}/proxy/ca.pem`);
      if (res.ok) return { label, proc, port: proxyPort, caPem: await res.text(), traceFile };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`dpg serve (${label}) did not start`);
}

const gateways: Gateway[] = [await startGateway('this build', ROOT, TRACE)];
if (COMPARE !== undefined) gateways.push(await startGateway(`compare (${COMPARE})`, COMPARE, false));

/** One unary call tagged with a request id: resolves with its success (grpc-status 0). */
type Call = (id: string) => Promise<boolean>;
interface Client {
  readonly call: Call;
  close(): void;
}

function grpcJsCall(via: Gateway | undefined): Client {
  const saved = process.env.grpc_proxy;
  if (via) process.env.grpc_proxy = `http://127.0.0.1:${via.port}`;
  else delete process.env.grpc_proxy;
  let c: grpc.Client;
  try {
    c = new Customers(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(via ? via.caPem : pki.caPem)));
  } finally {
    if (saved === undefined) delete process.env.grpc_proxy;
    else process.env.grpc_proxy = saved;
  }
  const put = (c as unknown as { Put: (m: unknown, md: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void) => void }).Put.bind(c);
  return {
    call: (id) => {
      const md = new grpc.Metadata();
      md.set('x-request-id', id);
      return new Promise((resolve) => put(message, md, (err) => resolve(err === null)));
    },
    close: () => c.close(),
  };
}

/** The request as gRPC frames it: flag 0, 4-byte length, the message (encoded once by grpc-js's own serializer). */
const requestFrame = (() => {
  const body = (Customers.service.Put as unknown as { requestSerialize: (m: unknown) => Buffer }).requestSerialize(message);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
})();

/** A CONNECT tunnel through a gateway's forward proxy to the upstream's address. */
function tunnel(via: Gateway): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: via.port, method: 'CONNECT', path: `127.0.0.1:${port}` });
    req.once('connect', (res, socket) => (res.statusCode === 200 ? resolve(socket) : reject(new Error(`CONNECT answered ${res.statusCode}`))));
    req.once('error', reject);
    req.end();
  });
}

async function h2Call(via: Gateway | undefined): Promise<Client> {
  const authority = `https://127.0.0.1:${port}`;
  let session: ClientHttp2Session;
  if (via) {
    const socket = (await tunnel(via)).setNoDelay(true);
    session = h2connect(authority, { createConnection: () => tlsConnect({ socket, host: '127.0.0.1', ca: via.caPem, ALPNProtocols: ['h2'] }) });
  } else {
    session = h2connect(authority, { ca: pki.caPem });
  }
  session.on('error', () => undefined);
  const call: Call = (id) =>
    new Promise((resolve) => {
      // A session the proxy shed or closed fails the calls left, rather than throwing out of the loop.
      if (session.destroyed || session.closed) return resolve(false);
      const stream = session.request({ ':method': 'POST', ':path': '/partner.v1.Customers/Put', 'content-type': 'application/grpc', te: 'trailers', 'x-request-id': id });
      let status: unknown;
      stream.on('trailers', (t) => (status = t['grpc-status']));
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      const timer = setTimeout(() => stream.close(h2constants.NGHTTP2_CANCEL), CALL_TIMEOUT_MS);
      stream.on('close', () => {
        clearTimeout(timer);
        resolve(status === '0');
      });
      stream.end(requestFrame);
    });
  return { call, close: () => session.close() };
}

/** One call as the client saw it (epoch ms): when it was due, when it was made, when it ended. */
interface CallRecord {
  readonly id: string;
  readonly scheduled: number;
  readonly sent: number;
  readonly done: number;
}

/** Open loop at RATE calls/s for `seconds`: each call's latency from its scheduled start, in ms. */
async function run(call: Call, seconds: number, tag: string): Promise<{ times: number[]; errors: number; records: CallRecord[] }> {
  const n = Math.round(RATE * seconds);
  const times: number[] = [];
  const records: CallRecord[] = [];
  let errors = 0;
  const origin = performance.timeOrigin;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    let done = 0;
    let sent = 0;
    const tick = (): void => {
      const due = Math.min(n, Math.floor(((performance.now() - start) * RATE) / 1000) + 1);
      for (; sent < due; sent++) {
        const scheduled = start + (sent * 1000) / RATE;
        const id = `${tag}-${sent}`;
        const made = performance.now();
        void call(id).then((ok) => {
          const end = performance.now();
          if (!ok) errors++;
          else {
            times.push(end - scheduled);
            records.push({ id, scheduled: origin + scheduled, sent: origin + made, done: origin + end });
          }
          if (++done === n) resolve();
        });
      }
      if (sent < n) setTimeout(tick, 1);
    };
    tick();
  });
  return { times, errors, records };
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');
const median3 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `routed gRPC unary Mask, ${JSON.stringify(message).length}-byte message as JSON (${requestFrame.length - 5} bytes as protobuf), ${RATE} calls/s open loop, ${SECONDS} s per round, 3 rounds; gateways: ${gateways.map((g) => g.label).join(', ')}; load average ${load()}`,
);
let verdict: number | undefined;
const traced: CallRecord[] = [];
for (const kind of CLIENTS) {
  const open = (via: Gateway | undefined): Promise<Client> => (kind === 'h2' ? h2Call(via) : Promise.resolve(grpcJsCall(via)));
  const direct = await open(undefined);
  const vias = await Promise.all(gateways.map((g) => open(g)));
  await run(direct.call, 1, `warm-${kind}-direct`);
  for (const [i, v] of vias.entries()) await run(v.call, 1, `warm-${kind}-${i}`);
  const added: number[][] = gateways.map(() => []);
  for (let round = 0; round < 3; round++) {
    const upCpu0 = cpuSeconds(up.pid!);
    const d = await run(direct.call, SECONDS, `${kind}-${round}-direct`);
    const upCpu1 = cpuSeconds(up.pid!);
    // With two gateways, the order alternates round by round: neither always runs first after the direct calls.
    const order = gateways.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    const parts: string[] = [];
    for (const i of order) {
      const g = gateways[i]!;
      const cpu0 = cpuSeconds(g.proc.pid!);
      const v = await run(vias[i]!.call, SECONDS, `${kind}-${round}-via${i}`);
      const cpu = cpuSeconds(g.proc.pid!) - cpu0;
      if (kind === 'h2' && i === 0) traced.push(...v.records);
      if (v.errors > 0) parts.push(`${g.label}: ${v.errors} errors`);
      added[i]!.push(pct(v.times, 99) - pct(d.times, 99));
      parts.push(
        `${g.label}: p50 ${pct(v.times, 50).toFixed(2)} ms p99 ${pct(v.times, 99).toFixed(2)} ms, added p50 ${(pct(v.times, 50) - pct(d.times, 50)).toFixed(2)} ms p99 ${(pct(v.times, 99) - pct(d.times, 99)).toFixed(2)} ms, gateway CPU ${((cpu * 1000) / (v.times.length || 1)).toFixed(3)} ms/call`,
      );
    }
    if (d.errors > 0) parts.push(`direct: ${d.errors} errors`);
    console.log(
      `${kind} client, round ${round + 1}: direct p50 ${pct(d.times, 50).toFixed(2)} ms p99 ${pct(d.times, 99).toFixed(2)} ms, upstream CPU ${(((upCpu1 - upCpu0) * 1000) / (d.times.length || 1)).toFixed(3)} ms/call; ${parts.join('; ')}; load ${load()}`,
    );
  }
  for (const [i, g] of gateways.entries()) console.log(`${kind} client, ${g.label}: median added p99 over 3 rounds ${median3(added[i]!).toFixed(2)} ms`);
  if (kind === 'h2') verdict = median3(added[0]!);
  direct.close();
  for (const v of vias) v.close();
}
if (verdict !== undefined) {
  // A round whose calls all failed has no p99: the goal is then not measured, neither met nor missed.
  const outcome = Number.isNaN(verdict) ? 'NOT MEASURED (a round had no successful call)' : verdict <= GOAL_MS ? 'MET' : 'NOT MET';
  console.log(`goal: added p99 ≤ ${GOAL_MS} ms at ${RATE} calls/s (node:http2 client, this build): ${verdict.toFixed(2)} ms — ${outcome}; load average ${load()}`);
}
await stopChildren(children);
const traceFile = gateways[0]!.traceFile;
if (traceFile !== undefined) {
  if (existsSync(traceFile)) reportTrace(traced, JSON.parse(readFileSync(traceFile, 'utf8')) as GatewayTrace);
  else console.log('trace: the gateway wrote no trace file');
}

interface GatewayTrace {
  readonly calls: Record<string, Record<string, number>>;
  readonly stalls: { at: number; ms: number }[];
  readonly gcs: { at: number; ms: number; kind: string }[];
}

/**
 * Where the slowest 1% of the traced calls (node:http2 client, through this build) waited: the
 * gaps between consecutive milestones — the client's own lateness, the way in, the request's
 * protection, the upstream's answer, the way back — next to the same gaps over all calls, and how
 * much of their time overlapped the gateway's GC pauses and event-loop stalls.
 */
function reportTrace(records: CallRecord[], trace: GatewayTrace): void {
  const milestones: [string, string][] = [
    ['scheduled', 'client due'],
    ['sent', 'client made the call'],
    ['open', 'gateway: call opened (request headers)'],
    ['protected', 'gateway: request message protected'],
    ['upFinish', 'gateway: END_STREAM handed to the upstream stream'],
    ['upHeaders', 'gateway: upstream response headers'],
    ['upTrailers', 'gateway: upstream trailers'],
    ['trailersSent', 'gateway: trailers sent to the app'],
    ['done', 'client: call closed'],
  ];
  const rows = records
    .map((r) => ({ r, p: { ...trace.calls[r.id], scheduled: r.scheduled, sent: r.sent, done: r.done } as Record<string, number> }))
    .filter(({ p }) => milestones.every(([m]) => typeof p[m] === 'number'));
  if (rows.length === 0) {
    console.log(`trace: no call carried every phase (${records.length} calls, ${Object.keys(trace.calls).length} traced)`);
    return;
  }
  rows.sort((a, b) => b.p.done! - b.p.scheduled! - (a.p.done! - a.p.scheduled!));
  const slow = rows.slice(0, Math.max(1, Math.ceil(rows.length / 100)));
  const overlap = (spans: { at: number; ms: number }[], from: number, to: number): number =>
    spans.reduce((sum, s) => sum + Math.max(0, Math.min(to, s.at + s.ms) - Math.max(from, s.at)), 0);
  const stat = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(2)}  mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)}  max ${Math.max(...xs).toFixed(2)}`;
  console.log(`\ntrace: where the slowest 1% (${slow.length} of ${rows.length} calls through this build, latency ${stat(slow.map(({ p }) => p.done! - p.scheduled!))} ms) waited, gap by gap (ms):`);
  for (let i = 1; i < milestones.length; i++) {
    const [from, fromName] = milestones[i - 1]!;
    const [to, toName] = milestones[i]!;
    const gap = (p: Record<string, number>): number => p[to]! - p[from]!;
    console.log(`  ${fromName} → ${toName}: slowest 1% ${stat(slow.map(({ p }) => gap(p)))}; all calls p50 ${pct(rows.map(({ p }) => gap(p)), 50).toFixed(2)}`);
  }
  const gcMs = slow.map(({ p }) => overlap(trace.gcs, p.sent!, p.done!));
  const stallMs = slow.map(({ p }) => overlap(trace.stalls, p.sent!, p.done!));
  console.log(
    `  the slowest 1% overlapping a gateway GC pause: ${gcMs.filter((m) => m > 0).length} of ${slow.length} (mean ${stat(gcMs)} ms of GC each); a loop stall ≥ 5 ms: ${stallMs.filter((m) => m > 0).length} (${stat(stallMs)} ms)`,
  );
  const span = Math.max(...rows.map(({ p }) => p.done!)) - Math.min(...rows.map(({ p }) => p.scheduled!));
  const byKind = new Map<string, { n: number; ms: number; max: number }>();
  for (const g of trace.gcs) {
    const k = byKind.get(g.kind) ?? { n: 0, ms: 0, max: 0 };
    byKind.set(g.kind, { n: k.n + 1, ms: k.ms + g.ms, max: Math.max(k.max, g.ms) });
  }
  console.log(`  gateway GC over the whole run (${(span / 1000).toFixed(1)} s of traced calls and the rest): ${[...byKind].map(([k, v]) => `${k} ${v.n}× ${v.ms.toFixed(0)} ms (max ${v.max.toFixed(1)})`).join(', ') || 'none'}; loop stalls ≥ 5 ms: ${trace.stalls.length} (max ${Math.max(0, ...trace.stalls.map((s) => s.ms)).toFixed(1)} ms)`);
}
