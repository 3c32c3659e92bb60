// Issue 8 class 8, readiness: the proxy reports itself not ready while it cannot take work. Two
// causes are exercised here (the connection cap is in limits.test.ts):
// - a shortage of file descriptors, for real: `dpg serve` (the compiled build, sidecar profile)
//   runs in a child process under a small `ulimit -n`; the test fills its descriptor table with
//   connections, then the proxy's dial to an upstream fails with EMFILE;
// - route host names not looked up yet (the resolver is injected, so no DNS is needed).
// Also the start-up warning about an open-files limit too small for maxConnections.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Socket } from 'node:net';
import { describe, test } from 'node:test';
import {
  CARD,
  connectTcp,
  exchangeRaw,
  proxyConfig,
  rawPost,
  route,
  sendRaw,
  startTestProxy,
  startUpstream,
  type RawResponse,
} from './helpers.ts';

const BIN = resolve('bin/dpg.js');
const BODY = JSON.stringify({ cardNumber: CARD });
const MASKED_BODY = JSON.stringify({ cardNumber: '************1111' });

async function until<T>(read: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request on a new connection; undefined when the connection is closed without an answer. */
async function answer(port: number, request: string | Buffer): Promise<RawResponse | undefined> {
  try {
    return await sendRaw(port, request);
  } catch {
    return undefined;
  }
}

const readyz = (port: number) => answer(port, 'GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');

/** Whether `ulimit -n` can lower this machine's open-files limit for a child (bash is needed). */
const ulimitWorks = spawnSync('bash', ['-c', 'ulimit -n 64 && test "$(ulimit -n)" = 64'], { stdio: 'ignore' }).status === 0;

interface Child {
  readonly port: number;
  /** The JSON log lines written so far. */
  log(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/**
 * `dpg serve` in the sidecar profile (only the proxy listens; /readyz is answered by the proxy
 * listener) under `ulimit -n openFiles`, logging at info; resolves once it logged "ready".
 */
async function serveWithLimit(openFiles: number, proxy: Record<string, unknown>): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-fd-'));
  const config = join(dir, 'gateway.json');
  writeFileSync(
    config,
    JSON.stringify({
      http: { enabled: false },
      grpc: { enabled: false },
      keys: { source: 'generated' },
      manifests: resolve('config/manifests'),
      proxy: { enabled: true, listen: '127.0.0.1:0', ...proxy },
      logging: { level: 'info' },
    }),
  );
  // `ulimit -n` lowers the hard limit too: node raises a soft limit to the hard one at start.
  const child: ChildProcess = spawn('bash', ['-c', `ulimit -n ${openFiles} && exec "$0" "$@"`, process.execPath, BIN, 'serve', '-c', config], {
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'info', DPG_PROXY_ADDR: '127.0.0.1:0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const log = (): Record<string, unknown>[] =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`dpg serve exited ${child.exitCode}: ${err.slice(0, 500)}`);
        return log().some((l) => l.msg === 'ready') ? true : undefined;
      },
      20_000,
      'dpg serve ready',
    );
  } catch (e) {
    await stop();
    throw e;
  }
  const listening = log().find((l) => l.msg === 'egress proxy listening');
  return { port: Number(listening?.port), log, stop };
}

/**
 * Opens connections to `port` until the proxy has no descriptor left for the next one: node
 * (libuv) then accepts it and closes it at once, without a byte (nothing is emitted). Each
 * connection kept asks GET /healthz first, which proves it was accepted. Returns those kept.
 */
async function fillDescriptors(port: number, atMost: number): Promise<Socket[]> {
  const held: Socket[] = [];
  for (let i = 0; i < atMost; i++) {
    const s = await connectTcp(port);
    s.on('error', () => undefined);
    try {
      const res = await exchangeRaw(s, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(res.status, 200);
      held.push(s);
    } catch {
      s.destroy();
      return held; // closed without an answer: the descriptor table is full
    }
  }
  for (const s of held) s.destroy();
  throw new Error(`the proxy still accepted connections after ${atMost}`);
}

/**
 * The scenario for one way of reaching an upstream: fill the proxy's descriptors, let `work` ask
 * for an upstream connection on a connection already accepted (it must fail: 502, nothing sent),
 * free a few descriptors, then /readyz must say 503 (a shortage in the last 5 s) and turn 200
 * again, and a routed request then arrives protected. `work` gets the routed and an unrouted port.
 * `warm`: one request passes (unrouted) before, so the upstream client (undici, loaded with the
 * first upstream request) is loaded and it is its dial that fails, not its loading.
 */
async function shortageScenario(
  label: string,
  warm: boolean,
  work: (held: Socket, routedPort: number, unroutedPort: number) => Promise<RawResponse>,
): Promise<void> {
  const routed = await startUpstream();
  const unrouted = await startUpstream();
  const child = await serveWithLimit(40, {
    routes: [{ name: 'routed', match: { host: '127.0.0.1', port: routed.port }, request: { manifest: 'customer', jobType: 'Mask' } }],
  }).catch(async (err: unknown) => {
    await Promise.all([routed.close(), unrouted.close()]);
    throw err;
  });
  try {
    assert.equal((await readyz(child.port))?.status, 200, `${label}: ready at first`);
    if (warm) assert.equal((await answer(child.port, rawPost(`http://127.0.0.1:${unrouted.port}/warm`, 'x', '{}')))?.status, 200, `${label}: warming`);
    const before = routed.rawBytes().length + unrouted.rawBytes().length;
    const held = await fillDescriptors(child.port, 100);
    assert.ok(held.length > 0, `${label}: no connection was accepted`);
    const failed = await work(held[0]!, routed.port, unrouted.port);
    assert.equal(failed.status, 502, `${label}: ${failed.raw.toString('latin1').slice(0, 300)}`);
    assert.equal(routed.rawBytes().length + unrouted.rawBytes().length, before, `${label}: bytes reached an upstream`);

    // Room for the probe again (the proxy closes its ends of the connections the test closes).
    for (const s of held.splice(0, 4)) s.destroy();
    const first = await until(() => readyz(child.port), 15_000, `${label}: /readyz answered`);
    assert.equal(first.status, 503, `${label}: not ready after a descriptor shortage`);
    assert.match(first.body.toString(), /starting/);
    await until(async () => ((await readyz(child.port))?.status === 200 ? true : undefined), 30_000, `${label}: ready again`);

    // And it works again: a routed request arrives protected.
    for (const s of held) s.destroy();
    // (The proxy may still be closing its ends of them: the first tries may find no descriptor.)
    const res = await until(
      async () => {
        const r = await answer(child.port, rawPost(`http://127.0.0.1:${routed.port}/x`, 'x', BODY));
        return r?.status === 200 ? r : undefined;
      },
      15_000,
      `${label}: a routed request after recovery`,
    );
    assert.equal(res.status, 200, `${label}: ${res.body.toString()}`);
    assert.equal(routed.received.at(-1)?.body.toString(), MASKED_BODY, label);
    assert.ok(!routed.rawBytes().includes(CARD), `${label}: the card reached the upstream in clear`);
    assert.ok(!JSON.stringify(child.log()).includes(CARD), `${label}: the card is in the log`);
  } finally {
    await child.stop();
    await Promise.all([routed.close(), unrouted.close()]);
  }
}

describe('readiness after a file-descriptor shortage (dpg serve under ulimit -n)', { skip: ulimitWorks ? false : 'bash with `ulimit -n` is not available here' }, () => {
  test('the start-up warning names an open-files limit too small for maxConnections, and only then', async () => {
    const [small, roomy] = await Promise.all([serveWithLimit(40, {}), serveWithLimit(300, { maxConnections: 20 })]);
    try {
      const warning = /maxConnections × listeners × 2 is above the open-files limit/;
      const warned = small.log().find((l) => warning.test(String(l.msg)));
      assert.ok(warned, 'no warning under ulimit -n 40 with the default maxConnections');
      assert.equal(warned.openFilesLimit, 40);
      assert.equal(warned.maxConnections, 1024);
      assert.equal(warned.level, 40, 'a warning');
      // 20 × 1 listener × 2 + 256 headroom ≤ 300: nothing to say.
      assert.ok(!roomy.log().some((l) => warning.test(String(l.msg))), 'warned although the limit is enough');
    } finally {
      await Promise.all([small.stop(), roomy.stop()]);
    }
  });

  test('a routed request and a blind tunnel that cannot get a descriptor: 502, nothing sent, /readyz 503 for a while, then 200', async () => {
    const routedRequest = (held: Socket, routedPort: number) => exchangeRaw(held, rawPost(`http://127.0.0.1:${routedPort}/x`, 'x', BODY));
    await Promise.all([
      // The exchange's dial (undici) fails with EMFILE.
      shortageScenario('routed request', true, routedRequest),
      // The first upstream request of the process: undici cannot be loaded yet, and must load later
      // (node keeps a failed import: loading it without descriptors would break the proxy for good).
      shortageScenario('first upstream request', false, routedRequest),
      // A blind CONNECT tunnel's dial fails with EMFILE.
      shortageScenario('blind tunnel', false, (held, _routedPort, unroutedPort) =>
        exchangeRaw(held, `CONNECT 127.0.0.1:${unroutedPort} HTTP/1.1\r\nHost: 127.0.0.1:${unroutedPort}\r\n\r\n`),
      ),
    ]);
  });
});

describe('readiness while route host names are looked up', () => {
  test('not ready until every route host name was looked up once (found or not); /readyz says so', async () => {
    const upstream = await startUpstream();
    const pending = new Map<string, { resolve(a: string[]): void; reject(e: Error): void }>();
    const resolver = (name: string) => new Promise<readonly string[]>((resolve, reject) => pending.set(name, { resolve, reject }));
    const p = await startTestProxy(
      proxyConfig({
        routes: [
          route('a', { match: { host: 'api.a.test', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('b', { match: { host: 'api.b.test', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
          // IP literals and wildcards are not looked up: they do not hold readiness.
          route('ip', { match: { host: '127.0.0.1', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
          route('wild', { match: { host: '*.c.test', port: upstream.port }, request: { manifest: 'customer', jobType: 'Mask' } }),
        ],
      }),
      undefined,
      resolver,
    );
    try {
      assert.deepEqual([...pending.keys()].sort(), ['api.a.test', 'api.b.test']);
      assert.equal(p.proxy.ready(), false);
      assert.equal(p.proxy.notReadyReason(), 'route host names are being resolved');
      assert.equal((await readyz(p.proxy.address.port))?.status, 503);

      // One answered: still waiting for the other.
      pending.get('api.a.test')!.resolve(['127.0.0.1']);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(p.proxy.ready(), false);
      assert.equal((await readyz(p.proxy.address.port))?.status, 503);

      // A failed lookup also ends the first round (a DNS failure must not keep the proxy unready).
      pending.get('api.b.test')!.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
      await until(async () => (p.proxy.ready() ? true : undefined), 10_000, 'ready');
      assert.equal(p.proxy.notReadyReason(), undefined);
      assert.equal((await readyz(p.proxy.address.port))?.status, 200);
      assert.match(p.logText(), /a route host name could not be resolved/);

      // And the proxy serves (the IP-literal route protects it).
      const res = await sendRaw(p.proxy.address.port, rawPost(`http://127.0.0.1:${upstream.port}/x`, 'x', BODY));
      assert.equal(res.status, 200);
      assert.equal(upstream.received.at(-1)?.body.toString(), MASKED_BODY);
    } finally {
      await p.close();
      await upstream.close();
    }
  });
});
