// Faults caused for real against the in-process proxy (issue 19, docs/reliability.md "Faults"):
// an upstream that resets the connection mid-request and mid-response, a routed name whose lookup
// never answers, and a client reading the response one byte a second. Each has a defined outcome:
// a status and problem code for the app, the audit line's outcome, the dpg_proxy_requests_total
// outcome label — and never a protected value in clear on the way.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { ResolveHost } from '../../src/proxy/reading/route-host-addresses.ts';
import { CARD, connectTcp, proxyConfig, rawPost, route, sendRaw, startTestProxy, startUpstream, tempDir, type TestProxy, type Upstream } from './helpers.ts';

const mask = { manifest: 'customer', jobType: 'Mask' } as const;
const BODY = JSON.stringify({ cardNumber: CARD, note: 'x'.repeat(2000) });

/** A raw upstream: `onData` sees each connection's bytes so far and may answer or reset it. */
async function rawUpstream(onData: (socket: Socket, received: Buffer) => void): Promise<{ port: number; received: Buffer[]; close(): Promise<void> }> {
  const received: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: NetServer = createNetServer((socket) => {
    sockets.add(socket);
    let data = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      received.push(d);
      onData(socket, data);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    received,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const headEnd = (data: Buffer): number => data.indexOf('\r\n\r\n');
const metric = (text: string, route: string, outcome: string): number =>
  Number(new RegExp(`dpg_proxy_requests_total\\{route="${route}",outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 0);

describe('faults against the forward proxy', () => {
  let p: TestProxy;
  let resetInBody: Awaited<ReturnType<typeof rawUpstream>>;
  let resetInResponse: Awaited<ReturnType<typeof rawUpstream>>;
  let slowReader: { port: number; written: () => number; closed: Promise<unknown>; close(): Promise<void> };
  let plain: Upstream;
  /** Lookups of `hang.test` never answer. */
  const resolve: ResolveHost = (name) => (name === 'hang.test' ? new Promise(() => undefined) : Promise.reject(Object.assign(new Error('no'), { code: 'ENOTFOUND' })));

  before(async () => {
    // Resets (RST) once the head and the first body bytes of the request have arrived.
    resetInBody = await rawUpstream((socket, data) => {
      const end = headEnd(data);
      if (end !== -1 && data.length > end + 4 + 100) socket.resetAndDestroy();
    });
    // Reads the whole request, answers a head and half a body holding the card, then resets.
    resetInResponse = await rawUpstream((socket, data) => {
      const end = headEnd(data);
      const length = Number(/content-length: (\d+)/i.exec(data.subarray(0, Math.max(0, end)).toString('latin1'))?.[1] ?? -1);
      if (end === -1 || data.length < end + 4 + length) return;
      const half = `{"cardNumber":"${CARD}","note":"`;
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n${half}`, () => setTimeout(() => socket.resetAndDestroy(), 50));
    });
    // A large response written only as fast as it drains: `written` counts what the socket took.
    let written = 0;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const total = 256 * 1024 * 1024;
    let resolveClosed: (v: unknown) => void = () => undefined;
    const closed = new Promise((r) => (resolveClosed = r));
    const server: HttpServer = createHttpServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
      res.on('close', () => resolveClosed(written));
      const pump = (): void => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    slowReader = {
      port: (server.address() as AddressInfo).port,
      written: () => written,
      closed,
      close: async () => {
        server.closeAllConnections();
        server.close();
      },
    };
    plain = await startUpstream();
    p = await startTestProxy(
      proxyConfig({
        routes: [
          route('reset-in-body', { match: { host: '127.0.0.1', port: resetInBody.port, path: '/v1/**' }, request: mask }),
          route('reset-in-response', { match: { host: '127.0.0.1', port: resetInResponse.port, path: '/v1/**' }, request: mask, response: mask }),
          route('reset-streamed', { match: { host: '127.0.0.1', port: resetInResponse.port, path: '/streamed/**' }, request: mask }),
          route('by-address', { match: { host: '127.0.0.1', port: plain.port, path: '/v1/**' }, request: mask }),
        ],
      }),
      tempDir(),
      resolve,
    );
  });
  after(async () => {
    await p.close();
    await Promise.all([resetInBody.close(), resetInResponse.close(), slowReader.close(), plain.close()]);
  });

  test('upstream reset mid-request: 502 UPSTREAM_UNREACHABLE, audit and metric say so, the reset connection held only the masked body', async () => {
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${resetInBody.port}/v1/customers`, `127.0.0.1:${resetInBody.port}`, BODY));
    assert.equal(res.status, 502);
    assert.equal(JSON.parse(res.body.toString()).code, 'UPSTREAM_UNREACHABLE');
    assert.ok(!Buffer.concat(resetInBody.received).includes(CARD), 'the card reached the upstream in clear');
    assert.match(p.logText(), /"route":"reset-in-body"[^\n]*"outcome":"UPSTREAM_UNREACHABLE"/);
    assert.equal(metric((await p.metrics.render()).body, 'reset-in-body', 'UPSTREAM_UNREACHABLE'), 1);
  });

  test('upstream reset mid-response, response protected: 502, none of the half-read response reaches the app', async () => {
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${resetInResponse.port}/v1/customers`, `127.0.0.1:${resetInResponse.port}`, BODY));
    assert.equal(res.status, 502);
    assert.equal(JSON.parse(res.body.toString()).code, 'UPSTREAM_UNREACHABLE');
    assert.ok(!res.raw.includes(CARD));
    assert.equal(metric((await p.metrics.render()).body, 'reset-in-response', 'UPSTREAM_UNREACHABLE'), 1);
  });

  test('upstream reset mid-response, response streamed: the app gets fewer bytes than Content-Length and a closed connection', async () => {
    const socket = await connectTcp(p.proxy.address.port);
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.write(rawPost(`http://127.0.0.1:${resetInResponse.port}/streamed/x`, `127.0.0.1:${resetInResponse.port}`, BODY));
    await once(socket, 'close');
    const raw = Buffer.concat(chunks);
    const end = headEnd(raw);
    assert.match(raw.subarray(0, end).toString('latin1'), /^HTTP\/1\.1 200 [^]*content-length: 5000/i);
    assert.ok(raw.length - end - 4 < 5000, 'the app must see the response cut short, not complete');
    assert.match(p.logText(), /"route":"reset-streamed"[^\n]*"outcome":"UPSTREAM_UNREACHABLE"/);
  });

  test('DNS lookup of a routed name that never answers: 502 after connectTimeoutMs, nothing sent upstream', async () => {
    const before = plain.received.length;
    const res = await sendRaw(p.proxy.address.port, rawPost(`http://hang.test:${plain.port}/v1/customers`, `hang.test:${plain.port}`, BODY));
    assert.equal(res.status, 502);
    assert.equal(JSON.parse(res.body.toString()).code, 'UPSTREAM_UNREACHABLE');
    assert.match(res.body.toString(), /could not be resolved/);
    assert.equal(plain.received.length, before);
    assert.match(p.logText(), /"code":"EAI_AGAIN"[^\n]*"msg":"proxy: The upstream host name could not be resolved"/);
  });

  test('a client reading the response at 1 byte/s: backpressure reaches the upstream, others are served, hanging up cancels the upstream', async () => {
    const socket = await connectTcp(p.proxy.address.port);
    socket.pause();
    socket.write(`GET http://127.0.0.1:${slowReader.port}/big HTTP/1.1\r\nHost: 127.0.0.1:${slowReader.port}\r\n\r\n`);
    let read = 0;
    // Wait until the upstream stops getting its writes taken, reading one byte a second meanwhile.
    let last = -1;
    for (let second = 0; second < 8 && slowReader.written() !== last; second++) {
      last = slowReader.written();
      await new Promise((r) => setTimeout(r, 1000));
      if (socket.read(1) !== null) read++;
    }
    assert.ok(read >= 1, 'the slow client read its bytes');
    const stalled = slowReader.written();
    assert.ok(stalled < 256 * 1024 * 1024, 'the upstream wrote the whole response: nothing held it back');
    // The gateway holds what the sockets between hold, not the response (256 MiB).
    assert.ok(stalled < 64 * 1024 * 1024, `${stalled} bytes taken from the upstream for a client that read ${read}`);
    // Another exchange is served meanwhile.
    const other = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${plain.port}/v1/customers`, `127.0.0.1:${plain.port}`, BODY));
    assert.equal(other.status, 200);
    socket.destroy();
    await slowReader.closed;
  });
});
