// Faults caused for real against `dpg serve` as a process (issue 19, docs/reliability.md "Faults"):
// the data directory's disk full (a 16 KiB tmpfs in a private mount namespace), a corrupt keyring
// file and a half-written config file at start-up (configuration reload is not on main yet: the
// start-up is where they are read), and the gateway killed with SIGKILL while it sends a protected
// body upstream. Each has a defined outcome; none leaves a torn file or a body that looks complete.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, childEnv, startGateway, writeKeyFile } from './gateway-process.ts';
import { ROOT } from './serve-process.ts';

const CARD = '4111111111111111';
const MATERIAL = Buffer.alloc(32, 7).toString('base64');

/** config/gateway.yaml with every listener on port 0, the default manifests, and `edit` applied. */
function writeConfig(dir: string, edit: (yaml: string) => string = (y) => y): string {
  const yaml = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8')
    .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:9090', 'listen: 127.0.0.1:0')
    .replace('listen: 127.0.0.1:15001', 'listen: 127.0.0.1:0')
    .replace('manifests: manifests', `manifests: ${join(ROOT, 'config/manifests')}`);
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, edit(yaml));
  return file;
}

/** `dpg serve` that is expected to refuse to start: its exit code and stderr. */
function serveOnce(config: string, env: Record<string, string>): { code: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, 'serve', '-c', config], { cwd: ROOT, env: childEnv(env), encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('faults at start-up', () => {
  it('the data directory on a full disk: exit 1 naming ENOSPC, no torn or temporary file left; once space is freed it starts', { timeout: 180_000 }, async (t) => {
    const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=16k tmpfs /mnt && umount /mnt'], { encoding: 'utf8' });
    if (probe.status !== 0) {
      t.skip(`needs unshare -m and mount (root, CAP_SYS_ADMIN): ${probe.stderr.trim().split('\n')[0]}`);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'dpg-fault-disk-'));
    const data = join(dir, 'data');
    const config = writeConfig(dir);
    // In a private mount namespace: a 16 KiB tmpfs filled to the last block, a start that must fail,
    // what it left, then the space freed and a start that must succeed (stopped by the test).
    const script = [
      `mkdir -p ${data} && mount -t tmpfs -o size=16k tmpfs ${data}`,
      `(head -c 1048576 /dev/zero > ${data}/fill) 2>/dev/null`,
      `"${process.execPath}" ${BIN} serve -c ${config} > /dev/null 2> ${dir}/stderr-full; echo "exit=$?"`,
      `echo "left=$(ls -A ${data} | tr '\\n' ' ')"`,
      `rm ${data}/fill`,
      `exec "${process.execPath}" ${BIN} serve -c ${config}`,
    ].join('; ');
    const child = spawn('unshare', ['-m', 'sh', '-c', script], { cwd: ROOT, env: childEnv({ DPG_DATA_DIR: data, NODE_ENV: 'test' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const exited = once(child, 'exit');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line:\n${out}`)), 30_000);
      child.stdout!.on('data', () => {
        if (/"msg":"ready"/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(() => reject(new Error(`exited before ready:\n${out}`)));
    });
    child.kill('SIGTERM');
    await exited;
    assert.match(out, /^exit=1$/m);
    assert.match(readFileSync(join(dir, 'stderr-full'), 'utf8'), /ENOSPC/);
    assert.match(out, /^left=fill $/m, 'the failed start left files behind');
  });

  it('a corrupt keyring file: exit 1, file:line:column named, no key material quoted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-fault-keyring-'));
    // A keyring cut off in the middle of a version (a copy interrupted, a disk full while writing).
    const whole = `defaultKey: default\nkeys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2020-01-01T00:00:00Z", material: "${MATERIAL}" }\n`;
    const keyFile = writeKeyFile(join(dir, 'keyring.yaml'), whole.slice(0, whole.indexOf(MATERIAL) + 20));
    const config = writeConfig(dir, (y) => y.replace(/keys:\n  source: generated[^\n]*/, `keys:\n  source: file\n  file: ${keyFile}`));
    const r = serveOnce(config, { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test' });
    assert.equal(r.code, 1, r.stderr);
    assert.ok(new RegExp(`${keyFile}:\\d+:\\d+: YAML syntax`).test(r.stderr), r.stderr);
    assert.ok(!(r.stderr + r.stdout).includes(MATERIAL.slice(0, 12)), 'key material in the output');
    assert.ok(!/"msg":"ready"/.test(r.stdout));
  });

  it('a half-written config file: exit 1, file:line:column named, nothing listens', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-fault-config-'));
    const full = writeConfig(dir);
    const text = readFileSync(full, 'utf8');
    // Cut inside the identity section's quoted-free flow mapping: a write interrupted half-way.
    writeFileSync(full, text.slice(0, text.indexOf('pseudonymScope: {') + 30));
    const r = serveOnce(full, { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test' });
    assert.equal(r.code, 1, r.stderr);
    assert.ok(new RegExp(`${full}:\\d+:\\d+: YAML syntax`).test(r.stderr), r.stderr);
    assert.ok(!/"msg":"ready"/.test(r.stdout));
  });
});

describe('the gateway killed with SIGKILL while it sends a protected body upstream', () => {
  let upstream: { port: number; close(): void; connection: Promise<Socket> };

  before(async () => {
    let resolveConnection: (s: Socket) => void = () => undefined;
    const connection = new Promise<Socket>((r) => (resolveConnection = r));
    const server = createServer((socket) => resolveConnection(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    upstream = { port: (server.address() as AddressInfo).port, close: () => server.close(), connection };
  });
  after(() => upstream.close());

  it('the app sees an error, the upstream sees a body shorter than its framing says (never a complete one)', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-fault-kill-'));
    const routes = [
      '    - name: killed',
      `      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/v1/**" }`,
      '      request: { manifest: customer, jobType: Mask }',
      '      maxBodyBytes: 67108864',
    ].join('\n');
    const config = writeConfig(dir, (y) => y.replace('routes: []                      # see docs/proxy.md', `routes:\n${routes}`));
    const gateway = await startGateway(config, { DPG_DATA_DIR: join(dir, 'data'), NODE_ENV: 'test' });
    try {
      // 8 MiB: more than the sockets between gateway and upstream hold, so the gateway is mid-write.
      const body = Buffer.from(JSON.stringify({ cardNumber: CARD, note: 'x'.repeat(8 * 1024 * 1024) }));
      const app = connect(gateway.ports.proxy!, '127.0.0.1');
      let appBytes = 0;
      let appText = '';
      app.on('data', (d: Buffer) => {
        appBytes += d.length;
        appText += d.toString('latin1');
      });
      const appClosed = new Promise<string>((resolve) => {
        app.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        app.on('close', () => resolve('closed'));
      });
      app.write(`POST http://127.0.0.1:${upstream.port}/v1/customers HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      app.write(body);

      // The upstream reads the first 256 KiB, then stops reading; the gateway is killed.
      const socket = await Promise.race([
        upstream.connection,
        appClosed.then((how) => Promise.reject(new Error(`the gateway answered before reaching the upstream (${how}): ${appText.slice(0, 300)}`))),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no upstream connection; the app got: ${appText.slice(0, 300)}`)), 30_000)),
      ]);
      const chunks: Buffer[] = [];
      let received = 0;
      const upstreamDone = new Promise<void>((resolve) => {
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
      });
      let stalled = false;
      await new Promise<void>((resolve) => {
        socket.on('data', (d: Buffer) => {
          chunks.push(d);
          received += d.length;
          if (!stalled && received > 256 * 1024) {
            stalled = true;
            socket.pause();
            resolve();
          }
        });
      });
      gateway.child.kill('SIGKILL');
      await once(gateway.child, 'exit');
      socket.resume();
      await upstreamDone;
      const raw = Buffer.concat(chunks);
      const headEnd = raw.indexOf('\r\n\r\n');
      const head = raw.subarray(0, headEnd).toString('latin1');
      const got = raw.subarray(headEnd + 4);
      assert.ok(!raw.includes(CARD), 'the card reached the upstream in clear');
      const length = /\r\ncontent-length: (\d+)/i.exec(head)?.[1];
      if (length !== undefined) assert.ok(got.length < Number(length), `${got.length} of ${length} body bytes: the body looked complete`);
      else {
        assert.match(head, /\r\ntransfer-encoding: chunked/i);
        assert.ok(!got.subarray(-5).equals(Buffer.from('0\r\n\r\n')), 'a chunked body ended by its last chunk');
      }
      assert.equal(appBytes, 0, 'the app got a response from a killed gateway');
      assert.match(await appClosed, /closed|ECONNRESET|EPIPE/);
    } finally {
      await gateway.stop();
    }
  });
});
