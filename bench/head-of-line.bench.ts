// Head of line (issue 18): while a 5 MB SQL script, a 10 MB JSON and a 10 MB XML document are
// protected on /api/protect, 1 KB Mask requests on /api/protect and through the forward proxy keep
// their p99 near the idle p99 of the same run. Two gateways, one after the other, each a real
// `dpg serve` child (dist/): `limits.workers.max: 0` (everything inline, as before workers) and the
// default pool. The light load is open-loop (sends follow the clock, latency from each send).
// Also: the heavy documents' own throughput in each mode, and the gateway's RSS idle, with a
// worker alive, and after the worker is reaped.
//   node --import ./scripts/ts-loader.mjs bench/head-of-line.bench.ts     (~3 minutes)
//   BENCH_SCALE=0.2 …  (heavy documents at a fifth of the size)   BENCH_RATE=40 … (light req/s per door)

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { buildDist } from '../scripts/build.mjs';
import { oneKilobyteJson } from './open-loop.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RATE = Number(process.env.BENCH_RATE ?? 20);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const MiB = 1024 * 1024;

// ---- documents -----------------------------------------------------------------------------------

function sqlScript(bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const s = `INSERT INTO customers (id, name, email, cardNumber, city) VALUES (${i}, 'Customer ${i}', 'c${i}@example.com', '4111 1111 1111 ${String(i % 10000).padStart(4, '0')}', 'Springfield');`;
    parts.push(s);
    n += s.length + 1;
  }
  return parts.join('\n');
}

function jsonDocument(bytes: number): string {
  const records: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const r = JSON.stringify({ id: i, name: `Customer ${i}`, email: `c${i}@example.com`, cardNumber: '4111 1111 1111 1111', city: 'Springfield', balance: i * 3.25 });
    records.push(r);
    n += r.length + 1;
  }
  return `{"customers":[${records.join(',')}]}`;
}

function xmlDocument(bytes: number): string {
  const parts = ['<customers>'];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const r = `<customer id="${i}"><name>Customer ${i}</name><email>c${i}@example.com</email><cardNumber>4111 1111 1111 1111</cardNumber><city>Springfield</city></customer>\n`;
    parts.push(r);
    n += r.length;
  }
  parts.push('</customers>');
  return parts.join('');
}

const HEAVY = [
  { type: 'SQL', dataSet: sqlScript(5 * MiB * SCALE) },
  { type: 'JSON', dataSet: jsonDocument(10 * MiB * SCALE) },
  { type: 'XML', dataSet: xmlDocument(10 * MiB * SCALE) },
] as const;

// ---- the gateway -----------------------------------------------------------------------------------

interface Gateway {
  readonly child: ChildProcess;
  readonly http: number;
  readonly proxy: number;
  readonly logs: string[];
  stop(): Promise<void>;
}

async function startGateway(dir: string, upstreamPort: number, workers: string): Promise<Gateway> {
  const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:15001', 'listen: 127.0.0.1:0')
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
    .replace('maxBodyBytes: 10485760', 'maxBodyBytes: 67108864')
    .replace('grpc:\n', 'grpc:\n  enabled: false\n')
    .replace(
      'routes: []                      # see docs/proxy.md',
      `routes:\n    - name: bench\n      match: { host: 127.0.0.1, port: ${upstreamPort} }\n      request: { manifest: customer, jobType: Mask }`,
    )
    .replace('limits:\n', `limits:\n  workers: ${workers}\n`);
  const file = join(dir, `gateway-${Date.now()}.yaml`);
  writeFileSync(file, config);
  const child = spawn(process.execPath, ['bin/dpg.js', 'serve', '-c', file], {
    cwd: ROOT,
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'info', NODE_ENV: 'bench' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: string[] = [];
  const ports: Record<string, number> = {};
  await new Promise<void>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        try {
          const e = JSON.parse(line) as { listener?: string; port?: number; msg?: string };
          if (e.listener && typeof e.port === 'number') ports[e.listener] = e.port;
          if (e.msg === 'ready') resolve();
        } catch {
          // not JSON
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`dpg serve exited ${code}`)));
  });
  return {
    child,
    http: ports.http!,
    proxy: ports.proxy!,
    logs,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    },
  };
}

async function tokenFor(httpPort: number): Promise<string> {
  const res = await request(`http://127.0.0.1:${httpPort}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': 'demo-api-key' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'demo-client', client_secret: 'demo-secret' }).toString(),
  });
  return ((await res.body.json()) as { access_token: string }).access_token;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : Number.NaN;
}

// ---- load --------------------------------------------------------------------------------------------

interface Door {
  readonly name: string;
  readonly pool: Pool;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Open-loop 1 KB requests on every door at RATE/s each until `done()`; latencies per door. */
async function lightLoad(doors: readonly Door[], done: () => boolean, minMs: number): Promise<Map<string, { lat: number[]; errors: number }>> {
  const out = new Map(doors.map((d) => [d.name, { lat: [] as number[], errors: 0 }]));
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  let sent = 0;
  const interval = 1000 / RATE;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (start + sent * interval <= now) {
        for (const d of doors) {
          const at = performance.now();
          const r = out.get(d.name)!;
          inflight.push(
            d.pool
              .request({ path: d.path, method: 'POST', headers: d.headers, body: d.body })
              .then(async (res) => {
                await res.body.dump();
                if (res.statusCode !== 200) r.errors++;
                r.lat.push(performance.now() - at);
              })
              .catch(() => {
                r.errors++;
              }),
          );
        }
        sent++;
      }
      if (now - start >= minMs && done()) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(inflight);
  return out;
}

const p = (lat: number[], q: number): number => {
  const s = [...lat].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

interface RunResult {
  readonly mode: string;
  readonly idle: Map<string, { lat: number[]; errors: number }>;
  readonly loaded: Map<string, { lat: number[]; errors: number }>;
  readonly heavy: { type: string; mb: number; ms: number; status: number }[];
  readonly rss: { idle: number; busy: number; afterReap: number };
}

async function run(mode: string, workers: string, dir: string, upstreamPort: number): Promise<RunResult> {
  const gw = await startGateway(dir, upstreamPort, workers);
  try {
    const token = await tokenFor(gw.http);
    const light = JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: oneKilobyteJson() });
    const doors: Door[] = [
      { name: '/api/protect', pool: new Pool(`http://127.0.0.1:${gw.http}`, { connections: 16 }), path: '/api/protect', headers: { 'content-type': 'application/json', 'x-resource-token': token }, body: light },
      { name: 'forward proxy', pool: new Pool(`http://127.0.0.1:${gw.proxy}`, { connections: 16 }), path: `http://127.0.0.1:${upstreamPort}/v1/orders`, headers: { 'content-type': 'application/json' }, body: oneKilobyteJson() },
    ];
    // Warm-up, then the idle baseline of this run.
    await lightLoad(doors, () => true, 2000);
    const rssIdle = rssMb(gw.child.pid!);
    const idle = await lightLoad(doors, () => true, IDLE_MS);
    // The heavy documents, all three at once (each its own connection), with the light load on.
    let pending: number = HEAVY.length;
    let rssBusy = 0;
    const heavy: RunResult['heavy'] = [];
    const heavyRuns = HEAVY.map(async (h) => {
      const body = JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: h.dataSet });
      const t0 = performance.now();
      const res = await request(`http://127.0.0.1:${gw.http}/api/protect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-resource-token': token, 'x-data-set-type': h.type },
        body,
        headersTimeout: 600_000,
        bodyTimeout: 600_000,
      });
      await res.body.dump();
      heavy.push({ type: h.type, mb: h.dataSet.length / MiB, ms: performance.now() - t0, status: res.statusCode });
      rssBusy = Math.max(rssBusy, rssMb(gw.child.pid!));
      pending--;
    });
    const loaded = await lightLoad(doors, () => pending === 0, 3000);
    await Promise.all(heavyRuns);
    // After idleMs (3 s here) the workers are reaped: the RSS an idle sidecar returns to.
    await new Promise((r) => setTimeout(r, 5000));
    const rssAfter = rssMb(gw.child.pid!);
    await Promise.all(doors.map((d) => d.pool.close()));
    return { mode, idle, loaded, heavy, rss: { idle: rssIdle, busy: rssBusy, afterReap: rssAfter } };
  } finally {
    await gw.stop();
  }
}

// ---- main ----------------------------------------------------------------------------------------------

await buildDist({ quiet: true });
const dir = mkdtempSync(join(tmpdir(), 'dpg-hol-'));
const upstream: Server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamPort = (upstream.address() as { port: number }).port;
console.log(
  `heavy: ${HEAVY.map((h) => `${h.type} ${(h.dataSet.length / MiB).toFixed(1)} MB`).join(', ')} (Mask, /api/protect, all three at once); ` +
    `light: 1 KB Mask at ${RATE} req/s on each door, open loop; idle baseline ${IDLE_MS / 1000} s`,
);
try {
  const results = [
    await run('inline (limits.workers.max: 0)', '{ max: 0 }', dir, upstreamPort),
    await run('workers (defaults)', '{ idleMs: 3000 }', dir, upstreamPort),
  ];
  for (const r of results) {
    console.log(`\n${r.mode}`);
    for (const [door, idle] of r.idle) {
      const loaded = r.loaded.get(door)!;
      const ratio = p(loaded.lat, 0.99) / p(idle.lat, 0.99);
      console.log(
        `  ${door.padEnd(14)} idle p99 ${p(idle.lat, 0.99).toFixed(1).padStart(7)} ms (n=${idle.lat.length})   ` +
          `loaded p50 ${p(loaded.lat, 0.5).toFixed(1).padStart(7)} ms  p99 ${p(loaded.lat, 0.99).toFixed(1).padStart(8)} ms  max ${p(loaded.lat, 1).toFixed(0).padStart(6)} ms (n=${loaded.lat.length}, errors ${idle.errors + loaded.errors})   ` +
          `p99 ratio ${ratio.toFixed(2)}× ${ratio <= 2 ? '(goal ≤ 2×: met)' : '(goal ≤ 2×: NOT met)'}`,
      );
    }
    for (const h of r.heavy.sort((a, b) => a.type.localeCompare(b.type))) {
      console.log(`  heavy ${h.type.padEnd(4)} ${h.mb.toFixed(1)} MB: ${(h.ms / 1000).toFixed(1)} s (${(h.mb / (h.ms / 1000)).toFixed(2)} MB/s) status ${h.status}`);
    }
    const total = r.heavy.reduce((s, h) => s + h.mb, 0);
    const span = Math.max(...r.heavy.map((h) => h.ms));
    console.log(`  heavy total ${total.toFixed(1)} MB in ${(span / 1000).toFixed(1)} s: ${(total / (span / 1000)).toFixed(2)} MB/s`);
    console.log(`  gateway RSS: idle ${r.rss.idle} MB, heavy work in flight (peak seen) ${r.rss.busy} MB, 5 s after (workers reaped) ${r.rss.afterReap} MB`);
  }
} finally {
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
