// `npm run image:smoke`: builds the Dockerfile and runs the built image the way a container runtime
// would, on a machine that can build images but not start containers (here: podman without cgroups).
//
// 1. Two local base images (`podman import`; no image can be pulled here): the runtime base from
//    this machine's node binary, the libraries `ldd` lists, /usr/bin/env, npm and the CA bundle —
//    like node:20-bookworm-slim, no iptables; the build base is the same plus this machine's Debian
//    iptables with its dpkg records — what the Debian build base holds after `apt-get install iptables`.
// 2. `podman build --isolation=chroot --format docker` with those bases.
// 3. The image's own Entrypoint, Cmd, Env, User, WorkingDir and Healthcheck, read with
//    `podman image inspect`, run from `podman image mount` under chroot in a private mount
//    namespace: the image's root read-only, volumes bound where a container would have them.
// 4. Start, readiness (the image's HEALTHCHECK command), one protected request through
//    /api/protect, one through the egress proxy, and a clean stop on SIGTERM.
// 5. A pod as `dpg inject` (run from the image) lays it out, in a fresh network namespace: dpg-init
//    (`dpg capture`, root with only NET_ADMIN and NET_RAW via capsh, read-only root, the image's
//    own iptables; the rules checked with them), dpg-trust, the dpg-proxy sidecar as UID 10001 with
//    DPG_TRANSPARENT_ADDR (koffi loads: SO_ORIGINAL_DST), an app as UID 10002 with no proxy setting
//    whose routed request arrives masked and unrouted one byte-equal, then `dpg capture --remove`.
//
// Needs root, podman, unshare, nsenter, chroot, capsh, ip and Debian's iptables; not part of
// `npm test`. Prints one line per step and a summary; exits non-zero on the first failure.
// DPG_IMAGE names the image (default dpg:<version>).

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { copyInto, dependencyClosure, installedPackages, packageFiles } from './iptables-files.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const image = process.env.DPG_IMAGE ?? `dpg:${version}`;
/** The keyring the smoke's gateways use (NODE_ENV=production refuses a generated one). */
const SMOKE_KEYRING = `keys:\n  - id: default\n    versions:\n      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${randomBytes(32).toString('base64')}" }\n`;
const baseImage = `localhost/dpg-smoke-base:node${process.versions.node}`;
const hostPackages = installedPackages();
const iptablesVersion = hostPackages.get('iptables')?.version;
const buildBaseImage = `localhost/dpg-smoke-build:node${process.versions.node}-iptables${(iptablesVersion ?? '').replace(/[^\w.-]/g, '_')}`;
const UID = 10001;
const APP_UID = 10002;
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

const TOOLS = ['podman', 'unshare', 'nsenter', 'chroot', 'capsh', 'setpriv', 'ip', 'ldd'];
for (const tool of TOOLS) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) fail(`${tool} is not installed; the image smoke test needs ${TOOLS.join(', ')}`);
}
if (!iptablesVersion) fail("Debian's iptables is not installed here (apt-get install iptables): the build base carries it");
const hostTool = (name) => execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
const [chrootBin, mountBin, capshBin] = [hostTool('chroot'), hostTool('mount'), hostTool('capsh')];
if (process.getuid?.() !== 0) fail('run as root: the smoke test uses network and mount namespaces and chroot');

// 1. The local base images.
const work = mkdtempSync(join(tmpdir(), 'dpg-smoke-'));
chmodSync(work, 0o755);
// Run on every exit, a failure's included (fail() exits at once): last registered, first run.
const cleanups = [() => rmSync(work, { recursive: true, force: true })];
process.on('exit', () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      cleanup();
    } catch {
      // best effort: the rest still runs
    }
  }
});
/** A child that must not outlive the smoke test. */
const owned = (child) => {
  cleanups.push(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
  return child;
};

/** node, its libraries, /usr/bin/env, npm (for the build stage) and the CA bundle, under `fs`. */
function nodeTree(fs) {
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
}

/** Debian's iptables and the packages it needs, with their dpkg records, as `apt-get install` leaves them. */
function iptablesTree(fs) {
  const closure = dependencyClosure(hostPackages);
  mkdirSync(join(fs, 'var/lib/dpkg/info'), { recursive: true });
  for (const p of closure) {
    for (const path of packageFiles(p)) copyInto(fs, path);
    for (const list of [`${p.name}.list`, `${p.name}:${p.arch}.list`]) {
      if (existsSync(join('/var/lib/dpkg/info', list))) copyFileSync(join('/var/lib/dpkg/info', list), join(fs, 'var/lib/dpkg/info', list));
    }
  }
  writeFileSync(join(fs, 'var/lib/dpkg/status'), closure.map((p) => p.stanza).join('\n\n') + '\n');
  return closure;
}

function importBase(fs, name) {
  const tar = spawnSync('tar', ['-C', fs, '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 });
  if (tar.status !== 0) fail('tar of the base filesystem');
  const imported = spawnSync('podman', ['import', '--change', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', '--change', 'ENV HOME=/root', '-', name], { input: tar.stdout, encoding: 'utf8' });
  if (imported.status !== 0) fail(`podman import: ${imported.stderr}`);
}

const imageExists = (name) => spawnSync('podman', ['image', 'exists', name]).status === 0;
const baseExists = imageExists(baseImage);
const buildBaseExists = imageExists(buildBaseImage);
if (!baseExists || !buildBaseExists) {
  const fs = join(work, 'base');
  nodeTree(fs);
  if (!baseExists) importBase(fs, baseImage);
  if (!buildBaseExists) {
    iptablesTree(fs);
    importBase(fs, buildBaseImage);
  }
}
step('base images', `runtime ${baseImage} (node ${process.version} + ldd libraries, ${baseExists ? 'reused' : 'imported'}); build ${buildBaseImage} (the same + Debian iptables ${iptablesVersion} with its dpkg records, ${buildBaseExists ? 'reused' : 'imported'})`);

// 2. The image.
const buildStart = Date.now();
run('podman', [
  'build', '--isolation=chroot', '--format', 'docker', '--pull=never',
  '--build-arg', `BUILD_IMAGE=${buildBaseImage}`, '--build-arg', `RUNTIME_IMAGE=${baseImage}`, '--build-arg', `DPG_VERSION=${version}`,
  '-t', image, root,
], { stdio: ['ignore', 'ignore', 'pipe'] });
const [inspect] = JSON.parse(run('podman', ['image', 'inspect', image]));
const config = inspect.Config;
const size = Number(inspect.Size ?? 0) / 1e6;
const baseSize = Number(JSON.parse(run('podman', ['image', 'inspect', baseImage]))[0].Size) / 1e6;
// What the runtime stage adds, per layer: podman history lists newest first, the base's layers
// last; the two `COPY --from=build … /` layers are, in Dockerfile order, iptables then the app.
const history = (name) => JSON.parse(run('podman', ['history', '--format', 'json', name]));
const added = history(image).slice(0, -history(baseImage).length).reverse();
const copies = added.filter((l) => /^\/bin\/sh -c #\(nop\) COPY dir:\w+ in \/ *$/.test(l.CreatedBy ?? l.createdBy ?? ''));
if (copies.length !== 2) fail(`expected two COPY layers onto / (iptables, the app), found ${copies.length}`);
const [iptablesMb, appMb] = copies.map((l) => Number(l.size ?? l.Size ?? 0) / 1e6);
step(
  'podman build',
  `${image}, ${Math.round((Date.now() - buildStart) / 1000)} s, ${size.toFixed(0)} MB: the runtime base ${baseSize.toFixed(0)} MB + ${(size - baseSize).toFixed(1)} MB ` +
    `(the app ${appMb.toFixed(1)} MB, iptables ${iptablesMb.toFixed(1)} MB)`,
);

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
cleanups.push(() => spawnSync('podman', ['image', 'unmount', image]));
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

const quote = (text) => `'${String(text).replace(/'/g, `'\\''`)}'`;

/** This process's bounding set minus `keep`: what capsh drops so a root process holds only `keep`. */
function capabilitiesBut(keep) {
  const bounding = /^Bounding set =(\S*)/m.exec(execFileSync(capshBin, ['--print'], { encoding: 'utf8' }))?.[1] ?? '';
  return bounding.split(',').filter((c) => c && !keep.includes(c));
}

/**
 * Runs argv inside the image as a container runtime would: a private mount namespace, the image's
 * root read-only (an overlay whose upper layer only receives mount points, as runc creates them),
 * `mounts` at their paths, then chroot as `user`. A root container given `capabilities` goes
 * through capsh instead: chroot, the bounding set cut to those capabilities, no_new_privs — its
 * process holds exactly them. `netns`: the PID holding the network namespace to run in.
 * Default: the image's USER with one writable data directory, on this machine's network.
 */
function inImage(argv, extraEnv = {}, options = {}, container = {}) {
  const { user = config.User, capabilities, netns, workingDir = config.WorkingDir || '/' } = container;
  const mounts = container.mounts ?? [{ source: data, target: '/var/lib/dpg' }];
  const lines = [
    'set -e',
    `scratch=$(mktemp -d -p ${quote(work)})`,
    `${mountBin} -t tmpfs smoke "$scratch"`,
    'mkdir "$scratch/upper" "$scratch/work"',
    `${mountBin} -t overlay overlay -o lowerdir="$MNT",upperdir="$scratch/upper",workdir="$scratch/work" "$VIEW"`,
  ];
  for (const m of mounts) {
    const target = `"$VIEW"${quote(m.target)}`;
    lines.push(m.file ? `[ -e ${target} ] || { mkdir -p "$(dirname ${target})"; touch ${target}; }` : `mkdir -p ${target}`);
    lines.push(m.tmpfs ? `${mountBin} -t tmpfs -o mode=1777 smoke ${target}` : `${mountBin} --bind ${quote(m.source)} ${target}`);
    if (m.readOnly) lines.push(`${mountBin} -o remount,bind,ro ${target}`);
  }
  lines.push(`${mountBin} --rbind /dev "$VIEW/dev"`, `${mountBin} --rbind /proc "$VIEW/proc"`, `${mountBin} -o remount,bind,ro "$VIEW"`);
  lines.push(
    capabilities
      ? `exec ${capshBin} --chroot="$VIEW" --drop=${capabilitiesBut(capabilities).join(',')} --no-new-privs --shell=/usr/bin/env -- -C ${quote(workingDir)} "$@"`
      : `exec ${chrootBin} --userspec=${user} "$VIEW" /usr/bin/env -C ${quote(workingDir)} "$@"`,
  );
  const argvOf = ['unshare', '-m', '--propagation', 'private', '--', 'sh', '-c', lines.join('\n'), 'sh', ...argv];
  const full = netns ? ['nsenter', '-t', String(netns), '-n', '--', ...argvOf] : argvOf;
  return spawn(full[0], full.slice(1), { env: { ...env, ...extraEnv, MNT: mnt, VIEW: view }, ...options });
}

/** Collects a child's output; resolves with its exit code once it has ended. */
function finished(child, input) {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

function inImageSync(argv, extraEnv = {}, input, container) {
  return finished(inImage(argv, extraEnv, { stdio: ['pipe', 'pipe', 'pipe'] }, container), input);
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
  // NODE_ENV=production refuses a generated keyring: the gateway gets a keyring file, as from a Secret.
  writeFileSync(join(data, 'smoke-keyring.yaml'), SMOKE_KEYRING, { mode: 0o600 });
  chownSync(join(data, 'smoke-keyring.yaml'), UID, UID);
  writeFileSync(join(data, 'smoke.yaml'), `# written by scripts/image-smoke.mjs
http: { listen: 127.0.0.1:${httpPort} }
keys: { source: file, file: /var/lib/dpg/smoke-keyring.yaml }
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
  gateway = owned(inImage([...config.Entrypoint, ...config.Cmd], smokeEnv, { stdio: ['ignore', 'pipe', 'pipe'] }));
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

  const written = readFileSync(join(data, 'proxy-ca.pem'), 'utf8').startsWith('-----BEGIN CERTIFICATE-----') && existsSync(join(data, 'identity'));
  if (!written) fail('the data directory lacks the identity keys or proxy CA');
  if (existsSync(join(data, 'keyring.yaml'))) fail('a development keyring was generated under NODE_ENV=production');
  if (!/"msg":"keyring"/.test(logs) || !/"fingerprint":"sha256:[0-9a-f]{16}"/.test(logs)) fail(`no keyring fingerprint in the start-up log:\n${logs}`);
  if (/demo-secret|demo-api-key|4111 1111 1111 1111|5500 0000 0000 0004/.test(logs) || logs.includes(secret)) fail('a secret or payload value appeared in the logs');
  step('data directory and logs', 'identity keys and proxy CA written under /var/lib/dpg, no keyring generated (the keyring fingerprint logged); no secret or payload value in the logs');

  // 5. A pod as injection lays it out, in a network namespace of its own.
  await podSmoke();
} finally {
  if (gateway && gateway.exitCode === null) gateway.kill('SIGKILL');
  upstream.close();
}
/**
 * The pod `dpg inject` (run from the image) makes of a one-container Pod, run the way the kubelet
 * would: dpg-init, dpg-trust, the dpg-proxy sidecar once its startupProbe passes, then the app —
 * every dpg container from the image with its own args, env, user, capabilities and volumes.
 */
async function podSmoke() {
  const POD_ADDRESS = '192.0.2.1'; // a route names it
  const OTHER_ADDRESS = '192.0.2.2'; // no route does
  const injected = await inImageSync(['dpg', 'inject', '-f', '-', '--image', image, '--default', 'dpg.io/keyring=dpg-keyring'], {}, 'apiVersion: v1\nkind: Pod\nmetadata: { name: app }\nspec:\n  containers: [{ name: app, image: app:1 }]\n');
  if (injected.code !== 0) fail(`dpg inject in the image: ${injected.stderr}`);
  const spec = parseAllDocuments(injected.stdout).map((d) => d.toJSON()).find((d) => d?.kind === 'Pod')?.spec;
  const named = (name) => spec?.initContainers?.find((c) => c.name === name) ?? fail(`dpg inject added no ${name}: ${injected.stdout}`);
  const [init, trust, sidecar] = ['dpg-init', 'dpg-trust', 'dpg-proxy'].map(named);
  for (const c of [init, trust, sidecar]) {
    if (c.image !== image || c.securityContext?.readOnlyRootFilesystem !== true) fail(`${c.name}: image ${c.image}, readOnlyRootFilesystem ${c.securityContext?.readOnlyRootFilesystem}`);
  }
  expect('dpg-init user and capabilities', [init.securityContext.runAsUser, init.securityContext.capabilities], [0, { drop: ['ALL'], add: ['NET_ADMIN', 'NET_RAW'] }]);
  const transparentAddr = sidecar.env?.find((e) => e.name === 'DPG_TRANSPARENT_ADDR')?.value ?? fail('dpg-proxy has no DPG_TRANSPARENT_ADDR');
  step('dpg inject', `from the image: dpg-init \`dpg ${init.args.join(' ')}\` as root with ${init.securityContext.capabilities.add.join('+')}; dpg-proxy with DPG_TRANSPARENT_ADDR=${transparentAddr} as UID ${sidecar.securityContext.runAsUser}; read-only roots`);

  // The pod's volumes: its ConfigMaps (the gateway config routes POD_ADDRESS:80), its emptyDirs.
  const podConfig = `http: { enabled: false }
grpc: { enabled: false }
keys: { source: env }
manifests: manifests
proxy:
  enabled: true
  routes:
    - name: partner
      match: { host: ${POD_ADDRESS}, port: 80, methods: [POST], path: "/v1/**" }
      request: { manifest: customer, jobType: Mask }
`;
  const manifestsDir = join(root, 'config', 'manifests');
  const configMaps = {
    'dpg-config': { 'gateway.yaml': podConfig },
    'dpg-manifests': Object.fromEntries(readdirSync(manifestsDir).filter((f) => f.endsWith('.yaml')).map((f) => [f, readFileSync(join(manifestsDir, f), 'utf8')])),
  };
  const volumes = new Map();
  for (const v of spec.volumes) {
    const dir = join(work, 'volumes', v.name);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777); // the kubelet's emptyDir mode
    if (v.configMap) {
      for (const [file, text] of Object.entries(configMaps[v.configMap.name] ?? fail(`no ConfigMap ${v.configMap.name} in the smoke test`))) writeFileSync(join(dir, file), text, { mode: 0o644 });
      chmodSync(dir, 0o755);
    } else if (!v.emptyDir) fail(`volume ${v.name}: only ConfigMaps and emptyDirs are expected`);
    volumes.set(v.name, dir);
  }
  const mountsOf = (c) =>
    (c.volumeMounts ?? []).map((m) => ({ source: join(volumes.get(m.name), m.subPath ?? ''), target: m.mountPath, file: Boolean(m.subPath), readOnly: Boolean(m.readOnly) }));

  // The pod's network namespace: loopback, and two addresses of its own on a veth pair (a probe
  // target for `dpg capture`, and the "remote" servers, which listen in the pod too).
  const holder = owned(
    spawn('unshare', ['--net', '--', 'sh', '-c', [
      'set -e', 'ip link set lo up', 'ip link add dpg0 type veth peer name dpg1',
      `ip addr add ${POD_ADDRESS}/24 dev dpg0`, `ip addr add ${OTHER_ADDRESS}/24 dev dpg0`, 'ip -6 addr add 2001:db8::1/64 dev dpg0 nodad',
      'ip link set dpg0 up', 'ip link set dpg1 up', 'echo ready', 'exec cat >/dev/null',
    ].join('; ')], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  await new Promise((resolve) => holder.stdout.once('data', resolve));
  const netns = holder.pid;
  const containerOf = (c) => {
    const sc = c.securityContext;
    return {
      user: `${sc.runAsUser}:${sc.runAsGroup ?? sc.runAsUser}`,
      // runc enters the working directory before it drops capabilities; capsh cannot, so root
      // containers start in / (dpg capture does not use its working directory).
      ...(sc.runAsUser === 0 ? { capabilities: (sc.capabilities?.add ?? []).map((x) => `cap_${x.toLowerCase()}`), workingDir: '/' } : {}),
      mounts: mountsOf(c),
      netns,
    };
  };
  // The pod's Secrets, as the kubelet resolves secretKeyRef (the keyring: a generated one is refused in production).
  const secrets = { 'dpg-keyring': { 'keyring.yaml': SMOKE_KEYRING } };
  const envOf = (c) =>
    Object.fromEntries(
      (c.env ?? [])
        .map((e) => [e.name, e.value ?? (e.valueFrom?.secretKeyRef ? secrets[e.valueFrom.secretKeyRef.name]?.[e.valueFrom.secretKeyRef.key] : undefined)])
        .filter(([, value]) => value !== undefined),
    );
  const inContainer = (c, argv, input) => inImageSync(argv, envOf(c), input, containerOf(c));
  const commandOf = (c, extra = []) => [...(c.command ?? config.Entrypoint), ...(c.args ?? []), ...extra];

  // Servers at both addresses, port 80 (root, this machine's node): each body they receive, by address.
  const servers = owned(
    spawn('nsenter', ['-t', String(netns), '-n', '--', process.execPath, '-e', `require('http').createServer((q, s) => { let b = ''; q.on('data', (d) => (b += d)); q.on('end', () => { console.log(JSON.stringify({ at: q.socket.localAddress, body: b })); s.end('ok'); }); }).listen(80, '0.0.0.0', () => console.log('{"listening":true}'));`], { stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  const received = [];
  let serverOut = '';
  servers.stdout.on('data', (d) => {
    serverOut += d;
    for (let i; (i = serverOut.indexOf('\n')) >= 0; serverOut = serverOut.slice(i + 1)) received.push(JSON.parse(serverOut.slice(0, i)));
  });
  while (!received.some((r) => r.listening)) await sleep(20);

  // dpg-init: the capture rules, with the image's iptables, as root holding NET_ADMIN + NET_RAW only.
  const caps = await inContainer(init, ['node', '-e', "process.stdout.write(/CapEff:\\s*(\\w+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1])"]);
  if (caps.stdout !== '0000000000003000') fail(`dpg-init's effective capabilities are ${caps.stdout}${caps.stderr}, expected 0000000000003000 (NET_ADMIN, NET_RAW)`);
  const capture = await inContainer(init, commandOf(init));
  if (capture.code !== 0) fail(`dpg-init (dpg capture) exited ${capture.code}:\n${capture.stdout}${capture.stderr}`);
  const captureLines = capture.stdout.trim().split('\n');
  if (captureLines.filter((l) => /^probe IPv[46]: .* arrived on port/.test(l)).length !== 2) fail(`dpg capture did not prove both families:\n${capture.stdout}`);
  step('dpg-init: dpg capture', `CapEff 0x3000 (NET_ADMIN, NET_RAW), read-only root; ${captureLines.join(' | ')}`);

  const rules = async (what) => {
    const out = {};
    for (const tool of ['iptables-nft-save', 'ip6tables-nft-save']) {
      const r = await inContainer(init, [`/usr/sbin/${tool}`]);
      if (r.code !== 0) fail(`${tool} in the image (${what}): ${r.stderr}`);
      out[tool] = r.stdout;
    }
    return out;
  };
  const installed = await rules('after capture');
  for (const [tool, text] of Object.entries(installed)) {
    for (const wanted of ['-A OUTPUT -p tcp -j DPG_OUTPUT', '-A OUTPUT -p udp -j DPG_OUTPUT', `-A DPG_OUTPUT -m owner --uid-owner ${UID} -j RETURN`, '-j REDIRECT --to-ports 15006']) {
      if (!text.includes(wanted)) fail(`${tool} shows no "${wanted}":\n${text}`);
    }
  }
  const redirects = Object.values(installed).flatMap((t) => t.split('\n').filter((l) => l.includes('REDIRECT')));
  step('capture rules', `the image's iptables-nft-save and ip6tables-nft-save show the OUTPUT jumps, the UID ${UID} exemption and ${redirects.map((l) => l.replace(/^-A DPG_OUTPUT /, '')).join(' / ')}`);

  // dpg-trust: the pod's CA and the app's trust files.
  const trusted = await inContainer(trust, commandOf(trust));
  const trustDir = volumes.get('dpg-trust');
  const trustFiles = ['ca.crt', 'bundle.pem', 'truststore.p12'].filter((f) => existsSync(join(trustDir, f)));
  if (trusted.code !== 0 || trustFiles.length !== 3) fail(`dpg-trust exited ${trusted.code} with ${trustFiles.join(', ')}:\n${trusted.stdout}${trusted.stderr}`);
  step('dpg-trust: dpg ca bundle', `as UID ${trust.securityContext.runAsUser}: ${trustFiles.join(', ')} written (${readFileSync(join(trustDir, 'bundle.pem'), 'utf8').match(/BEGIN CERTIFICATE/g).length} certificates in bundle.pem)`);

  // dpg-proxy: the sidecar, ready when its startupProbe command says so.
  let sidecarLogs = '';
  const proxy = owned(inImage(commandOf(sidecar), envOf(sidecar), { stdio: ['ignore', 'pipe', 'pipe'] }, containerOf(sidecar)));
  proxy.stdout.on('data', (d) => (sidecarLogs += d));
  proxy.stderr.on('data', (d) => (sidecarLogs += d));
  const t0 = Date.now();
  for (;;) {
    if ((await inContainer(sidecar, sidecar.startupProbe.exec.command)).code === 0) break;
    if (proxy.exitCode !== null) fail(`dpg-proxy exited ${proxy.exitCode}:\n${sidecarLogs}`);
    if (Date.now() - t0 > 30_000) fail(`dpg-proxy not ready after 30 s:\n${sidecarLogs}`);
    await sleep(100);
  }
  const listening = sidecarLogs.split('\n').filter((l) => l.includes('"transparent proxy listening"')).map((l) => JSON.parse(l)).map((l) => `${l.host}:${l.port}`);
  if (listening.length === 0) fail(`the transparent listener did not start:\n${sidecarLogs}`);
  step('dpg-proxy sidecar', `as UID ${sidecar.securityContext.runAsUser}: startupProbe (${sidecar.startupProbe.exec.command.join(' ')}) passed after ${Date.now() - t0} ms; transparent listener on ${listening.join(' and ')} (koffi loaded)`);

  // The app: another UID, no proxy setting at all; both requests go to port 80, which capture redirects.
  const body = JSON.stringify({ customer: { name: 'Jane Doe', cardNumber: '4111 1111 1111 1111' } });
  const app = spawn('nsenter', ['-t', String(netns), '-n', '--', 'setpriv', `--reuid=${APP_UID}`, `--regid=${APP_UID}`, '--clear-groups', '--', 'env', '-i', 'PATH=/usr/bin:/bin', process.execPath, '-e',
    `const body = process.argv[1]; Promise.all(['${POD_ADDRESS}', '${OTHER_ADDRESS}'].map((a) => fetch('http://' + a + '/v1/customers', { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status))).then((s) => console.log(s.join(' ')), (e) => { console.error(e); process.exit(1); });`, body],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
  const appRun = await finished(app);
  if (appRun.code !== 0 || appRun.stdout.trim() !== '200 200') fail(`the app's requests: ${appRun.stdout}${appRun.stderr}`);
  const at = (address) => received.find((r) => r.at === address || r.at === `::ffff:${address}`)?.body;
  const routed = JSON.parse(at(POD_ADDRESS) ?? '{}');
  if (routed.customer?.cardNumber !== '**** **** **** 1111' || routed.customer?.name !== 'J*** D**') fail(`the routed request arrived as ${at(POD_ADDRESS)}`);
  if (at(OTHER_ADDRESS) !== body) fail(`the unrouted request arrived as ${at(OTHER_ADDRESS)}`);
  if (sidecarLogs.includes('4111 1111 1111 1111')) fail('a payload value appeared in the sidecar logs');
  step('app as UID 10002, no proxy setting', `${POD_ADDRESS}:80 (routed) received ${JSON.stringify(routed)}; ${OTHER_ADDRESS}:80 (unrouted) received the request byte-equal (spliced)`);

  proxy.kill('SIGTERM');
  const code = await new Promise((r) => (proxy.exitCode !== null ? r(proxy.exitCode) : proxy.once('exit', (c) => r(c))));
  if (code !== 0) fail(`dpg-proxy exit ${code} on SIGTERM:\n${sidecarLogs}`);

  // Removal, as dpg-init again: nothing of dpg is left.
  const removed = await inContainer(init, commandOf(init, ['--remove']));
  if (removed.code !== 0) fail(`dpg capture --remove exited ${removed.code}: ${removed.stdout}${removed.stderr}`);
  const after = await rules('after --remove');
  for (const [tool, text] of Object.entries(after)) if (/DPG/.test(text)) fail(`${tool} still shows dpg rules after --remove:\n${text}`);
  step('dpg capture --remove', `${removed.stdout.trim()}; iptables-nft-save and ip6tables-nft-save show no DPG chain or jump; the sidecar stopped with exit 0 on SIGTERM`);
  servers.kill('SIGKILL');
  holder.stdin.end();
}

console.log(`\nimage smoke: ${results.length} passed, 0 failed (${Math.round((Date.now() - started) / 1000)} s)`);
