// What reading every request costs on the transparent listener (issue 16), with same-run
// baselines: plain HTTP keep-alive through the request-level relay (a routed port, an unrouted
// Host) against a splice (a port no route names) and direct calls; and TLS under strict inspection
// (`inspect: all`: an unrouted server name intercepted, re-encrypted upstream) against the default
// (spliced) and direct — per new connection (handshake + one request) and per request on a
// kept-alive connection. Loopback, one process (upstream, gateway and client share the event loop,
// so the figures are relative to the same run's direct baseline, not absolute); the original
// destination is injected as in test/proxy/transparent/ (no kernel redirect).
//
//   npm run bench -- transparent-inspect
//
// Knobs: INSPECT_BENCH_REQUESTS (per scenario, default 2000), INSPECT_BENCH_CONNECTIONS (default 300),
// INSPECT_BENCH_ROUNDS (interleaved rounds they are split into, default 5; figures are medians over rounds).

import { Agent as HttpAgent, createServer as createHttpServer, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';

const REQUESTS = Number(process.env.INSPECT_BENCH_REQUESTS ?? 2000);
const CONNECTIONS = Number(process.env.INSPECT_BENCH_CONNECTIONS ?? 300);
const ROUNDS = Number(process.env.INSPECT_BENCH_ROUNDS ?? 5);
const BODY = JSON.stringify({ note: 'x'.repeat(1000) });

interface Result {
  readonly name: string;
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function main(): Promise<void> {
  const { upstreamPki, tempDir, proxyConfig, route } = await import('../test/proxy/helpers.ts');
  const { startProxy } = await import('../src/proxy/index.ts');
  const { createLogger } = await import('../src/core/logger.ts');
  const { Metrics } = await import('../src/core/metrics.ts');
  const { testEngine } = await import('../test/helpers/engine.ts');

  const pki = upstreamPki(tempDir(), ['api.bench.test', 'other.bench.test', '127.0.0.1']);
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 });
      res.end('{"ok":true}');
    });
  };
  const plain = createHttpServer({ keepAliveTimeout: 60_000 }, handler);
  const tls = createHttpsServer({ cert: pki.certPem, key: pki.keyPem, keepAliveTimeout: 60_000 }, handler);
  const other = createHttpServer({ keepAliveTimeout: 60_000 }, handler);
  for (const s of [plain, tls, other]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s: { address(): unknown }): number => (s.address() as AddressInfo).port;

  const start = async (inspect: 'routed' | 'all') => {
    const queue: { address: string; port: number; family: 4 }[] = [];
    const proxy = await startProxy({
      config: proxyConfig({
        upstreamCa: pki.caFile,
        routes: [
          route('plain', { match: { host: 'api.bench.test', port: port(plain), path: '/protect/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('tls', { match: { host: 'api.bench.test', port: port(tls), path: '/protect/**' }, request: { manifest: 'customer', jobType: 'Mask' } }),
        ],
        transparent: { listen: { host: '127.0.0.1', port: 0 }, ipv6: false, peekTimeoutMs: 500, encryptedClientHello: 'refuse', inspect },
      }),
      dataDir: tempDir(),
      engine: testEngine(),
      logger: createLogger({ level: 'error', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
      metrics: new Metrics({ collectDefaults: false }),
      resolveHost: async () => ['127.0.0.9'],
      transparentOverrides: { originalDestination: () => queue.shift() },
    });
    return { proxy, port: proxy.transparent[0].port, redirect: (p: number) => queue.push({ address: '127.0.0.1', port: p, family: 4 }) };
  };
  const routed = await start('routed');
  const strict = await start('all');

  /** `count` sequential POSTs after a short warm-up. */
  const run = async (name: string, count: number, send: () => Promise<void>): Promise<Result> => {
    for (let i = 0; i < Math.min(50, count / 5); i++) await send(); // warm-up
    const times: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      await send();
      times.push(performance.now() - t);
    }
    const elapsed = performance.now() - t0;
    times.sort((a, b) => a - b);
    return { name, p50: percentile(times, 50), p99: percentile(times, 99), perSecond: (count / elapsed) * 1000 };
  };
  const post = (options: import('node:https').RequestOptions, secure: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)({ method: 'POST', path: '/other', ...options }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(BODY);
    });

  // One kept-alive agent per scenario for the whole run (its connection made once, redirected once).
  const keptAlive = (secure: boolean, redirect?: () => void) => {
    let agent: HttpAgent | HttpsAgent | undefined;
    return (): HttpAgent | HttpsAgent => {
      if (agent === undefined) {
        agent = secure ? new HttpsAgent({ keepAlive: true, maxSockets: 1 }) : new HttpAgent({ keepAlive: true, maxSockets: 1 });
        redirect?.();
      }
      return agent;
    };
  };
  const httpDirect = keptAlive(false);
  const httpSpliced = keptAlive(false, () => routed.redirect(port(other)));
  const httpRelayed = keptAlive(false, () => routed.redirect(port(plain)));
  const tlsDirect = keptAlive(true);
  const tlsSpliced = keptAlive(true, () => routed.redirect(port(tls)));
  const tlsIntercepted = keptAlive(true, () => strict.redirect(port(tls)));
  const plainHost = { headers: { host: 'other.bench.test' } };
  const tlsBase = { servername: 'other.bench.test', headers: { host: 'other.bench.test' } };
  const scenarios: { name: string; count: number; send: () => Promise<void> }[] = [
    { name: 'http keep-alive: direct', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: port(other), agent: httpDirect(), ...plainHost }, false) },
    { name: 'http keep-alive: spliced (port no route names)', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: routed.port, agent: httpSpliced(), ...plainHost }, false) },
    { name: 'http keep-alive: relayed (routed port, unrouted Host)', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: routed.port, agent: httpRelayed(), ...plainHost }, false) },
    { name: 'https new connection: direct', count: CONNECTIONS, send: () => post({ host: '127.0.0.1', port: port(tls), ca: pki.caPem, agent: false, ...tlsBase }, true) },
    {
      name: 'https new connection: spliced (inspect: routed)',
      count: CONNECTIONS,
      send: () => {
        routed.redirect(port(tls));
        return post({ host: '127.0.0.1', port: routed.port, ca: pki.caPem, agent: false, ...tlsBase }, true);
      },
    },
    {
      name: 'https new connection: intercepted (inspect: all)',
      count: CONNECTIONS,
      send: () => {
        strict.redirect(port(tls));
        return post({ host: '127.0.0.1', port: strict.port, ca: strict.proxy.caPem, agent: false, ...tlsBase }, true);
      },
    },
    { name: 'https keep-alive: direct', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: port(tls), ca: pki.caPem, agent: tlsDirect(), ...tlsBase }, true) },
    { name: 'https keep-alive: spliced (inspect: routed)', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: routed.port, ca: pki.caPem, agent: tlsSpliced(), ...tlsBase }, true) },
    { name: 'https keep-alive: intercepted (inspect: all)', count: REQUESTS, send: () => post({ host: '127.0.0.1', port: strict.port, ca: strict.proxy.caPem, agent: tlsIntercepted(), ...tlsBase }, true) },
  ];
  // Interleaved rounds; each figure is the median over rounds (the machine is shared and noisy).
  const rounds = new Map<string, Result[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const sc of scenarios) {
      const r = await run(sc.name, Math.ceil(sc.count / ROUNDS), sc.send);
      rounds.set(sc.name, [...(rounds.get(sc.name) ?? []), r]);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const results: Result[] = scenarios.map((sc) => {
    const rs = rounds.get(sc.name) ?? [];
    return { name: sc.name, p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), perSecond: median(rs.map((r) => r.perSecond)) };
  });
  for (const get of [httpDirect, httpSpliced, httpRelayed, tlsDirect, tlsSpliced, tlsIntercepted]) get().destroy();

  const baseline = new Map<string, Result>();
  console.log('scenario | p50 ms | p99 ms | per second | added p50 vs direct');
  for (const r of results) {
    const kind = r.name.split(':')[0];
    if (r.name.endsWith('direct')) baseline.set(kind, r);
    const b = baseline.get(kind);
    const added = b && b !== r ? `+${(r.p50 - b.p50).toFixed(3)} ms` : '—';
    console.log(`${r.name} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.perSecond.toFixed(0)} | ${added}`);
  }
  await Promise.all([routed.proxy.close(500), strict.proxy.close(500)]);
  for (const s of [plain, tls, other]) {
    s.closeAllConnections();
    s.close();
  }
}

await main();
