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
// is measured beside it for the app's view.
//
//   npm run bench -- grpc-route        (GRPC_BENCH_RATE calls/s, default 1000; GRPC_BENCH_SECONDS, default 8;
//                                      GRPC_BENCH_CLIENT: h2 | grpc-js | both, default both)

import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { freePort } from './dpg-serve.ts';
import { cpuSeconds } from './proc-stats.ts';
import { tempDir, upstreamPki } from '../test/proxy/helpers.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RATE = Number(process.env.GRPC_BENCH_RATE ?? 1000);
const SECONDS = Number(process.env.GRPC_BENCH_SECONDS ?? 8);
const CLIENTS = (process.env.GRPC_BENCH_CLIENT ?? 'both') === 'both' ? ['h2', 'grpc-js'] : [process.env.GRPC_BENCH_CLIENT ?? 'h2'];
const GOAL_MS = 2;

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
const up = spawn(process.execPath, [join(ROOT, 'bench/peers/grpc-echo-server.mjs'), protoFile, join(dir, 'up.crt'), join(dir, 'up.key')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
children.push(up);
const port = Number(String((await once(up.stdout!, 'data'))[0]).trim());

const proxyPort = await freePort();
const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
  .replace('listen: 127.0.0.1:8080', `listen: 127.0.0.1:${await freePort()}`)
  .replace('listen: 127.0.0.1:9090', `listen: 127.0.0.1:${await freePort()}`)
  .replace('listen: 127.0.0.1:15001', `listen: 127.0.0.1:${proxyPort}\n  upstreamCa: ${pki.caFile}`)
  .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
  .replace(
    'routes: []                      # see docs/proxy.md',
    `routes:\n    - name: partner\n      match: { host: 127.0.0.1, port: ${port}, path: "/partner.v1.Customers/*" }\n      grpc: { protoFiles: [${protoFile}] }\n      request: { manifest: customer, jobType: Mask }`,
  );
writeFileSync(join(dir, 'gateway.yaml'), config);
const dpg = spawn(process.execPath, ['bin/dpg.js', 'serve', '--config', join(dir, 'gateway.yaml')], {
  cwd: ROOT,
  env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'error', NODE_ENV: 'test' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
children.push(dpg);
const caPem = await (async () => {
  for (let i = 0; i < 300; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${proxyPort}/proxy/ca.pem`);
      if (res.ok) return await res.text();
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('dpg serve did not start');
})();
const proxy = { address: { port: proxyPort }, caPem };

/** One unary call: resolves with its success (grpc-status 0). */
type Call = () => Promise<boolean>;

function grpcJsCall(viaProxy: boolean): { call: Call; close: () => void } {
  const saved = process.env.grpc_proxy;
  if (viaProxy) process.env.grpc_proxy = `http://127.0.0.1:${proxy.address.port}`;
  else delete process.env.grpc_proxy;
  let c: grpc.Client;
  try {
    c = new Customers(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(viaProxy ? proxy.caPem : pki.caPem)));
  } finally {
    if (saved === undefined) delete process.env.grpc_proxy;
    else process.env.grpc_proxy = saved;
  }
  const put = (c as unknown as { Put: (m: unknown, cb: (e: grpc.ServiceError | null) => void) => void }).Put.bind(c);
  return { call: () => new Promise((resolve) => put(message, (err) => resolve(err === null))), close: () => c.close() };
}

/** The request as gRPC frames it: flag 0, 4-byte length, the message (encoded once by grpc-js's own serializer). */
const requestFrame = (() => {
  const body = (Customers.service.Put as unknown as { requestSerialize: (m: unknown) => Buffer }).requestSerialize(message);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
})();

/** A CONNECT tunnel through the forward proxy to the upstream's address. */
function tunnel(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: proxy.address.port, method: 'CONNECT', path: `127.0.0.1:${port}` });
    req.once('connect', (res, socket) => (res.statusCode === 200 ? resolve(socket) : reject(new Error(`CONNECT answered ${res.statusCode}`))));
    req.once('error', reject);
    req.end();
  });
}

async function h2Call(viaProxy: boolean): Promise<{ call: Call; close: () => void }> {
  const authority = `https://127.0.0.1:${port}`;
  let session: ClientHttp2Session;
  if (viaProxy) {
    const socket = await tunnel();
    session = h2connect(authority, { createConnection: () => tlsConnect({ socket, host: '127.0.0.1', ca: proxy.caPem, ALPNProtocols: ['h2'] }) });
  } else {
    session = h2connect(authority, { ca: pki.caPem });
  }
  session.on('error', () => undefined);
  const headers = { ':method': 'POST', ':path': '/partner.v1.Customers/Put', 'content-type': 'application/grpc', te: 'trailers' };
  const call: Call = () =>
    new Promise((resolve) => {
      // A session the proxy shed or closed fails the calls left, rather than throwing out of the loop.
      if (session.destroyed || session.closed) return resolve(false);
      const stream = session.request(headers);
      let status: unknown;
      stream.on('trailers', (t) => (status = t['grpc-status']));
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('close', () => resolve(status === '0'));
      stream.end(requestFrame);
    });
  return { call, close: () => session.close() };
}

/** Open loop at RATE calls/s for `seconds`: each call's latency from its scheduled start, in ms. */
async function run(call: Call, seconds: number): Promise<{ times: number[]; errors: number }> {
  const n = Math.round(RATE * seconds);
  const times: number[] = [];
  let errors = 0;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    let done = 0;
    let sent = 0;
    const tick = (): void => {
      const due = Math.min(n, Math.floor(((performance.now() - start) * RATE) / 1000) + 1);
      for (; sent < due; sent++) {
        const scheduled = start + (sent * 1000) / RATE;
        void call().then((ok) => {
          if (!ok) errors++;
          else times.push(performance.now() - scheduled);
          if (++done === n) resolve();
        });
      }
      if (sent < n) setTimeout(tick, 1);
    };
    tick();
  });
  return { times, errors };
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

console.log(`routed gRPC unary Mask, ${JSON.stringify(message).length}-byte message as JSON (${requestFrame.length - 5} bytes as protobuf), ${RATE} calls/s open loop, ${SECONDS} s per round, 3 rounds; load average ${load()}`);
let verdict: number | undefined;
for (const kind of CLIENTS) {
  const direct = kind === 'h2' ? await h2Call(false) : grpcJsCall(false);
  const via = kind === 'h2' ? await h2Call(true) : grpcJsCall(true);
  await run(direct.call, 1);
  await run(via.call, 1);
  const added: number[] = [];
  for (let round = 0; round < 3; round++) {
    const upCpu0 = cpuSeconds(up.pid!);
    const d = await run(direct.call, SECONDS);
    const upCpu1 = cpuSeconds(up.pid!);
    const dpgCpu0 = cpuSeconds(dpg.pid!);
    const v = await run(via.call, SECONDS);
    const dpgCpu = cpuSeconds(dpg.pid!) - dpgCpu0;
    if (d.errors + v.errors > 0) console.log(`${kind} round ${round + 1}: errors direct ${d.errors}, via proxy ${v.errors}`);
    added.push(pct(v.times, 99) - pct(d.times, 99));
    console.log(
      `${kind} client, round ${round + 1}: direct p50 ${pct(d.times, 50).toFixed(2)} ms p99 ${pct(d.times, 99).toFixed(2)} ms; via proxy p50 ${pct(v.times, 50).toFixed(2)} ms p99 ${pct(v.times, 99).toFixed(2)} ms; added p50 ${(pct(v.times, 50) - pct(d.times, 50)).toFixed(2)} ms p99 ${(pct(v.times, 99) - pct(d.times, 99)).toFixed(2)} ms; CPU per call: gateway ${((dpgCpu * 1000) / (v.times.length || 1)).toFixed(3)} ms, upstream ${(((upCpu1 - upCpu0) * 1000) / (d.times.length || 1)).toFixed(3)} ms; load ${load()}`,
    );
  }
  const median = added.sort((a, b) => a - b)[1]!;
  console.log(`${kind} client: median added p99 over 3 rounds ${median.toFixed(2)} ms`);
  if (kind === 'h2') verdict = median;
  direct.close();
  via.close();
}
if (verdict !== undefined) {
  console.log(`goal: added p99 ≤ ${GOAL_MS} ms at ${RATE} calls/s (node:http2 client): ${verdict.toFixed(2)} ms — ${verdict <= GOAL_MS ? 'MET' : 'NOT MET'}; load average ${load()}`);
}
for (const c of children) c.kill();
