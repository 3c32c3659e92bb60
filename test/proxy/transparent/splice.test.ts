// A spliced connection whose dial to the original destination fails for want of file descriptors
// tells the proxy (readiness goes to 503 for a while: connection-limits.ts), as the exchange, the
// tunnels and upgrades do. The shortage is real: a child process under `ulimit -n` fills its
// descriptor table, then dials.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';

const ulimitWorks = spawnSync('bash', ['-c', 'ulimit -n 64 && test "$(ulimit -n)" = 64'], { stdio: 'ignore' }).status === 0;
if (!ulimitWorks) console.log('# SKIPPED the spliced-dial descriptor test: `ulimit -n` cannot lower the limit for a child here');

const CHILD = `
import { openSync } from 'node:fs';
import { createServer } from 'node:net';
import { connectUpstream } from ${JSON.stringify(resolve('src/proxy/forwarding/splice.ts'))};
const server = createServer((s) => s.destroy());
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const held = [];
  for (;;) { try { held.push(openSync('/dev/null', 'r')); } catch { break; } }
  let told = 0;
  const socket = connectUpstream({ address: '127.0.0.1', port, family: 4 }, { connectTimeoutMs: 2000, onResourceExhausted: () => told++ });
  socket.on('error', (err) => { console.log(JSON.stringify({ code: err.code, told })); process.exit(0); });
  socket.on('connect', () => { console.log(JSON.stringify({ code: 'connected', told })); process.exit(0); });
});
`;

test('a spliced dial that fails with EMFILE reports the shortage once', { skip: !ulimitWorks }, () => {
  const r = spawnSync('bash', ['-c', 'ulimit -n 48 && exec "$0" "$@"', process.execPath, '--import', './scripts/ts-loader.mjs', '--input-type=module', '-e', CHILD], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout.trim().split('\n').at(-1)!), { code: 'EMFILE', told: 1 });
});
