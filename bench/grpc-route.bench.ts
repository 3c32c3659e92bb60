// Routed gRPC unary Mask through the forward proxy (CONNECT, TLS intercepted, HTTP/2), next to
// the same calls made directly to the upstream: added p50/p99 at a fixed open-loop rate with a
// ~1 KB message. A real gRPC route (a .proto file and the `customer` manifest) on `dpg serve` from
// the build, its own process; the @grpc/grpc-js upstream in another (bench/peers/grpc-echo-server.mjs);
// the grpc-js client here. Run `npm run build` first.
//
//   npm run bench -- grpc-route        (GRPC_BENCH_RATE calls/s, default 1000; GRPC_BENCH_SECONDS, default 8)

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { freePort } from './dpg-serve.ts';
import { tempDir, upstreamPki } from '../test/proxy/helpers.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RATE = Number(process.env.GRPC_BENCH_RATE ?? 1000);
const SECONDS = Number(process.env.GRPC_BENCH_SECONDS ?? 8);

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

function client(viaProxy: boolean): grpc.Client {
  const saved = process.env.grpc_proxy;
  if (viaProxy) process.env.grpc_proxy = `http://127.0.0.1:${proxy.address.port}`;
  else delete process.env.grpc_proxy;
  try {
    return new Customers(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(viaProxy ? proxy.caPem : pki.caPem)));
  } finally {
    if (saved === undefined) delete process.env.grpc_proxy;
    else process.env.grpc_proxy = saved;
  }
}

type Put = (m: unknown, cb: (e: grpc.ServiceError | null) => void) => void;

/** Open loop at RATE calls/s for `seconds`: each call's latency from its scheduled start, in ms. */
async function run(c: grpc.Client, seconds: number): Promise<{ times: number[]; errors: number }> {
  const put = (c as unknown as { Put: Put }).Put.bind(c);
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
        put(message, (err) => {
          if (err) errors++;
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

console.log(`routed gRPC unary Mask, ${JSON.stringify(message).length}-byte message as JSON, ${RATE} calls/s open loop, ${SECONDS} s per round, 3 rounds; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const direct = client(false);
const via = client(true);
await run(direct, 1);
await run(via, 1);
const rows: { direct: number[]; via: number[] }[] = [];
for (let round = 0; round < 3; round++) {
  const d = await run(direct, SECONDS);
  const v = await run(via, SECONDS);
  if (d.errors + v.errors > 0) console.log(`round ${round + 1}: errors direct ${d.errors}, via proxy ${v.errors}`);
  rows.push({ direct: [pct(d.times, 50), pct(d.times, 99)], via: [pct(v.times, 50), pct(v.times, 99)] });
  console.log(
    `round ${round + 1}: direct p50 ${pct(d.times, 50).toFixed(2)} ms p99 ${pct(d.times, 99).toFixed(2)} ms; via proxy p50 ${pct(v.times, 50).toFixed(2)} ms p99 ${pct(v.times, 99).toFixed(2)} ms; added p50 ${(pct(v.times, 50) - pct(d.times, 50)).toFixed(2)} ms p99 ${(pct(v.times, 99) - pct(d.times, 99)).toFixed(2)} ms`,
  );
}
const added = rows.map((r) => r.via[1]! - r.direct[1]!).sort((a, b) => a - b)[1]!;
console.log(`median added p99 over 3 rounds: ${added.toFixed(2)} ms (goal ≤ 2 ms: ${added <= 2 ? 'met' : 'NOT met'}); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
direct.close();
via.close();
for (const c of children) c.kill();
