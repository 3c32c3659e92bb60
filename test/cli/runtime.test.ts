// The dpg command as it ships (bin/dpg.js running the compiled dist/): help and version, flag
// checks, --type from the extension, LIST streaming with atomic --output, a quiet closed pipe, the
// data directory rule, no keyring made up for Reconstruct, start-up failures, dpg probe and the
// sidecar profile.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it, after } from 'node:test';
import { CA_CERT_FILE, CA_KEY_FILE, loadOrCreateCa } from '../../src/crypto/gateway-ca.ts';
import { readableCopy } from '../helpers/readable-copy.ts';
import { freePort } from '../helpers/free-port.ts';

const BIN = resolve('bin/dpg.js');
const CONFIG = resolve('config/gateway.yaml');
const SIDECAR = resolve('config/sidecar.yaml');
/** The sidecar profile reads its keyring from DPG_KEYRING (a generated one is refused in production). */
const KEYRING = `keys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${Buffer.alloc(32, 7).toString('base64')}" }\n`;
const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));
const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

function dpg(args: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input: options.input,
    encoding: 'utf8',
    cwd: options.cwd,
    env: { ...process.env, DPG_LOG_LEVEL: 'silent', ...options.env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((res) => (child.exitCode !== null ? res(child.exitCode) : child.once('exit', (code) => res(code))));
}

/** CSV with a header and `rows` customer rows. */
function customersCsv(rows: number): string {
  const lines = ['name,email,cardNumber,city'];
  for (let i = 0; i < rows; i++) lines.push(`Jane Doe ${i},jane${i}@example.com,4111 1111 1111 ${String(1000 + (i % 9000)).padStart(4, '0')},Springfield`);
  return `${lines.join('\n')}\n`;
}

describe('dpg help, version and flags', () => {
  it('--version prints the package version; help lists commands, job types and data types', () => {
    assert.equal(dpg(['--version']).stdout, `dpg ${version}\n`);
    const help = dpg(['--help']);
    assert.equal(help.code, 0);
    for (const text of ['serve', 'protect', 'validate', 'hash-secret', 'probe', 'Reconstruct', 'LIST', 'DPG_DATA_DIR']) assert.match(help.stdout, new RegExp(text));
  });

  it('every command answers --help with its flags and their short forms, without running', () => {
    const protect = dpg(['protect', '--help']);
    assert.equal(protect.code, 0);
    assert.match(protect.stdout, /-m, --manifest NAME/);
    assert.match(protect.stdout, /-j, --job JOBTYPE/);
    assert.match(protect.stdout, /-o, --output FILE/);
    assert.match(protect.stdout, /--snapshot-date ISO +Reconstruct\/Decrypt only/, 'forward jobs refuse a snapshot date (issue 12)');
    assert.match(protect.stdout, /Anonymise, Pseudonymise, Restrict, Mask, Encrypt, Decrypt, Reconstruct/);
    for (const name of ['serve', 'validate', 'hash-secret', 'probe']) {
      const r = dpg([name, '-h']);
      assert.equal(r.code, 0, name);
      assert.match(r.stdout, new RegExp(`^Usage: dpg ${name}`), name);
    }
  });

  it('a numeric flag with a bad value gets a message naming the flag and the range', () => {
    for (const bad of ['abc', '-1', '1.5', '99999999999']) {
      const r = dpg(['protect', '-m', 'customer', '-j', 'Mask', `--third-party=${bad}`], { input: '{}' });
      assert.equal(r.code, 2, bad);
      assert.match(r.stderr, /--third-party must be a whole number from 0 to 2147483647/, bad);
      assert.equal(r.stdout, '');
    }
    assert.match(dpg(['probe', 'ready', '--timeout', 'soon']).stderr, /--timeout must be a whole number/);
  });

  it('a negative number after a numeric flag (long or short, not joined by =) gets the same message', () => {
    const cases: [string[], RegExp][] = [
      [['protect', '-m', 'customer', '-j', 'Mask', '--third-party', '-1'], /--third-party must be a whole number from 0 to 2147483647 \(got "-1"\)/],
      [['protect', '-m', 'customer', '-j', 'Mask', '--data-usage', '-1e3x'], /--data-usage must be a whole number from 0 to 2147483647 \(got "-1e3x"\)/],
      [['probe', 'ready', '--wait', '-5'], /--wait must be a whole number from 0 to 3600 \(got "-5"\)/],
      [['probe', 'ready', '-w', '-5'], /--wait must be a whole number from 0 to 3600 \(got "-5"\)/],
      [['probe', 'ready', '--timeout', '-1'], /--timeout must be a whole number from 1 to 600000 \(got "-1"\)/],
    ];
    for (const [args, message] of cases) {
      const r = dpg(args, { input: '{}' });
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, message, args.join(' '));
      assert.doesNotMatch(r.stderr, /ambiguous/, args.join(' '));
      assert.equal(r.stdout, '');
    }
  });
});

describe('dpg protect: types, streaming, atomic output, closed pipes', () => {
  const dir = temp('dpg-rt-');
  const env = { DPG_DATA_DIR: join(dir, 'data') };

  it('infers --type from the extension and says so when it cannot', () => {
    writeFileSync(join(dir, 'people.csv'), 'name,cardNumber\nJane Doe,4111 1111 1111 1111\n');
    const csv = dpg(['protect', '-m', 'customer', '-j', 'Mask', join(dir, 'people.csv')], { env });
    assert.equal(csv.code, 0, csv.stderr);
    assert.equal(csv.stdout, 'name,cardNumber\nJ*** D**,**** **** **** 1111\n');
    writeFileSync(join(dir, 'doc.xml'), '<c><cardNumber>4111 1111 1111 1111</cardNumber></c>');
    assert.match(dpg(['protect', '-m', 'customer', '-j', 'Mask', join(dir, 'doc.xml')], { env }).stdout, /\*\*\*\* 1111/);
    writeFileSync(join(dir, 'data.bin'), '{}');
    const unknown = dpg(['protect', '-m', 'customer', '-j', 'Mask', join(dir, 'data.bin')], { env });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /cannot tell the data type of "data\.bin" from its extension \(\.bin\): give --type JSON\|XML\|SQL\|LIST/);
  });

  it('LIST streams: a 32 MB CSV runs in bounded memory', () => {
    const file = join(dir, 'big.csv');
    writeFileSync(file, customersCsv(480_000));
    const size = statSync(file).size;
    assert.ok(size > 30 * 1024 * 1024, `${size}`);
    const peak = peakRssMb(['protect', '-m', 'customer', '-j', 'Mask', '-o', join(dir, 'big-out.csv'), file], env);
    const out = readFileSync(join(dir, 'big-out.csv'), 'utf8');
    assert.equal(out.split('\n').length, 480_002);
    assert.ok(!out.includes('4111 1111'), 'every card masked');
    assert.ok(peak < 150, `peak RSS ${peak} MB for a ${Math.round(size / 1048576)} MB CSV`);
  });

  it('--output is all or nothing: a failure after many rows leaves no file and no temporary', () => {
    const plain = join(dir, 'plain.csv');
    writeFileSync(plain, customersCsv(3000));
    const encrypted = join(dir, 'enc.csv');
    const e = dpg(['protect', '-m', 'customer', '-j', 'Encrypt', '-o', encrypted, plain], { env });
    assert.equal(e.code, 0, e.stderr);
    assert.equal(statSync(encrypted).mode & 0o777, 0o600);
    // One value that is no ciphertext, after 3,000 good rows (several batches already protected).
    writeFileSync(encrypted, `${readFileSync(encrypted, 'utf8')}Jane,jane@example.com,4111 1111 1111 1111,Springfield\n`);
    const target = join(dir, 'dec.csv');
    const before = readdirSync(dir).length;
    const d = dpg(['protect', '-m', 'customer', '-j', 'Decrypt', '-o', target, encrypted], { env });
    assert.equal(d.code, 1);
    assert.match(d.stderr, /VALUE_NOT_PROTECTABLE/);
    assert.ok(!d.stderr.includes('4111'), 'no payload in the error');
    assert.equal(existsSync(target), false);
    assert.equal(readdirSync(dir).length, before, 'no temporary file left behind');
  });

  it('a reader that stops early (| head) ends the command quietly', async () => {
    const child = spawn(process.execPath, [BIN, 'protect', '-m', 'customer', '-j', 'Mask', join(dir, 'big.csv')], {
      env: { ...process.env, ...env, DPG_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise((r) => child.stdout!.once('data', r));
    child.stdout!.destroy();
    const code = await exited(child);
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
});

/** Peak RSS (VmHWM) of one dpg run, read from /proc just before the process exits. */
function peakRssMb(args: string[], env: Record<string, string>): number {
  const hook = join(temp('dpg-hwm-'), 'hwm.mjs');
  writeFileSync(hook, "import { readFileSync } from 'node:fs';\nprocess.on('exit', () => process.stderr.write(`HWM ${/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]}\\n`));\n");
  const r = spawnSync(process.execPath, ['--import', hook, BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env, DPG_LOG_LEVEL: 'silent' } });
  assert.equal(r.status, 0, r.stderr);
  return Number(/HWM (\d+)/.exec(r.stderr)![1]) / 1024;
}

describe('data directory and keyrings', () => {
  it('defaults to .dpg beside the config file, whatever the working directory, and says when it makes a keyring', () => {
    const dir = temp('dpg-dd-');
    cpSync('config', join(dir, 'config'), { recursive: true, filter: (src) => !src.includes('.dpg') });
    const elsewhere = temp('dpg-cwd-');
    const r = dpg(['protect', '-c', join(dir, 'config', 'gateway.yaml'), '-m', 'customer', '-j', 'Pseudonymise'], {
      input: '{"ssn":"123-45-6789"}',
      cwd: elsewhere,
      env: { DPG_DATA_DIR: '' },
    });
    assert.equal(r.code, 0, r.stderr);
    const keyring = join(dir, 'config', '.dpg', 'keyring.yaml');
    assert.ok(existsSync(keyring));
    assert.equal(r.stderr, `dpg: generated a development keyring at ${keyring}\n`);
    assert.deepEqual(readdirSync(elsewhere), [], 'nothing written in the working directory');
    // From yet another directory, Reconstruct finds the same keyring.
    const back = dpg(['protect', '-c', join(dir, 'config', 'gateway.yaml'), '-m', 'customer', '-j', 'Reconstruct'], {
      input: r.stdout,
      cwd: temp('dpg-cwd2-'),
      env: { DPG_DATA_DIR: '' },
    });
    assert.equal(back.code, 0, back.stderr);
    assert.deepEqual(JSON.parse(back.stdout), { ssn: '123-45-6789' });
    assert.match(dpg(['validate', '-c', join(dir, 'config', 'gateway.yaml')], { env: { DPG_DATA_DIR: '' } }).stdout, new RegExp(`data directory ${join(dir, 'config', '.dpg')}`));
  });

  it('Reconstruct and Decrypt never make up a keyring: a clear error, exit 1, nothing written', () => {
    const data = join(temp('dpg-nokeys-'), 'data');
    for (const job of ['Reconstruct', 'Decrypt']) {
      const r = dpg(['protect', '-c', CONFIG, '-m', 'customer', '-j', job], { input: '{"ssn":"987-65-4321"}', env: { DPG_DATA_DIR: data } });
      assert.equal(r.code, 1, job);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /no keyring here: Reconstruct and Decrypt need the keyring that protected the data/);
      assert.equal(existsSync(data), false, job);
    }
  });
});

describe('dpg serve start-up failures and dpg probe', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill('SIGKILL');
  });

  async function serve(config: string, env: Record<string, string>): Promise<ChildProcess> {
    const child = spawn(process.execPath, [BIN, 'serve', '-c', config], { env: { ...process.env, DPG_LOG_LEVEL: 'silent', ...env }, stdio: 'ignore' });
    children.push(child);
    return child;
  }

  async function until(check: () => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!check()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('names the cause and exits 1: address in use, demo credentials in production, bad config', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const busy = (blocker.address() as AddressInfo).port;
    const data = temp('dpg-fail-');
    const base = { DPG_DATA_DIR: data, DPG_HTTP_ADDR: '127.0.0.1:0', DPG_GRPC_ADDR: '127.0.0.1:0', DPG_PROXY_ADDR: '127.0.0.1:0' };
    try {
      for (const [name, variable, door] of [
        ['HTTP', 'DPG_HTTP_ADDR', 'HTTP API'],
        ['gRPC', 'DPG_GRPC_ADDR', 'gRPC API'],
        ['proxy', 'DPG_PROXY_ADDR', 'egress proxy'],
      ] as const) {
        const r = dpg(['serve', '-c', CONFIG], { env: { ...base, [variable]: `127.0.0.1:${busy}` } });
        assert.equal(r.code, 1, name);
        assert.match(r.stderr, new RegExp(`${door}: cannot listen on 127\\.0\\.0\\.1:${busy}: address already in use`), name);
      }
    } finally {
      blocker.close();
    }
    // The default config with a keyring from DPG_KEYRING: production refuses a generated one first.
    const prodConfig = join(data, 'prod.yaml');
    writeFileSync(
      prodConfig,
      readFileSync(CONFIG, 'utf8')
        .replace(/source: generated .*\n/, 'source: env\n')
        .replace('manifests: manifests', `manifests: ${resolve('config/manifests')}`),
    );
    const prod = dpg(['serve', '-c', prodConfig], { env: { ...base, NODE_ENV: 'production', DPG_KEYRING: KEYRING } });
    assert.equal(prod.code, 1);
    assert.match(prod.stderr, /Refusing to start: the demo credentials .* NODE_ENV is production/);
    const bad = join(data, 'bad.yaml');
    writeFileSync(bad, 'http:\n  enabled: maybe\n');
    const b = dpg(['serve', '-c', bad], { env: base });
    assert.equal(b.code, 1);
    assert.match(b.stderr, /bad\.yaml:2:\d+: http\.enabled: /);
    const missingCa = join(data, 'ca.yaml');
    writeFileSync(missingCa, `manifests: ${resolve('config/manifests')}\nproxy:\n  ca: { cert: ${bad}, key: ${bad} }\n`);
    const c = dpg(['serve', '-c', missingCa], { env: base });
    assert.equal(c.code, 1);
    assert.match(c.stderr, /Proxy CA certificate .*bad\.yaml could not be read as a PEM certificate/);
  });

  it('an unreadable key file names the file and the cause (run as another user)', (t) => {
    if (process.getuid?.() !== 0 || spawnSync('setpriv', ['--version']).status !== 0) {
      t.skip('needs root and setpriv to run dpg as a user that cannot read the files');
      return;
    }
    const dir = temp('dpg-perm-');
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'data'));
    chownSync(join(dir, 'data'), 10002, 10002);
    writeFileSync(join(dir, 'keyring.yaml'), 'keys: []\n', { mode: 0o600 });
    loadOrCreateCa(undefined, join(dir, 'ca')); // a real CA: its key file is mode 0600, owned by root
    chmodSync(join(dir, 'ca'), 0o755);
    // The checkout may be unreadable to UID 10002 (a clone in a mode-0700 folder): run a readable copy.
    const runtime = readableCopy();
    const asOtherUser = (config: string) =>
      spawnSync('setpriv', ['--reuid=10002', '--regid=10002', '--clear-groups', process.execPath, join(runtime, 'bin/dpg.js'), 'serve', '-c', config], {
        encoding: 'utf8',
        cwd: dir,
        env: { ...process.env, DPG_LOG_LEVEL: 'silent', DPG_DATA_DIR: join(dir, 'data'), DPG_HTTP_ADDR: '127.0.0.1:0', DPG_GRPC_ADDR: '127.0.0.1:0', DPG_PROXY_ADDR: '127.0.0.1:0' },
        timeout: 30_000,
      });
    const manifests = `manifests: ${join(runtime, 'config/manifests')}\n`;
    writeFileSync(join(dir, 'keys.yaml'), `${manifests}keys: { source: file, file: keyring.yaml }\n`);
    const keys = asOtherUser(join(dir, 'keys.yaml'));
    assert.equal(keys.status, 1);
    assert.match(keys.stderr, /keyring\.yaml: cannot read the key file \(EACCES\)/);
    writeFileSync(join(dir, 'ca.yaml'), `${manifests}proxy: { ca: { cert: ca/${CA_CERT_FILE}, key: ca/${CA_KEY_FILE} } }\n`);
    const ca = asOtherUser(join(dir, 'ca.yaml'));
    assert.equal(ca.status, 1);
    assert.match(ca.stderr, /egress proxy|Proxy CA/);
    assert.match(ca.stderr, /Proxy CA key .*proxy-ca-key\.pem could not be read \(EACCES\)/);
  });

  it('probe ready|live: the HTTP API by default, the admin listener in the sidecar profile, else the proxy listener', async () => {
    const [http, proxy, admin] = [await freePort(), await freePort(), await freePort()];
    const data = temp('dpg-probe-');
    const env = { DPG_DATA_DIR: data, DPG_HTTP_ADDR: `127.0.0.1:${http}`, DPG_GRPC_ADDR: '127.0.0.1:0', DPG_PROXY_ADDR: `127.0.0.1:${proxy}` };
    assert.equal(dpg(['probe', 'ready', '-c', CONFIG], { env }).code, 1, 'nothing running yet');
    const gateway = await serve(CONFIG, env);
    await until(() => dpg(['probe', 'ready', '-q', '-c', CONFIG], { env }).code === 0);
    const live = dpg(['probe', 'live', '-c', CONFIG], { env });
    assert.equal(live.code, 0);
    assert.equal(live.stdout, `live: HTTP API 127.0.0.1:${http}\n`);
    gateway.kill('SIGTERM');
    assert.equal(await exited(gateway), 0, 'clean stop on SIGTERM');
    assert.equal(dpg(['probe', 'live', '-c', CONFIG], { env }).code, 1);

    const sideEnv = { ...env, DPG_KEYRING: KEYRING, DPG_ADMIN_ADDR: `127.0.0.1:${admin}` };
    const sidecar = await serve(SIDECAR, sideEnv);
    await until(() => dpg(['probe', 'ready', '-q', '-c', SIDECAR], { env: sideEnv }).code === 0);
    assert.equal(dpg(['probe', 'ready', '-c', SIDECAR], { env: sideEnv }).stdout, `ready: admin listener 127.0.0.1:${admin}\n`);
    assert.equal(dpg(['probe', 'live', '-c', SIDECAR], { env: sideEnv }).stdout, `live: admin listener 127.0.0.1:${admin}\n`);
    const offEnv = { ...sideEnv, DPG_ADMIN_ADDR: 'off' };
    assert.equal(dpg(['probe', 'ready', '-c', SIDECAR], { env: offEnv }).stdout, `ready: egress proxy 127.0.0.1:${proxy}\n`, 'admin off: the proxy listener');
    assert.equal(dpg(['probe', 'ready', '-c', CONFIG], { env }).code, 1, 'the sidecar profile opens no HTTP API');
    const ready = await fetch(`http://127.0.0.1:${proxy}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(ready.headers.get('cache-control'), 'no-store');
    sidecar.kill('SIGTERM');
    assert.equal(await exited(sidecar), 0);
    assert.equal(existsSync(join(data, 'identity')), true, 'the default config started identity');

    // --wait: one command that waits for start-up (the legacy injection's postStart hook).
    const started = Date.now();
    assert.equal(dpg(['probe', 'ready', '-q', '--wait', '1', '-c', SIDECAR], { env: sideEnv }).code, 1, 'nothing running: no after the wait');
    assert.ok(Date.now() - started >= 900, 'it kept asking for the whole wait');
    const waiting = spawn(process.execPath, [BIN, 'probe', 'ready', '--wait', '60', '-c', SIDECAR], { env: { ...process.env, ...sideEnv }, stdio: 'ignore' });
    const late = await serve(SIDECAR, sideEnv);
    assert.equal(await exited(waiting), 0, 'yes as soon as the gateway is ready');
    late.kill('SIGTERM');
    assert.equal(await exited(late), 0);
  });

  it('the sidecar profile starts no identity service, and the compiled proxy protects a routed request', async () => {
    const data = temp('dpg-side-');
    const received: string[] = [];
    const upstream = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    const proxy = await freePort();
    const config = join(data, 'sidecar.yaml');
    writeFileSync(
      config,
      readFileSync(SIDECAR, 'utf8')
        .replace('manifests: manifests', `manifests: ${resolve('config/manifests')}`)
        .replace(
          /routes: \[\].*\n/,
          `routes:\n    - name: t\n      match: { host: 127.0.0.1, port: ${upstreamPort}, methods: [POST], path: "/v1/**" }\n      request: { manifest: customer, jobType: Mask }\n`,
        ),
    );
    // The admin listener off: the proxy listener answers the probes.
    const env = { DPG_DATA_DIR: data, DPG_PROXY_ADDR: `127.0.0.1:${proxy}`, DPG_KEYRING: KEYRING, DPG_ADMIN_ADDR: 'off' };
    const sidecar = await serve(config, env);
    try {
      await until(() => dpg(['probe', 'live', '-q', '-c', config], { env }).code === 0);
      assert.equal(existsSync(join(data, 'identity')), false, 'no signing keys generated');
      assert.ok(existsSync(join(data, 'proxy-ca.pem')));
      const body = '{"cardNumber":"4111 1111 1111 1111"}';
      const status = await new Promise<number>((res, rej) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: proxy, method: 'POST', path: `http://127.0.0.1:${upstreamPort}/v1/x`, headers: { 'content-type': 'application/json', 'content-length': body.length } },
          (r) => {
            r.resume();
            r.on('end', () => res(r.statusCode ?? 0));
          },
        );
        req.on('error', rej);
        req.end(body);
      });
      assert.equal(status, 200);
      assert.deepEqual(received, ['{"cardNumber":"**** **** **** 1111"}']);
    } finally {
      upstream.close();
    }
    sidecar.kill('SIGTERM');
    assert.equal(await exited(sidecar), 0);
  });
});
