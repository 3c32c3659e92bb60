// The lab the soak and drain benchmarks share: a network namespace (its own loopback, /etc/hosts and
// `dpg capture` rules) holding an echo upstream (HTTP on 80, 8081 and 9080, HTTPS on 8443, for
// api.soak.test and other.soak.test) and `dpg serve` as UID 10001 with every door on: forward proxy
// with four routes, a reverse listener, the transparent listener, HTTP API, gRPC API, admin listener.
// Needs root (namespaces, iptables); `labSkipReason()` says why not.
//
// The upstream reports every request body that arrived incomplete (the client side vanished
// mid-body) as a JSON line: the drain bench counts them.

import { spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DoorTargets } from '../test/helpers/door-clients.ts';

const SELF = fileURLToPath(import.meta.url);
export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const TS_LOADER = join(ROOT, 'scripts/ts-loader.mjs');
const DPG = join(ROOT, 'bin/dpg.js');
const HOSTS = { 'api.soak.test': '198.51.100.10', 'other.soak.test': '198.51.100.11' };
const GATEWAY_UID = 10001;

type Netns = typeof import('../test/helpers/netns.ts');
type Namespace = Awaited<ReturnType<Netns['createNamespace']>>;

export interface LabGateway {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly ports: Record<string, number>;
  readonly targets: DoorTargets;
  /** Log lines seen, and those at error level or above (their messages). */
  readonly log: { lines: number; errors: Map<string, number>; graceCuts(): number };
  readonly exited: Promise<number | null>;
}

export interface Lab {
  readonly ns: Namespace;
  /** Request bodies the upstream saw end early, so far. */
  incompleteBodies(): number;
  startGateway(options?: { shutdownGraceMs?: number }): Promise<LabGateway>;
  /** Runs `node SCRIPT MODE ARG` inside the namespace as root (a load driver). */
  spawn(script: string, mode: string, arg: string): ChildProcess;
  close(): Promise<void>;
}

function serveUpstream(tlsDir: string): void {
  const echo = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('close', () => {
      if (!req.complete) process.stdout.write('{"incomplete":1}\n');
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    });
  };
  const servers = [80, 8081, 9080].map((port) => ({ port, server: createHttpServer({ keepAliveTimeout: 60_000 }, echo) }));
  const tls = { cert: readFileSync(join(tlsDir, 'upstream.pem')), key: readFileSync(join(tlsDir, 'upstream-key.pem')) };
  servers.push({ port: 8443, server: createHttpsServer({ ...tls, keepAliveTimeout: 60_000 }, echo) as never });
  let ready = 0;
  for (const { port, server } of servers) {
    server.listen(port, '0.0.0.0', () => {
      if (++ready === servers.length) process.stdout.write('{"ready":true}\n');
    });
  }
}

function gatewayConfig(upstreamCaFile: string, shutdownGraceMs: number): string {
  // The demo identity of config/gateway.yaml (tokens for /api/protect, /file/protect and gRPC).
  const defaults = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8');
  const identity = defaults.slice(defaults.indexOf('\nidentity:') + 1, defaults.indexOf('\nkeys:') + 1);
  const route = (name: string, port: number, path: string, jobType: string): string =>
    `    - name: ${name}\n      match: { host: api.soak.test, port: ${port}, methods: [POST], path: "${path}", contentType: application/json }\n      request: { manifest: customer, jobType: ${jobType} }\n`;
  return `http:
  listen: 127.0.0.1:0
  shutdownGraceMs: ${shutdownGraceMs}
grpc:
  listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
${identity}keys:
  source: generated
manifests: ${join(ROOT, 'config/manifests')}
proxy:
  enabled: true
  listen: 127.0.0.1:0
  upstreamCa: ${upstreamCaFile}
  routes:
${route('lab-mask', 8081, '/mask/**', 'Mask')}${route('lab-pseudonymise', 8081, '/pseudo/**', 'Pseudonymise')}${route('lab-mask-tls', 8443, '/mask/**', 'Mask')}${route('lab-transparent', 80, '/mask/**', 'Mask')}  reverse:
    - listen: 127.0.0.1:0
      upstream: http://api.soak.test:8081
  transparent:
    listen: 127.0.0.1:15006
    ipv6: false
logging:
  level: info
`;
}

export async function labSkipReason(): Promise<string | undefined> {
  const { iptablesSkipReason, netnsSkipReason } = await import('../test/helpers/netns.ts');
  return netnsSkipReason() ?? iptablesSkipReason();
}

export async function startLab(): Promise<Lab> {
  const { createNamespace, lines, sharedTempDir, userTempDir } = await import('../test/helpers/netns.ts');
  // The gateway runs the built bin, as in production.
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('build failed');
  const { upstreamPki } = await import('../test/proxy/helpers.ts');
  const shared = sharedTempDir('dpg-lab-');
  const pki = upstreamPki(shared, Object.keys(HOSTS));
  writeFileSync(join(shared, 'upstream.pem'), pki.certPem);
  writeFileSync(join(shared, 'upstream-key.pem'), pki.keyPem);

  const ns = await createNamespace('lab', { hosts: HOSTS });
  const children: ChildProcess[] = [];
  let incomplete = 0;
  try {
    for (const address of Object.values(HOSTS)) await ns.must('ip', ['addr', 'add', `${address}/32`, 'dev', 'lo']);
    const upstream = ns.spawn(process.execPath, ['--import', TS_LOADER, SELF, 'upstream', shared], { cwd: ROOT, env: {} });
    children.push(upstream);
    upstream.stderr?.on('data', (d: Buffer) => process.stderr.write(`[upstream] ${d}`));
    const out = lines(upstream.stdout);
    upstream.stdout?.on('data', (d: Buffer) => (incomplete += d.toString().split('"incomplete"').length - 1));
    await out.waitFor(/"ready":true/, 60_000);
    const firstConfig = join(shared, 'gateway-10000.yaml');
    writeFileSync(firstConfig, gatewayConfig(pki.caFile, 10_000), { mode: 0o644 });
    await ns.must(process.execPath, [DPG, 'capture', '--config', firstConfig, '--include-ports', '80,8081,8443,9080'], { cwd: ROOT });
  } catch (err) {
    await ns.close();
    throw err;
  }

  return {
    ns,
    incompleteBodies: () => incomplete,
    async startGateway(options = {}) {
      const grace = options.shutdownGraceMs ?? 10_000;
      const configFile = join(shared, `gateway-${grace}.yaml`);
      writeFileSync(configFile, gatewayConfig(pki.caFile, grace), { mode: 0o644 });
      const home = userTempDir(GATEWAY_UID);
      const child = ns.spawn(process.execPath, [DPG, 'serve', '-c', configFile], {
        uid: GATEWAY_UID,
        cwd: ROOT,
        env: { HOME: home, TMPDIR: home, DPG_DATA_DIR: join(home, 'data') },
      });
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // The log: ports from the start-up lines, then only counted (audit lines come at the request rate).
      const ports: Record<string, number> = {};
      let graceCuts = 0;
      const log = { lines: 0, errors: new Map<string, number>(), graceCuts: () => graceCuts };
      await new Promise<void>((resolve, reject) => {
        let partial = '';
        child.stdout?.on('data', (d: Buffer) => {
          const parts = (partial + d.toString()).split('\n');
          partial = parts.pop() ?? '';
          for (const line of parts) {
            log.lines++;
            if (!line.startsWith('{') || line.includes('"level":30')) continue;
            if (line.includes('grace period over')) graceCuts++;
            const entry = JSON.parse(line) as { level: number; msg: string; listener?: string; door?: string; port?: number };
            if (entry.level >= 50) log.errors.set(entry.msg, (log.errors.get(entry.msg) ?? 0) + 1);
          }
          for (const line of parts) {
            if (!line.includes('"listener"') && !line.includes('"door"') && !line.includes('"msg":"ready"')) continue;
            const entry = JSON.parse(line) as { msg: string; listener?: string; door?: string; port?: number };
            const name = entry.listener ?? entry.door;
            if (name && entry.port) ports[name] ??= entry.port;
            if (entry.msg === 'ready') resolve();
          }
        });
        void exited.then((code) => reject(new Error(`gateway exited ${code}: ${stderr}`)));
      });
      // nsenter and setpriv exec in turn: the child's PID is the gateway's.
      const pid = child.pid as number;
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dpg.js')) throw new Error(`process ${pid} is not the gateway`);
      const targets: DoorTargets = {
        ports: { proxy: ports.proxy, http: ports.http, grpc: ports.grpc },
        gatewayCaPem: readFileSync(join(home, 'data', 'proxy-ca.pem'), 'utf8'),
        upstreamCaPem: pki.caPem,
        urls: {
          proxyMask: 'http://api.soak.test:8081/mask/x',
          proxyPseudonymise: 'http://api.soak.test:8081/pseudo/x',
          proxyTlsMask: 'https://api.soak.test:8443/mask/x',
          proxyPass: 'http://other.soak.test:8081/pass/x',
          proxyBlind: 'https://other.soak.test:8443/pass/x',
          reverseMask: `http://127.0.0.1:${ports['proxy-reverse']}/mask/x`,
          transparentMask: 'http://api.soak.test/mask/x',
          transparentSpliced: 'http://api.soak.test:9080/pass/x',
        },
      };
      return { child, pid, ports, targets, log, exited };
    },
    spawn(script, mode, arg) {
      const child = ns.spawn(process.execPath, ['--import', TS_LOADER, script, mode, arg], { cwd: ROOT, env: {} });
      children.push(child);
      return child;
    },
    async close() {
      const exited = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r))));
      for (const c of children) c.kill('SIGTERM');
      await Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 12_000))]);
      await ns.close();
    },
  };
}

if (process.argv[2] === 'upstream') serveUpstream(process.argv[3]);
