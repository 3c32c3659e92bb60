// Issue 16 class 9, the gateway side of injection: DPG_PROXY_ADDR=off (what `dpg inject` gives the
// dpg-proxy container in transparent mode) and `proxy.listen: off` start no forward listener, so a
// captured app cannot reach a forward proxy on loopback; the reverse listeners still run, and
// `dpg probe` asks the proxy's health socket in the data directory instead. Real processes.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from '../helpers/free-port.ts';

const BIN = resolve('bin/dpg.js');
const MANIFESTS = resolve('config/manifests');
const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

function dpg(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, DPG_LOG_LEVEL: 'silent', ...env }, timeout: 180_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      res(true);
    });
    s.on('error', () => res(false));
  });
}

async function until(check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the forward listener off (DPG_PROXY_ADDR=off, proxy.listen: off)', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill('SIGKILL');
  });
  const serve = (config: string, env: Record<string, string>) => {
    const child = spawn(process.execPath, [BIN, 'serve', '-c', config], { env: { ...process.env, DPG_LOG_LEVEL: 'silent', ...env }, stdio: 'ignore' });
    children.push(child);
    return child;
  };
  const stop = (child: ChildProcess) =>
    new Promise<number | null>((res) => {
      child.once('exit', (code) => res(code));
      child.kill('SIGTERM');
    });

  it('DPG_PROXY_ADDR=off: nothing listens on the configured forward port; dpg probe answers through the health socket', async () => {
    const dir = temp('dpg-fwd-off-');
    const port = await freePort();
    const config = join(dir, 'gateway.yaml');
    writeFileSync(config, `http: { enabled: false }\ngrpc: { enabled: false }\nkeys: { source: generated }\nmanifests: ${MANIFESTS}\nproxy:\n  listen: "127.0.0.1:${port}"\n`);
    const env = { DPG_DATA_DIR: join(dir, 'data'), DPG_PROXY_ADDR: 'off' };
    const gateway = serve(config, env);
    await until(() => dpg(['probe', 'ready', '-q', '-c', config], env).code === 0);
    const ready = dpg(['probe', 'ready', '-c', config], env);
    assert.match(ready.stdout, /^ready: egress proxy \(forward listener off\) .*proxy-health\.sock$/m);
    assert.equal(await accepts(port), false, 'no forward listener on its configured port');
    assert.equal(await stop(gateway), 0);
    // Without the variable the same config listens there: the variable is what turned it off.
    const on = serve(config, { DPG_DATA_DIR: join(dir, 'data') });
    await until(() => dpg(['probe', 'ready', '-q', '-c', config], { DPG_DATA_DIR: join(dir, 'data') }).code === 0);
    assert.equal(await accepts(port), true);
    assert.equal(await stop(on), 0);
  });

  it('proxy.listen: off in the config: no forward listener, the reverse listener still serves', async () => {
    const dir = temp('dpg-fwd-off-cfg-');
    const upstream = createHttpServer((req, res) => res.end(`upstream saw ${req.url}`));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    after(() => upstream.close());
    const reversePort = await freePort();
    const config = join(dir, 'gateway.yaml');
    writeFileSync(
      config,
      `http: { enabled: false }\ngrpc: { enabled: false }\nkeys: { source: generated }\nmanifests: ${MANIFESTS}\nproxy:\n  listen: off\n  reverse:\n    - listen: "127.0.0.1:${reversePort}"\n      upstream: "http://127.0.0.1:${(upstream.address() as AddressInfo).port}"\n`,
    );
    const env = { DPG_DATA_DIR: join(dir, 'data') };
    assert.equal(dpg(['validate', '-c', config], env).code, 0, 'proxy.listen: off is a valid config');
    const gateway = serve(config, env);
    await until(() => dpg(['probe', 'ready', '-q', '-c', config], env).code === 0);
    const r = await fetch(`http://127.0.0.1:${reversePort}/hello`);
    assert.equal(await r.text(), 'upstream saw /hello');
    assert.equal(await stop(gateway), 0);
  });
});
