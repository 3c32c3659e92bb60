// Issue 18 item 1 through a real `dpg serve` process (dist/, so dist/protect-worker.js is what runs)
// and real clients: while a heavy document is in a protection worker, light requests on
// /api/protect and through the forward proxy are answered (counted, not timed: the heavy one is
// held in its worker by the test hook until its time budget ends); a worker that crashes or
// overruns fails its request with 503 WORKER_FAILED and nothing upstream, and the next request
// passes; light documents start no worker; idle workers are reaped.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MANIFESTS, startGateway, type GatewayProcess } from './gateway-process.ts';
import { ROOT, startRecordingUpstream, type RecordingUpstream } from './serve-process.ts';

const TIMEOUT_MS = 4000;
const IDLE_MS = 1500;
const CARD = '4111 1111 1111 1111';

let dir: string;
let gateway: GatewayProcess;
let upstream: RecordingUpstream;
let base: string;
let token: string;

function send(port: number, method: string, path: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const protect = (dataSetType: string, dataSet: string, jobType = 'Mask') =>
  send(gateway.ports.http!, 'POST', '/api/protect', JSON.stringify({ manifestName: 'customer', jobType, dataSet }), {
    'content-type': 'application/json',
    'x-data-set-type': dataSetType,
    'x-resource-token': token,
  });
const viaProxy = (body: string) =>
  send(gateway.ports.proxy!, 'POST', `http://127.0.0.1:${upstream.port}/v1/customers`, body, { 'content-type': 'application/json' });

const started = () => gateway.logs.filter((l) => l.includes('"msg":"protection worker started"')).length;
const reaped = () => gateway.logs.filter((l) => l.includes('"msg":"protection worker stopped (idle)"')).length;

/** A SQL script of `n` INSERTs: ~100 bytes each, and SQL weighs 32-fold: far above inlineBytes. */
function sqlScript(n: number, marker = ''): string {
  const lines = [];
  for (let i = 0; i < n; i++) lines.push(`INSERT INTO customers (name, email, cardNumber) VALUES ('Jane Doe${i}', 'jane${i}@example.com', '${CARD}');`);
  if (marker) lines.push(`-- ${marker}`);
  return lines.join('\n');
}
const SMALL_JSON = JSON.stringify({ name: 'Jane Doe', cardNumber: CARD });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dpg-workers-'));
  upstream = await startRecordingUpstream();
  const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:15001', 'listen: 127.0.0.1:0')
    .replace('manifests: manifests', `manifests: ${MANIFESTS}`)
    .replace('grpc:\n', 'grpc:\n  enabled: false\n')
    .replace(
      'routes: []                      # see docs/proxy.md',
      `routes:\n    - name: lenient\n      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/lenient/**" }\n      request: { manifest: customer, jobType: Mask }\n      onError: passthrough\n` +
        `    - name: customers\n      match: { host: 127.0.0.1, port: ${upstream.port} }\n      request: { manifest: customer, jobType: Mask }`,
    )
    .replace('limits:\n', `limits:\n  workers: { max: 1, inlineBytes: 4096, timeoutMs: ${TIMEOUT_MS}, idleMs: ${IDLE_MS} }\n`);
  assert.ok(config.includes('workers: { max: 1') && config.includes('name: customers'), 'the test config was edited');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, config);
  gateway = await startGateway(file, { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test', DPG_TEST_WORKER_FAULT: '1' });
  base = `http://127.0.0.1:${gateway.ports.http}`;
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'demo-client', client_secret: 'demo-secret' }).toString();
  const res = await send(gateway.ports.http!, 'POST', '/gateway/identity/v1/token', form, { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': 'demo-api-key' });
  token = JSON.parse(res.text).access_token;
  assert.ok(token, res.text);
});

after(async () => {
  await gateway?.stop();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('protection workers in a running gateway', () => {
  it('protect light documents inline: no worker is started', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await protect('JSON', SMALL_JSON)).status, 200);
    assert.equal((await viaProxy(SMALL_JSON)).status, 200);
    assert.equal(started(), 0, `logs: ${base}`);
  });

  it('answer light requests on /api/protect and the proxy while a heavy document is held in a worker', async () => {
    const order: string[] = [];
    // The hook holds this worker until its time budget ends: the heavy request cannot finish first.
    const heavy = protect('SQL', sqlScript(200, 'dpg-test-worker-hang')).then((r) => {
      order.push('heavy');
      return r;
    });
    while (started() === 0) await new Promise((r) => setTimeout(r, 20));
    upstream.received.length = 0;
    for (let i = 0; i < 10; i++) {
      const api = await protect('JSON', SMALL_JSON);
      assert.equal(api.status, 200, api.text);
      assert.equal(JSON.parse(api.text).dataSet, '{"name":"J*** D**","cardNumber":"**** **** **** 1111"}');
      const proxied = await viaProxy(SMALL_JSON);
      assert.equal(proxied.status, 200, proxied.text);
      order.push('light');
    }
    assert.deepEqual(order, Array(10).fill('light'), 'all light requests were answered while the heavy one was in flight');
    const res = await heavy;
    assert.equal(res.status, 503, res.text);
    const problem = JSON.parse(res.text);
    assert.equal(problem.code, 'WORKER_FAILED');
    assert.match(problem.detail, new RegExp(`time budget of ${TIMEOUT_MS} ms`));
    assert.ok(!res.text.includes('Jane') && !res.text.includes('jane0@'), 'no payload in the answer');
    assert.equal(upstream.received.length, 10, 'only the light requests went upstream');
  });

  it('a crashed worker fails its request (nothing upstream) and is replaced for the next', async () => {
    upstream.received.length = 0;
    const before = started();
    const crashed = await viaProxy(JSON.stringify({ rows: sqlScript(60).split('\n'), note: 'dpg-test-worker-crash' }));
    assert.equal(crashed.status, 503, crashed.text);
    assert.equal(JSON.parse(crashed.text).code, 'WORKER_FAILED');
    assert.equal(upstream.received.length, 0, 'fail closed: nothing sent upstream');
    // Even a route that forwards unprotected on protection failures does not on a worker failure.
    const lenient = await send(gateway.ports.proxy!, 'POST', `http://127.0.0.1:${upstream.port}/lenient/x`, JSON.stringify({ rows: sqlScript(60).split('\n'), note: 'dpg-test-worker-crash' }), {
      'content-type': 'application/json',
    });
    assert.equal(lenient.status, 503, lenient.text);
    assert.equal(upstream.received.length, 0, 'onError: passthrough does not pass a worker failure');
    const ok = await protect('SQL', sqlScript(200));
    assert.equal(ok.status, 200, ok.text);
    const out = JSON.parse(ok.text);
    assert.ok(!out.dataSet.includes(CARD) && out.dataSet.includes('**** **** **** 1111'));
    assert.equal(out.summary.protected, 600);
    const big = JSON.stringify({ customers: Array.from({ length: 100 }, (_, i) => ({ name: `Jane Doe${i}`, cardNumber: CARD })) });
    assert.equal((await viaProxy(big)).status, 200);
    assert.ok(!upstream.received[0]!.body.includes(CARD), 'the routed heavy body was protected');
    assert.ok(started() > before, 'a new worker took the crashed one’s place');
    for (const line of gateway.logs) assert.ok(!line.includes('Jane Doe') && !line.includes(CARD), `log leaks payload: ${line}`);
  });

  it('reap idle workers: none is left after idleMs', async () => {
    for (let i = 0; i < 200 && reaped() < started() - 2; i++) await new Promise((r) => setTimeout(r, 50));
    // Started: hang (killed), two crashes (died), the one that served the rest (reaped when idle).
    await new Promise((r) => setTimeout(r, IDLE_MS + 500));
    assert.equal(started(), 4);
    assert.equal(reaped(), 1);
    // The workers got the keyring as loaded: its material never reaches a log line.
    const materials = [...readFileSync(join(dir, 'data', 'keyring.yaml'), 'utf8').matchAll(/material:\s*"?([A-Za-z0-9+/_=-]{40,})/g)].map((m) => m[1]!);
    assert.ok(materials.length > 0, 'the generated keyring was read');
    for (const m of materials) assert.ok(!gateway.logs.some((l) => l.includes(m.slice(0, 20))), 'no key material in the log');
  });
});
