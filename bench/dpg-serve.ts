// dpg as the peer benches run it (bench/peers.bench.ts, bench/proxy-cpu.bench.ts): `dpg serve` from
// the build with the shipped config/gateway.yaml, every door on a free port, one routed Mask route
// (1 KB JSON POSTed under /protect/) and one reverse listener to the bench upstream.

import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface DpgServe {
  /** Arguments for process.execPath (node flags first, then bin/dpg.js serve …), run from the repository root. */
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  readonly proxyPort: number;
  readonly reversePort: number;
}

/** Writes `dir`/gateway.yaml; `nodeFlags` go before bin/dpg.js (e.g. --trace-gc-nvp). */
export async function writeDpgServeConfig(dir: string, upstreamPort: number, nodeFlags: readonly string[] = []): Promise<DpgServe> {
  const [http, grpc, proxy, reverse] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const routes = `
    - name: bench-mask
      match: { host: 127.0.0.1, port: ${upstreamPort}, methods: [POST], path: "/protect/**", contentType: application/json }
      request: { manifest: customer, jobType: Mask }
      onError: reject
      maxBodyBytes: 1048576`;
  const reverseListeners = `
    - listen: 127.0.0.1:${reverse}
      upstream: http://127.0.0.1:${upstreamPort}`;
  const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', `listen: 127.0.0.1:${http}`)
    .replace('listen: 127.0.0.1:9090', `listen: 127.0.0.1:${grpc}`)
    .replace('listen: 127.0.0.1:15001', `listen: 127.0.0.1:${proxy}`)
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
    .replace('routes: []                      # see docs/proxy.md\n  reverse: []', `routes:${routes}\n  reverse:${reverseListeners}`);
  writeFileSync(join(dir, 'gateway.yaml'), config);
  // The gateway as shipped: JSON log lines to stdout, default log level.
  return {
    args: [...nodeFlags, 'bin/dpg.js', 'serve', '--config', join(dir, 'gateway.yaml')],
    env: { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test' },
    proxyPort: proxy,
    reversePort: reverse,
  };
}
