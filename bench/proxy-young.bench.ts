// The young generation of `dpg serve` after idle spells, counted: the size V8 gives it and the
// scavenges per window of routed Mask (or pass-through) requests sent one after another, with idle
// spells between the windows, as shipped and with V8's default growth factor (2) for comparison.
// V8 shrinks the young generation after a full GC that finds little allocation and grows it back
// as bytes survive scavenges (src/core/young-garbage.ts); the counts do not depend on the load.
//
//   npm run build && npm run bench -- proxy-young     (about three minutes; YOUNG_PATH=/pass/x,
//   YOUNG_REQUESTS (per window, 2000), YOUNG_WINDOWS (5), YOUNG_IDLE_MS (12000))

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { writeDpgServeConfig } from './dpg-serve.ts';
import { oneKilobyteJson } from './open-loop.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PROBE = fileURLToPath(new URL('./peers/tail-probe.mjs', import.meta.url));
const PATH = process.env.YOUNG_PATH ?? '/protect/x';
const REQUESTS = Number(process.env.YOUNG_REQUESTS ?? 2000);
const WINDOWS = Number(process.env.YOUNG_WINDOWS ?? 5);
const IDLE_MS = Number(process.env.YOUNG_IDLE_MS ?? 12000);

interface Report {
  readonly newSpaceMb: number;
  /** start, duration, kind … (kind 1: scavenge). */
  readonly gcs: number[];
}

async function measure(label: string, flags: string[], upstreamPort: number, body: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-proxy-young-'));
  const out = join(dir, 'probe.json');
  const dpg = await writeDpgServeConfig(dir, upstreamPort, [...flags, '--import', PROBE]);
  const child = spawn(process.execPath, dpg.args, { cwd: ROOT, env: { ...process.env, ...dpg.env, DPG_LOG_LEVEL: 'silent', TAIL_PROBE_OUT: out }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const pool = new Pool(`http://127.0.0.1:${dpg.proxyPort}`, { connections: 1, pipelining: 1 });
  const send = async (): Promise<number> => {
    const r = await pool.request({ path: `http://127.0.0.1:${upstreamPort}${PATH}`, method: 'POST', headers: { host: `127.0.0.1:${upstreamPort}`, 'content-type': 'application/json' }, body });
    await r.body.dump();
    return r.statusCode;
  };
  // A bench that fails leaves no gateway behind.
  const stop = (): void => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${label} exited: ${stderr.slice(0, 500)}`);
    if (await send().catch(() => 0) === 200) break;
    if (i > 1200) throw new Error(`${label} did not answer within 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  let asked = 0;
  const report = async (): Promise<Report> => {
    asked++;
    child.kill('SIGUSR2');
    while (!stderr.includes(`tail-probe: written ${asked}\n`)) await new Promise((r) => setTimeout(r, 20));
    return JSON.parse(readFileSync(out, 'utf8')) as Report;
  };
  const scavenges = (r: Report): number => r.gcs.filter((kind, i) => i % 3 === 2 && kind === 1).length;
  const cells = [`${(await report()).newSpaceMb} MB at start`];
  for (let w = 0; w < WINDOWS; w++) {
    await new Promise((r) => setTimeout(r, IDLE_MS));
    await report(); // what the idle spell did is not the window's
    for (let i = 0; i < REQUESTS; i++) await send();
    const r = await report();
    cells.push(`${r.newSpaceMb} MB / ${scavenges(r)}`);
  }
  await pool.close();
  process.off('exit', stop);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
  return `| ${label} | ${cells.join(' | ')} |`;
}

async function main(): Promise<void> {
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const port = (upstream.address() as AddressInfo).port;
  const body = oneKilobyteJson();
  console.log(`proxy-young bench: ${PATH}, ${WINDOWS} windows of ${REQUESTS} requests one after another, ${IDLE_MS / 1000} s idle before each; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const rows = [
    await measure('as shipped (growth factor 16)', [], port, body),
    // An explicit flag wins over dpg serve's own (young-garbage.ts); the code cache is not used then, which changes nothing here.
    await measure("V8's default growth factor (2)", ['--semi-space-growth-factor=2'], port, body),
  ];
  console.log(`\n| dpg serve | start | ${Array.from({ length: WINDOWS }, (_, i) => `window ${i + 1}: young generation / scavenges`).join(' | ')} |`);
  console.log(`|---|---|${'---|'.repeat(WINDOWS)}`);
  for (const row of rows) console.log(row);
  console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (the counts do not depend on it)`);
  upstream.close();
}

await main();
