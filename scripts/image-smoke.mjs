// `npm run image:smoke`: builds the Dockerfile and runs the built image the way a container runtime
// would, on a machine that can build images but not start containers (here: podman without cgroups).
//
// 1. A local base image from this machine's node binary, the libraries `ldd` lists, /usr/bin/env,
//    npm and the CA bundle (`podman import`): no image can be pulled here.
// 2. `podman build --isolation=chroot --format docker` with that base for both stages.
// 3. The image's own Entrypoint, Cmd, Env, User, WorkingDir and Healthcheck, read with
//    `podman image inspect`, run from `podman image mount` under `chroot --userspec` in a private
//    mount namespace: the root filesystem bind-mounted read-only, one writable data directory.
// 4. Start, readiness (the image's HEALTHCHECK command), one protected request through
//    /api/protect, one through the egress proxy, and a clean stop on SIGTERM.
//
// Needs root, podman, unshare and chroot; not part of `npm test`. Prints one line per step and a
// summary; exits non-zero on the first failure. DPG_IMAGE names the image (default dpg:<version>).

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const image = process.env.DPG_IMAGE ?? `dpg:${version}`;
const baseImage = `localhost/dpg-smoke-base:node${process.versions.node}`;
const UID = 10001;
const started = Date.now();
const results = [];

function step(name, detail = '') {
  const line = `ok  ${name}${detail ? ` — ${detail}` : ''}`;
  results.push(line);
  console.log(line);
}

function fail(message) {
  console.error(`FAIL ${message}`);
  process.exit(1);
}

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (r.status !== 0) fail(`${cmd} ${args.join(' ')}\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  return r.stdout;
}

for (const tool of ['podman', 'unshare', 'chroot', 'ldd']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) fail(`${tool} is not installed; the image smoke test needs podman, unshare, chroot and ldd`);
}
const hostTool = (name) => execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
const [chrootBin, mountBin] = [hostTool('chroot'), hostTool('mount')];
if (process.getuid?.() !== 0) fail('run as root: the smoke test uses a private mount namespace and chroot');

// 1. The local base image.
const work = mkdtempSync(join(tmpdir(), 'dpg-smoke-'));
const baseExists = spawnSync('podman', ['image', 'exists', baseImage]).status === 0;
if (!baseExists) {
  const fs = join(work, 'base');
  const copyWithLibraries = (binary, target) => {
    mkdirSync(dirname(join(fs, target)), { recursive: true });
    copyFileSync(binary, join(fs, target));
    chmodSync(join(fs, target), 0o755);
    for (const lib of execFileSync('ldd', [binary], { encoding: 'utf8' }).match(/\/\S+/g) ?? []) {
      mkdirSync(dirname(join(fs, lib)), { recursive: true });
      copyFileSync(realpathSync(lib), join(fs, lib));
    }
  };
  copyWithLibraries(process.execPath, '/usr/local/bin/node');
  copyWithLibraries('/usr/bin/env', '/usr/bin/env');
  // npm for the build stage, with this machine's CA bundle (the registry may sit behind a TLS proxy).
  const npmDir = dirname(dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())));
  cpSync(npmDir, join(fs, 'usr/local/lib/node_modules/npm'), { recursive: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(fs, 'usr/local/bin/npm'));
  mkdirSync(join(fs, 'usr/local/etc'), { recursive: true });
  if (existsSync('/etc/ssl/certs/ca-certificates.crt')) {
    mkdirSync(join(fs, 'etc/ssl/certs'), { recursive: true });
    copyFileSync('/etc/ssl/certs/ca-certificates.crt', join(fs, 'etc/ssl/certs/ca-certificates.crt'));
    writeFileSync(join(fs, 'usr/local/etc/npmrc'), 'cafile=/etc/ssl/certs/ca-certificates.crt\n');
  }
  for (const d of ['tmp', 'root', 'dev', 'proc', 'sys', 'etc']) mkdirSync(join(fs, d), { recursive: true });
  chmodSync(join(fs, 'tmp'), 0o1777);
  writeFileSync(join(fs, 'etc/passwd'), 'root:x:0:0:root:/root:/usr/sbin/nologin\n');
  writeFileSync(join(fs, 'etc/group'), 'root:x:0:\n');
  const tar = spawnSync('tar', ['-C', fs, '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 });
  if (tar.status !== 0) fail('tar of the base filesystem');
  const imported = spawnSync('podman', ['import', '--change', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', '--change', 'ENV HOME=/root', '-', baseImage], { input: tar.stdout, encoding: 'utf8' });
  if (imported.status !== 0) fail(`podman import: ${imported.stderr}`);
}
step('base image', `${baseImage} (node ${process.version} + ldd libraries, ${baseExists ? 'reused' : 'imported'})`);

// 2. The image.
const buildStart = Date.now();
run('podman', [
  'build', '--isolation=chroot', '--format', 'docker', '--pull=never',
  '--build-arg', `BUILD_IMAGE=${baseImage}`, '--build-arg', `RUNTIME_IMAGE=${baseImage}`, '--build-arg', `DPG_VERSION=${version}`,
  '-t', image, root,
], { stdio: ['ignore', 'ignore', 'pipe'] });
const [inspect] = JSON.parse(run('podman', ['image', 'inspect', image]));
const config = inspect.Config;
const size = Number(inspect.Size ?? 0) / 1e6;
step('podman build', `${image}, ${Math.round((Date.now() - buildStart) / 1000)} s, ${size.toFixed(0)} MB (of which the local base ${(Number(JSON.parse(run('podman', ['image', 'inspect', baseImage]))[0].Size) / 1e6).toFixed(0)} MB)`);

const env = Object.fromEntries((config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
const expect = (what, actual, wanted) => {
  if (JSON.stringify(actual) !== JSON.stringify(wanted)) fail(`${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`);
};
expect('User', config.User, `${UID}:${UID}`);
expect('Entrypoint', config.Entrypoint, ['dpg']);
expect('Cmd', config.Cmd, ['serve']);
expect('DPG_DATA_DIR', env.DPG_DATA_DIR, '/var/lib/dpg');
expect('DPG_CONFIG', env.DPG_CONFIG, '/etc/dpg/gateway.yaml');
const health = inspect.Healthcheck?.Test ?? config.Healthcheck?.Test;
if (!health || !health.includes('probe')) fail(`Healthcheck: ${JSON.stringify(health)}`);
step('image config', `User ${config.User}, Entrypoint ${JSON.stringify(config.Entrypoint)}, Cmd ${JSON.stringify(config.Cmd)}, Healthcheck ${JSON.stringify(health)}`);

// 3. Run it from the mounted image.
const mnt = run('podman', ['image', 'mount', image]).trim();
const view = join(work, 'root');
const data = join(work, 'data');
mkdirSync(view);
mkdirSync(data, { mode: 0o700 });
chownSync(data, UID, UID);
let gateway;
const upstream = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    upstream.received = body;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});

/** Runs argv inside the image: private mount namespace, read-only root, writable data dir, as UID 10001. */
function inImage(argv, extraEnv = {}, options = {}) {
  const script = [
    'set -e',
    `${mountBin} --bind "$MNT" "$VIEW"`,
    `${mountBin} -o remount,bind,ro "$VIEW"`,
    `${mountBin} --bind "$DATA" "$VIEW/var/lib/dpg"`,
    `${mountBin} --rbind /dev "$VIEW/dev"`,
    `${mountBin} --rbind /proc "$VIEW/proc"`,
    `exec ${chrootBin} --userspec=${config.User} "$VIEW" /usr/bin/env -C "${config.WorkingDir || '/'}" "$@"`,
  ].join('; ');
  return spawn('unshare', ['-m', '--propagation', 'private', '--', 'sh', '-c', script, 'sh', ...argv], {
    env: { ...env, ...extraEnv, MNT: mnt, VIEW: view, DATA: data },
    ...options,
  });
}

function inImageSync(argv, extraEnv = {}, input) {
  return new Promise((resolve) => {
    const child = inImage(argv, extraEnv, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

try {
  // The filesystem really is read-only for the gateway, and the data directory writable.
  const ro = await inImageSync(['node', '-e', "const fs=require('fs');let a='ro';try{fs.writeFileSync('/opt/dpg/x','x');a='rw'}catch(e){a=e.code}fs.writeFileSync('/var/lib/dpg/probe','x');fs.rmSync('/var/lib/dpg/probe');console.log(a, process.getuid())"]);
  if (ro.code !== 0 || ro.stdout.trim() !== `EROFS ${UID}`) fail(`read-only view: ${ro.stdout}${ro.stderr}`);
  step('read-only root', `writing /opt/dpg fails with EROFS as UID ${UID}; /var/lib/dpg is writable`);

  // A config with its own credentials (NODE_ENV=production refuses the demo ones), every door on,
  // and one proxy route to a local upstream.
  const secret = `smoke-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const hash = async (s) => {
    const r = await inImageSync(['dpg', 'hash-secret'], {}, s);
    if (r.code !== 0) fail(`dpg hash-secret in the image: ${r.stderr}`);
    return r.stdout.trim();
  };
  const [apiKeyHash, clientHash] = [await hash(`${secret}-key`), await hash(secret)];
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = upstream.address().port;
  const free = () => new Promise((r) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => r(p)); }); });
  const [httpPort, proxyPort] = [await free(), await free()];
  writeFileSync(join(data, 'smoke.yaml'), `# written by scripts/image-smoke.mjs
http: { listen: 127.0.0.1:${httpPort} }
grpc: { listen: 127.0.0.1:0 }
identity:
  apiKeys: [{ id: smoke, hash: "${apiKeyHash}" }]
  clients: [{ id: smoke-client, secretHash: "${clientHash}", scopes: [protect] }]
manifests: /etc/dpg/manifests
proxy:
  listen: 127.0.0.1:${proxyPort}
  routes:
    - name: smoke
      match: { host: 127.0.0.1, port: ${upstreamPort}, methods: [POST], path: "/v1/**" }
      request: { manifest: customer, jobType: Mask }
`);
  chownSync(join(data, 'smoke.yaml'), UID, UID);
  const smokeEnv = { DPG_CONFIG: '/var/lib/dpg/smoke.yaml' };

  // Start: the image's Entrypoint and Cmd.
  const t0 = Date.now();
  let logs = '';
  gateway = inImage([...config.Entrypoint, ...config.Cmd], smokeEnv, { stdio: ['ignore', 'pipe', 'pipe'] });
  gateway.stdout.on('data', (d) => (logs += d));
  gateway.stderr.on('data', (d) => (logs += d));
  const healthArgv = health[0] === 'CMD' ? health.slice(1) : health[0] === 'CMD-SHELL' ? ['sh', '-c', health[1]] : health;
  for (;;) {
    const probe = await inImageSync(healthArgv, smokeEnv);
    if (probe.code === 0) break;
    if (gateway.exitCode !== null) fail(`dpg serve exited ${gateway.exitCode}:\n${logs}`);
    if (Date.now() - t0 > 30_000) fail(`not ready after 30 s:\n${logs}`);
    await sleep(100);
  }
  step('start and readiness', `the image's HEALTHCHECK (${healthArgv.join(' ')}) passed ${Date.now() - t0} ms after start, each probe a fresh chroot`);

  const base = `http://127.0.0.1:${httpPort}`;
  const tokenResponse = await fetch(`${base}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'x-api-key': `${secret}-key`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: 'smoke-client', client_secret: secret, grant_type: 'client_credentials' }),
  });
  if (tokenResponse.status !== 200) fail(`token: ${tokenResponse.status} ${await tokenResponse.text()}`);
  const { access_token: token } = await tokenResponse.json();
  const protect = await fetch(`${base}/api/protect`, {
    method: 'POST',
    headers: { 'x-resource-token': token, 'content-type': 'application/json' },
    body: JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: { name: 'Jane Doe', cardNumber: '4111 1111 1111 1111' } }),
  });
  const protectedBody = await protect.json();
  if (protect.status !== 200 || protectedBody.dataSet?.cardNumber !== '**** **** **** 1111') fail(`/api/protect: ${protect.status} ${JSON.stringify(protectedBody)}`);
  step('/api/protect', `token issued, Mask → ${JSON.stringify(protectedBody.dataSet)}`);

  // Through the forward proxy (absolute-form request), to the local upstream.
  const proxied = await new Promise((resolve, reject) => {
    const body = JSON.stringify({ customer: { name: 'Jane Doe', cardNumber: '5500 0000 0000 0004' } });
    import('node:http').then(({ request }) => {
      const req = request({ host: '127.0.0.1', port: proxyPort, method: 'POST', path: `http://127.0.0.1:${upstreamPort}/v1/customers`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', reject);
      req.end(body);
    });
  });
  const seen = JSON.parse(upstream.received ?? '{}');
  if (proxied !== 200 || seen.customer?.cardNumber !== '**** **** **** 0004' || seen.customer?.name !== 'J*** D**') fail(`proxy: ${proxied}, upstream saw ${upstream.received}`);
  step('egress proxy', `the upstream received ${JSON.stringify(seen)}`);

  const stopAt = Date.now();
  gateway.kill('SIGTERM');
  const code = await new Promise((r) => (gateway.exitCode !== null ? r(gateway.exitCode) : gateway.once('exit', (c) => r(c))));
  if (code !== 0) fail(`exit ${code} on SIGTERM:\n${logs}`);
  if (!/"msg":"shutting down"/.test(logs)) fail(`no shutdown log line:\n${logs}`);
  step('SIGTERM', `exit 0 after ${Date.now() - stopAt} ms`);

  const written = readFileSync(join(data, 'proxy-ca.pem'), 'utf8').startsWith('-----BEGIN CERTIFICATE-----') && existsSync(join(data, 'keyring.yaml')) && existsSync(join(data, 'identity'));
  if (!written) fail('the data directory lacks the generated keyring, identity keys or proxy CA');
  if (/demo-secret|demo-api-key|4111 1111 1111 1111|5500 0000 0000 0004/.test(logs) || logs.includes(secret)) fail('a secret or payload value appeared in the logs');
  step('data directory and logs', 'keyring, identity keys and proxy CA written under /var/lib/dpg; no secret or payload value in the logs');
} finally {
  if (gateway && gateway.exitCode === null) gateway.kill('SIGKILL');
  upstream.close();
  spawnSync('podman', ['image', 'unmount', image]);
  rmSync(work, { recursive: true, force: true });
}
console.log(`\nimage smoke: ${results.length} passed, 0 failed (${Math.round((Date.now() - started) / 1000)} s)`);
