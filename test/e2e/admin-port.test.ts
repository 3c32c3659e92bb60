// Issue 18 item 5, gateway side, through real `dpg serve` processes and real HTTP clients: the
// admin listener serves /metrics (with content), /healthz and /readyz and nothing else; `dpg probe`
// asks it; `off` (config or DPG_ADMIN_ADDR) turns it off; bad values and a busy port are refused
// with file:line or the variable's name.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { dpgSync, keyringDocument, MANIFESTS, startGateway, type GatewayProcess } from './gateway-process.ts';
import { startRecordingUpstream } from './serve-process.ts';
import { freePort } from '../helpers/free-port.ts';

const dirs: string[] = [];
const running: GatewayProcess[] = [];
after(async () => {
  await Promise.all(running.map((g) => g.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KEYRING = keyringDocument([{ id: 'default', materials: [randomBytes(32).toString('base64')] }]);

/** A sidecar-profile config (HTTP and gRPC off, keys from DPG_KEYRING) with `extra` appended. */
function config(extra: string, proxy = '  listen: 127.0.0.1:0\n'): { file: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-admin-'));
  dirs.push(dir);
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `http: { enabled: false }\ngrpc: { enabled: false }\nkeys: { source: env }\nmanifests: ${MANIFESTS}\nproxy:\n${proxy}${extra}`);
  return { file, env: { DPG_DATA_DIR: join(dir, 'data'), DPG_KEYRING: KEYRING, NODE_ENV: 'production' } };
}

async function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string; body: string; allow?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body, allow: res.headers.allow }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the admin listener', () => {
  it('answers /metrics with the Prometheus text, /healthz and /readyz; 404 and 405 for anything else; dpg probe asks it', async () => {
    const upstream = await startRecordingUpstream();
    const adminPort = await freePort();
    const route = `  routes:\n    - name: mask\n      match: { host: 127.0.0.1, port: ${upstream.port} }\n      request: { manifest: customer, jobType: Mask }\n`;
    const { file, env } = config(`admin:\n  listen: 127.0.0.1:${adminPort}\n`, `  listen: 127.0.0.1:0\n${route}`);
    const gateway = await startGateway(file, env);
    running.push(gateway);
    try {
      assert.equal(gateway.ports.admin, adminPort);
      assert.ok(gateway.logs.some((l) => l.includes('"msg":"admin listener (/metrics, /healthz, /readyz) listening"')));

      // One request through the proxy, so /metrics has a routed request to count.
      const body = '{"cardNumber":"4111 1111 1111 1111"}';
      const proxied = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: gateway.ports.proxy, method: 'POST', path: `http://127.0.0.1:${upstream.port}/v1/x`, headers: { 'content-type': 'application/json', 'content-length': body.length } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(proxied, 200);
      assert.equal(upstream.received[0]?.body, '{"cardNumber":"**** **** **** 1111"}');

      const metrics = await get(adminPort, '/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.type, /^text\/plain; version=0\.0\.4/);
      assert.match(metrics.body, /^dpg_proxy_requests_total\{route="mask",outcome="ok"\} 1$/m);
      assert.match(metrics.body, /^dpg_keyring_info\{fingerprint="sha256:[0-9a-f]{16}"\} 1$/m);
      assert.match(metrics.body, /^process_resident_memory_bytes \d+/m, 'the process metrics too');
      assert.ok(!metrics.body.includes('4111'), 'no payload value in metrics');

      assert.deepEqual(await get(adminPort, '/healthz'), { status: 200, type: 'application/json; charset=utf-8', body: '{"status":"ok"}', allow: undefined });
      assert.deepEqual(await get(adminPort, '/readyz'), { status: 200, type: 'application/json; charset=utf-8', body: '{"status":"ready"}', allow: undefined });
      assert.equal((await get(adminPort, '/readyz?verbose')).status, 200, 'a query string is ignored');
      assert.equal((await get(adminPort, '/api/protect')).status, 404);
      assert.equal((await get(adminPort, '/')).status, 404);
      const post = await get(adminPort, '/metrics', 'POST');
      assert.equal(post.status, 405);
      assert.equal(post.allow, 'GET, HEAD');
      const head = await get(adminPort, '/readyz', 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');

      // The probe asks the admin listener (the same config, as an exec probe would).
      const ready = dpgSync(['probe', 'ready', '-c', file], env);
      assert.equal(ready.code, 0, ready.stderr);
      assert.equal(ready.stdout, `ready: admin listener 127.0.0.1:${adminPort}\n`);
      assert.equal(dpgSync(['probe', 'live', '-q', '-c', file], env).code, 0);

      // SIGTERM: a clean stop, after which the admin port no longer answers and the probe says no.
      assert.equal(await gateway.stop(), 0);
      await assert.rejects(get(adminPort, '/healthz'), /ECONNREFUSED/);
      const notLive = dpgSync(['probe', 'live', '-c', file], env);
      assert.equal(notLive.code, 1);
      assert.equal(notLive.stdout, `not live: admin listener 127.0.0.1:${adminPort}: ECONNREFUSED\n`);
    } finally {
      await upstream.close();
    }
  });

  it('/readyz says 503 while the proxy is at its connection cap, /healthz stays 200, and 200 again after', async () => {
    const { file, env } = config('admin:\n  listen: 127.0.0.1:0\n', '  listen: 127.0.0.1:0\n  maxConnections: 1\n');
    const gateway = await startGateway(file, env);
    running.push(gateway);
    const admin = gateway.ports.admin!;
    assert.equal((await get(admin, '/readyz')).status, 200);
    const held = connect(gateway.ports.proxy!, '127.0.0.1');
    await new Promise((resolve) => held.once('connect', resolve));
    try {
      let ready = await get(admin, '/readyz');
      for (let i = 0; i < 100 && ready.status === 200; i++) ready = await get(admin, '/readyz'); // the server counts the socket on its next turn
      assert.deepEqual([ready.status, ready.body], [503, '{"status":"not ready"}']);
      assert.equal((await get(admin, '/healthz')).status, 200, 'alive all the same');
    } finally {
      held.destroy();
    }
    let again = await get(admin, '/readyz');
    for (let i = 0; i < 100 && again.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      again = await get(admin, '/readyz');
    }
    assert.equal(again.status, 200);
    assert.equal(await gateway.stop(), 0);
  });

  it('`off` in the config or DPG_ADMIN_ADDR=off opens no admin listener; DPG_ADMIN_ADDR wins over the file', async () => {
    for (const [extra, envAdmin] of [
      ['admin:\n  listen: off\n', undefined],
      ['admin:\n  listen: 127.0.0.1:0\n', 'off'],
      ['', undefined],
    ] as const) {
      const { file, env } = config(extra);
      const gateway = await startGateway(file, envAdmin === undefined ? env : { ...env, DPG_ADMIN_ADDR: envAdmin });
      running.push(gateway);
      assert.equal(gateway.ports.admin, undefined, `${extra || '(no admin section)'} ${envAdmin ?? ''}`);
      assert.ok(!gateway.logs.some((l) => l.includes('admin listener')));
      // Without it, the proxy listener answers the probes' paths (origin form) as before.
      assert.equal((await get(gateway.ports.proxy!, '/readyz')).status, 200);
      assert.equal(await gateway.stop(), 0);
    }
    const port = await freePort();
    const { file, env } = config('admin:\n  listen: off\n');
    const gateway = await startGateway(file, { ...env, DPG_ADMIN_ADDR: `127.0.0.1:${port}` });
    running.push(gateway);
    assert.equal(gateway.ports.admin, port, 'DPG_ADMIN_ADDR turns it on over the file');
    assert.equal((await get(port, '/healthz')).status, 200);
    assert.equal(await gateway.stop(), 0);
  });

  it('a bad address is a config problem with file:line or the variable; a busy port is named', async () => {
    const bad = config('admin:\n  listen: nowhere\n  port: 1\n');
    const r = dpgSync(['serve', '-c', bad.file], bad.env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /gateway\.yaml:8:11: admin\.listen: must be host:port \(e\.g\. 127\.0\.0\.1:15020\) or off/);
    assert.match(r.stderr, /gateway\.yaml:9:3: admin\.port: unknown key \(expected one of: listen\)/);
    const ok = config('');
    const e = dpgSync(['serve', '-c', ok.file], { ...ok.env, DPG_ADMIN_ADDR: 'everywhere' });
    assert.equal(e.code, 1);
    assert.match(e.stderr, /environment DPG_ADMIN_ADDR: must be host:port \(e\.g\. 127\.0\.0\.1:15020\) or off/);

    const blocker = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => blocker.once('listening', resolve));
    const busy = (blocker.address() as AddressInfo).port;
    try {
      const b = dpgSync(['serve', '-c', ok.file], { ...ok.env, DPG_ADMIN_ADDR: `127.0.0.1:${busy}` });
      assert.equal(b.code, 1);
      assert.match(b.stderr, new RegExp(`admin listener: cannot listen on 127\\.0\\.0\\.1:${busy}: address already in use`));
    } finally {
      blocker.close();
    }
  });
});
