// The upstream the proxy benchmarks forward to (bench/proxy.bench.ts, bench/peers.bench.ts): reads
// each body and answers `{"ok":true}` on a kept-alive connection, then prints its port as one JSON
// line on stdout for the parent that spawned it.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export function serveOkUpstream(): void {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 });
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n'));
}
