// What of a pass-through request outlives the young generation in the forward proxy: V8's sampling
// heap profiler, told to forget what minor GCs collect, records only the objects that survived one
// (promoted by a scavenge, or allocated in old space directly by allocation-site pretenuring).
// Bytes per request, with V8's defaults and as `dpg serve` runs (pretenuring off,
// src/core/young-garbage.ts), each in its own process; the load generator and the upstream run in
// processes of their own. Closed loop: a fixed number of requests in flight, so the figure does
// not depend on how busy the machine is (whether V8 tenures a site does depend on how many of its
// objects a scavenge finds alive: with one request at a time it sometimes does not).
//
//   npm run bench -- proxy-survivors      (PROXY_SURVIVORS_REQUESTS, default 8000 after 2000 of warm-up;
//   PROXY_SURVIVORS_CONNECTIONS, default 16: how many requests are in flight)

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { maskRoute, startBenchProxy } from './bench-proxy.ts';
import { serveOkUpstream } from './ok-upstream.ts';
import { oneKilobyteJson } from './open-loop.ts';

const SELF = fileURLToPath(import.meta.url);
const TS_LOADER = new URL('../scripts/ts-loader.mjs', import.meta.url).href;
const REQUESTS = Number(process.env.PROXY_SURVIVORS_REQUESTS ?? 8000);
const WARM_UP = 2000;
/** Connections of the load generator, each sending one request after another. */
const CONNECTIONS = Number(process.env.PROXY_SURVIVORS_CONNECTIONS ?? 16);
/** PROXY_SURVIVORS_TOP=<n>: also list the n functions whose allocations survived most (on stderr, per process). */
const TOP = Number(process.env.PROXY_SURVIVORS_TOP ?? 0);

/** Runs this file in `mode` as a child; resolves with the first JSON line it prints. */
function child(args: string[]): Promise<{ child: ChildProcess; line: Record<string, number> }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', TS_LOADER, SELF, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DPG_LOG_LEVEL: 'silent' } });
    let out = '';
    c.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^(\{.*\})$/m.exec(out);
      if (m) resolve({ child: c, line: JSON.parse(m[1]) as Record<string, number> });
    });
    c.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

/** The load generator: `count` 1 KB POSTs through the proxy, CONNECTIONS at a time, closed loop. */
async function client(proxyPort: number, upstreamPort: number, count: number): Promise<void> {
  const pool = new Pool(`http://127.0.0.1:${proxyPort}`, { connections: CONNECTIONS, pipelining: 1 });
  const body = oneKilobyteJson();
  let failed = 0;
  let sent = 0;
  const sender = async (): Promise<void> => {
    while (sent++ < count) {
      const r = await pool.request({ path: `http://127.0.0.1:${upstreamPort}/pass/x`, method: 'POST', headers: { host: `127.0.0.1:${upstreamPort}`, 'content-type': 'application/json' }, body });
      await r.body.dump();
      if (r.statusCode !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, sender));
  await pool.close();
  process.stdout.write(JSON.stringify({ failed }) + '\n');
}

/** The proxy under measurement, in this process. */
async function proxy(upstreamPort: number, young: boolean): Promise<void> {
  if (young) (await import('../src/core/young-garbage.ts')).keepRequestGarbageYoung();
  const running = await startBenchProxy({ routes: [maskRoute('bench-mask', '127.0.0.1', upstreamPort)], reverse: [] }, mkdtempSync(join(tmpdir(), 'dpg-survivors-')));
  const load = async (count: number): Promise<void> => {
    const { line } = await child(['client', String(running.address.port), String(upstreamPort), String(count)]);
    if (line.failed !== 0) throw new Error(`${line.failed} requests failed`);
  };
  await load(WARM_UP);
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false } as object);
  await load(REQUESTS);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  let survived = 0;
  /** Bytes per allocating function (name, file:line): where the survivors were made. */
  const sites = new Map<string, number>();
  const walk = (node: typeof profile.head): void => {
    survived += node.selfSize;
    if (node.selfSize > 0) {
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    for (const c of node.children) walk(c);
  };
  walk(profile.head);
  const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([site, bytes]) => [site, Math.round(bytes / REQUESTS)]);
  process.stderr.write(top.map(([site, perRequest]) => `  ${perRequest} B/request  ${site}\n`).join(''));
  process.stdout.write(JSON.stringify({ survivedPerRequest: survived / REQUESTS }) + '\n');
  await running.close(100);
  process.exit(0);
}

async function main(): Promise<void> {
  const upstream = await child(['upstream']);
  const port = upstream.line.port;
  console.log(`proxy-survivors bench: ${REQUESTS} pass-through 1 KB POSTs one after another (after ${WARM_UP} of warm-up); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('| forward proxy process | bytes per request that outlived a minor GC |');
  console.log('|---|---|');
  for (const [mode, name] of [['default', "V8's defaults (allocation-site pretenuring on)"], ['young', 'as dpg serve runs it (pretenuring off)']]) {
    const { line } = await child(['proxy', String(port), mode]);
    console.log(`| ${name} | ${line.survivedPerRequest.toFixed(0)} |`);
  }
  upstream.child.kill('SIGTERM');
}

const [mode, a, b, c] = process.argv.slice(2);
if (mode === 'upstream') serveOkUpstream();
else if (mode === 'client') await client(Number(a), Number(b), Number(c));
else if (mode === 'proxy') await proxy(Number(a), b === 'young');
else await main();
