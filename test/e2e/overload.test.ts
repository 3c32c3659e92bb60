// Issue 18 item 4 through a real `dpg serve` process and real clients: requests held in flight by a
// slow upstream (or a body not yet sent) fill a door; the next request gets 503 + Retry-After and a
// problem body, a CONNECT is refused before any tunnel, the byte bound counts declared and chunked
// bodies, /readyz flips (admin port and API) while /healthz stays 200, and all recovers on release.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from './serve-process.ts';
import { startGateway, type GatewayProcess } from './gateway-process.ts';
import { CLIENTS, tokenFor } from './http-helpers.ts';
import { freePort } from '../helpers/free-port.ts';

const MAX_REQUESTS = 3;
const MAX_BYTES = 1000;

/** An upstream that holds every request until `release()`, counting the connections it accepted. */
async function startHoldingUpstream() {
  const held: ServerResponse[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    held,
    connections: () => connections,
    release() {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Writes `data` on a new connection and resolves with the first response (or rejects/ends). */
function openRaw(port: number, data: string): { socket: Socket; answer: Promise<RawAnswer> } {
  const socket = connect(port, '127.0.0.1');
  socket.write(data);
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = text.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (text.length - end - 4 < length) return;
      resolve({ status: Number(head.slice(9, 12)), head, body: text.slice(end + 4, end + 4 + length) });
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error('closed without an answer')));
  });
  answer.catch(() => undefined);
  return { socket, answer };
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Polls until `check` holds (a watchdog against hangs, never a timing assertion). */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`never: ${what}`);
}

function assertShed(a: RawAnswer, door: string, reason: RegExp): void {
  assert.equal(a.status, 503, a.head);
  assert.match(a.head, /\r\nretry-after: 2\r\n/i);
  assert.match(a.head, /\r\ncontent-type: application\/problem\+json/i);
  const problem = JSON.parse(a.body) as { code: string; status: number; detail: string; type: string };
  assert.equal(problem.code, 'OVERLOADED');
  assert.equal(problem.status, 503);
  assert.equal(problem.type, 'urn:dpg:error:OVERLOADED');
  assert.match(problem.detail, new RegExp(`\\(${door}: `));
  assert.match(problem.detail, reason);
}

describe('overload shedding, whole process', () => {
  let dir: string;
  let gateway: GatewayProcess;
  let upstream: Awaited<ReturnType<typeof startHoldingUpstream>>;
  let adminPort: number;
  const open: Socket[] = [];

  before(async () => {
    upstream = await startHoldingUpstream();
    adminPort = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'dpg-overload-'));
    const config = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
      .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0')
      .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
      .replace('listen: 127.0.0.1:15001', 'listen: 127.0.0.1:0')
      .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`)
      .replace('  reverse: []', `  reverse:\n    - { listen: 127.0.0.1:0, upstream: "http://127.0.0.1:${upstream.port}" }`)
      // A routed path: the proxy holds those bodies, and only held bodies count as bytes in flight.
      .replace('  routes: []                      # see docs/proxy.md', `  routes:\n    - { name: held, match: { host: 127.0.0.1, port: ${upstream.port}, path: "/held/**" }, request: { manifest: customer, jobType: Mask } }`)
      .replace('limits:\n', `limits:\n  overload: { maxRequestsInFlight: ${MAX_REQUESTS}, maxBytesInFlight: ${MAX_BYTES}, maxEventLoopDelayMs: 0, maxEventLoopLagMs: 0, retryAfterSeconds: 2 }\n`)
      .concat(`\nadmin:\n  listen: 127.0.0.1:${adminPort}\n`);
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, config);
    gateway = await startGateway(file, { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test' });
  });

  after(async () => {
    for (const s of open) s.destroy();
    await gateway?.stop();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const metric = async (line: RegExp): Promise<string | undefined> => (await get(adminPort, '/metrics')).body.split('\n').find((l) => line.test(l));

  it('forward proxy: N requests held by a slow upstream, request N+1 gets 503 + Retry-After, a CONNECT is refused before any tunnel; readiness flips and recovers', async () => {
    const proxy = gateway.ports.proxy;
    const target = `http://127.0.0.1:${upstream.port}/slow`;
    const heldAnswers: Promise<RawAnswer>[] = [];
    for (let i = 0; i < MAX_REQUESTS; i++) {
      const r = openRaw(proxy, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
      open.push(r.socket);
      heldAnswers.push(r.answer);
    }
    await until(() => upstream.held.length === MAX_REQUESTS, 'the upstream holds every request');
    const connectionsBefore = upstream.connections();

    const extra = openRaw(proxy, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
    open.push(extra.socket);
    assertShed(await extra.answer, 'proxy', /requests in flight/);

    const tunnel = openRaw(proxy, `CONNECT 127.0.0.1:${upstream.port} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
    open.push(tunnel.socket);
    assertShed(await tunnel.answer, 'proxy', /requests in flight/);
    assert.equal(upstream.connections(), connectionsBefore, 'no upstream connection was opened for the shed request or the CONNECT');
    assert.equal(upstream.held.length, MAX_REQUESTS);

    // Readiness reports the saturation (admin port, API and the proxy's own), health stays green.
    assert.equal((await get(adminPort, '/readyz')).status, 503);
    assert.equal((await get(gateway.ports.http, '/readyz')).status, 503);
    assert.equal((await get(proxy, '/readyz')).status, 503);
    assert.equal((await get(adminPort, '/healthz')).status, 200);
    assert.equal((await get(gateway.ports.http, '/healthz')).status, 200);
    assert.equal(await metric(/^dpg_in_flight_requests\{door="proxy"\}/), `dpg_in_flight_requests{door="proxy"} ${MAX_REQUESTS}`);

    upstream.release();
    for (const a of heldAnswers) assert.equal((await a).status, 200);
    await until(async () => (await get(adminPort, '/readyz')).status === 200, 'readiness recovers');
    const again = openRaw(proxy, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nConnection: close\r\n\r\n`);
    open.push(again.socket);
    await until(() => upstream.held.length === 1, 'a new request is admitted');
    upstream.release();
    assert.equal((await again.answer).status, 200);

    assert.equal(await metric(/^dpg_overload_shed_total\{door="proxy",reason="requests"\}/), 'dpg_overload_shed_total{door="proxy",reason="requests"} 2');
    await until(async () => (await metric(/^dpg_in_flight_requests\{door="proxy"\}/)) === 'dpg_in_flight_requests{door="proxy"} 0', 'the gauge returns to 0');
  });

  it('reverse listener: declared and chunked request bytes in flight are bounded', async () => {
    const reverse = gateway.ports['proxy-reverse'];
    // 800 bytes declared, 10 sent: held in flight by its own unsent body.
    const big = openRaw(reverse, `POST /held/a HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 800\r\n\r\n${'a'.repeat(10)}`);
    open.push(big.socket);
    await until(async () => (await metric(/^dpg_in_flight_request_bytes\{door="reverse"\}/)) === 'dpg_in_flight_request_bytes{door="reverse"} 800', 'the declared bytes are counted');
    const over = openRaw(reverse, `POST /held/b HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 300\r\n\r\n${'b'.repeat(300)}`);
    open.push(over.socket);
    assertShed(await over.answer, 'reverse', /request bytes in flight/);
    big.socket.destroy();
    await until(async () => (await metric(/^dpg_in_flight_request_bytes\{door="reverse"\}/)) === 'dpg_in_flight_request_bytes{door="reverse"} 0', 'released');

    // A chunked body declares nothing: it is counted as it arrives.
    const chunked = openRaw(reverse, `POST /held/c HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n4b0\r\n${'c'.repeat(1200)}\r\n`);
    open.push(chunked.socket);
    await until(async () => (await metric(/^dpg_in_flight_request_bytes\{door="reverse"\}/)) === 'dpg_in_flight_request_bytes{door="reverse"} 1200', 'the received chunked bytes are counted');
    const small = openRaw(reverse, `POST /held/d HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nddddd`);
    open.push(small.socket);
    assertShed(await small.answer, 'reverse', /request bytes in flight/);
    assert.equal((await get(adminPort, '/readyz')).status, 503);
    chunked.socket.destroy();
    await until(async () => (await get(adminPort, '/readyz')).status === 200, 'readiness recovers');
    assert.equal(await metric(/^dpg_overload_shed_total\{door="reverse",reason="bytes"\}/), 'dpg_overload_shed_total{door="reverse",reason="bytes"} 2');
  });

  it('HTTP API: protect requests in flight are bounded; probes and metrics are never shed', async () => {
    const http = gateway.ports.http;
    const token = await tokenFor(`http://127.0.0.1:${http}`, CLIENTS.full);
    const held: Socket[] = [];
    for (let i = 0; i < MAX_REQUESTS; i++) {
      const r = openRaw(http, `POST /api/protect HTTP/1.1\r\nHost: x\r\nX-Resource-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
      open.push(r.socket);
      held.push(r.socket);
    }
    await until(async () => (await metric(/^dpg_in_flight_requests\{door="http"\}/)) === `dpg_in_flight_requests{door="http"} ${MAX_REQUESTS}`, 'the API holds the requests');
    const extra = openRaw(http, `POST /api/protect HTTP/1.1\r\nHost: x\r\nX-Resource-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`);
    open.push(extra.socket);
    assertShed(await extra.answer, 'http', /requests in flight/);
    assert.equal((await get(http, '/healthz')).status, 200);
    assert.equal((await get(http, '/readyz')).status, 503);
    const scraped = await get(http, '/metrics');
    assert.equal(scraped.status, 200);
    assert.match(scraped.body, /^dpg_event_loop_utilization \d/m);
    assert.match(scraped.body, /^dpg_event_loop_lag_seconds \d/m);
    for (const s of held) s.destroy();
    await until(async () => (await get(http, '/readyz')).status === 200, 'readiness recovers');
    // No request content reaches the logs; the shed warning is logged once per door per window.
    assert.equal(gateway.logs.filter((l) => l.includes('"door":"http"') && l.includes('overloaded: shedding')).length, 1);
    assert.ok(!gateway.logs.some((l) => l.includes(token)));
  });
});
