// HTTP/2 pass-through on an intercepted CONNECT connection, next to the HTTP/1.1 path's: added p99
// (through the proxy minus direct to the upstream) for each protocol the app speaks. One upstream
// serves both (TLS, ALPN h2 and http/1.1); the proxy has a route for its host and port on another
// path, so the connection is intercepted and these requests pass unrouted. Closed loop, one request
// at a time per client, everything in this one process (a short figure, not a load test).
//
//   node --import ./scripts/ts-loader.mjs bench/h2-intercept.bench.ts      (H2_BENCH_N, default 3000)

import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect as http2Connect, createSecureServer, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import { createLogger } from '../src/core/logger.ts';
import { Metrics } from '../src/core/metrics.ts';
import { startProxy } from '../src/proxy/index.ts';
import { testEngine } from '../test/helpers/engine.ts';
import { proxyConfig, route, tempDir, upstreamPki } from '../test/proxy/helpers.ts';

const N = Number(process.env.H2_BENCH_N ?? 3000);
const WARMUP = 300;

const pki = upstreamPki(tempDir());
const upstream = createSecureServer({ cert: pki.certPem, key: pki.keyPem, allowHTTP1: true }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
  res.end('ok');
});
upstream.listen(0, '127.0.0.1');
await once(upstream, 'listening');
const port = (upstream.address() as AddressInfo).port;
const authority = `127.0.0.1:${port}`;
const proxy = await startProxy({
  config: proxyConfig({ upstreamCa: pki.caFile, routes: [route('elsewhere', { match: { host: '127.0.0.1', port, path: '/routed/**' }, request: { manifest: 'customer', jobType: 'Mask' } })] }),
  dataDir: tempDir(),
  engine: testEngine(),
  logger: createLogger({ level: 'error', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
  metrics: new Metrics({ collectDefaults: false }),
});

/** A TLS connection to the upstream, directly or through CONNECT on the proxy. */
async function tlsTo(viaProxy: boolean, alpn: string, ca: string): Promise<TLSSocket> {
  const raw = netConnect(viaProxy ? proxy.address.port : port, '127.0.0.1');
  await once(raw, 'connect');
  if (viaProxy) {
    raw.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    await once(raw, 'data');
  }
  const tls = tlsConnect({ socket: raw, host: '127.0.0.1', ca, ALPNProtocols: [alpn] });
  await once(tls, 'secureConnect');
  return tls;
}

/** Sequential HTTP/1.1 GETs on one keep-alive connection; latency of each in ms. */
async function h1(viaProxy: boolean, ca: string, n: number): Promise<number[]> {
  const tls = await tlsTo(viaProxy, 'http/1.1', ca);
  const times: number[] = [];
  let pending = '';
  let done: (() => void) | undefined;
  tls.on('data', (d: Buffer) => {
    pending += d.toString('latin1');
    const end = pending.indexOf('\r\n\r\n');
    if (end !== -1 && pending.length >= end + 4 + 2) {
      pending = pending.slice(end + 6);
      done?.();
    }
  });
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      done = resolve;
      tls.write(`GET /pass/${i} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    });
    times.push(performance.now() - t0);
  }
  tls.destroy();
  return times;
}

/** Sequential HTTP/2 GETs on one session; latency of each in ms. */
async function h2(viaProxy: boolean, ca: string, n: number): Promise<number[]> {
  const tls = await tlsTo(viaProxy, 'h2', ca);
  const session: ClientHttp2Session = http2Connect(`https://${authority}`, { createConnection: () => tls });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const s = session.request({ ':path': `/pass/${i}`, ':authority': authority });
      s.on('error', reject);
      s.resume();
      s.on('end', resolve);
    });
    times.push(performance.now() - t0);
  }
  session.close();
  return times;
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const caUp = readFileSync(pki.caFile, 'utf8');
const rows: [string, number[]][] = [];
for (const [name, run] of [
  ['h1 direct', () => h1(false, caUp, N)],
  ['h1 via proxy', () => h1(true, proxy.caPem, N)],
  ['h2 direct', () => h2(false, caUp, N)],
  ['h2 via proxy', () => h2(true, proxy.caPem, N)],
] as const) {
  await (name.startsWith('h1') ? h1(name.includes('proxy'), name.includes('proxy') ? proxy.caPem : caUp, WARMUP) : h2(name.includes('proxy'), name.includes('proxy') ? proxy.caPem : caUp, WARMUP));
  rows.push([name, await run()]);
}
const load = readFileSync('/proc/loadavg', 'utf8').trim();
console.log(`HTTP/2 vs HTTP/1.1 pass-through on an intercepted connection, ${N} sequential GETs each; loadavg ${load}`);
for (const [name, t] of rows) console.log(`${name.padEnd(14)} p50 ${pct(t, 0.5).toFixed(3)} ms  p99 ${pct(t, 0.99).toFixed(3)} ms`);
const added = (proto: string): number => pct(rows.find(([n]) => n === `${proto} via proxy`)![1], 0.99) - pct(rows.find(([n]) => n === `${proto} direct`)![1], 0.99);
console.log(`added p99: h1 ${added('h1').toFixed(3)} ms, h2 ${added('h2').toFixed(3)} ms, ratio h2/h1 ${(added('h2') / added('h1')).toFixed(2)}`);
await proxy.close(500);
upstream.close();
process.exit(0);
