// Transparent capture on a real kernel. Two network namespaces made by this test and linked by a
// veth pair: "world" (198.51.100.10-12, 2001:db8::10-11: the upstream servers) and "pod" (the
// gateway as UID 10001 and apps as UID 10002, with `dpg capture` installed). The apps — curl,
// Python urllib, Node fetch, Java HttpClient — get no proxy setting at all, only CA variables from
// `dpg ca bundle`. The world server prints every request and every connection's raw bytes.
// Needs root, iptables and namespaces; otherwise one line says why it was skipped.

import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { iptablesLegacySkipReason, iptablesSkipReason, createNamespace, lines, link, netnsSkipReason, sharedTempDir, userTempDir, type Namespace } from '../helpers/netns.ts';
import { namedPki } from '../proxy/transparent/helpers.ts';
import { DPG_RUNTIME, readableCopy } from '../helpers/readable-copy.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TS_LOADER = join(ROOT, 'scripts/ts-loader.mjs');
const CARD = '4111111111111111';
const MASKED = '************1111';
const GATEWAY_UID = 10001;
/** The config `dpg capture` reads when given no --config (nsenter starts commands in /, so no relative default). */
const CAPTURE_ENV = { DPG_CONFIG: join(ROOT, 'config/gateway.yaml') };
const APP_UID = 10002;

const HOSTS = {
  'api.partner.test': '198.51.100.10',
  'other.test': '198.51.100.11',
  'excluded.partner.test': '198.51.100.12',
  'api6.partner.test': '2001:db8::10',
  // Another name of api.partner.test's address (an ingress serving both): issue 16 class 9.
  'ingress.test': '198.51.100.10',
};

const skip = netnsSkipReason() ?? iptablesSkipReason();
if (skip) console.log(`# SKIPPED transparent capture suite (test/capture/capture.test.ts): ${skip}`);
const legacySkip = skip === undefined ? iptablesLegacySkipReason() : undefined;
if (legacySkip) console.log(`# SKIPPED dpg capture --backend legacy on a real kernel (test/capture/capture.test.ts): ${legacySkip}`);

interface WorldEvent {
  event: 'request' | 'raw' | 'ready';
  scheme?: string;
  local?: string;
  port?: number;
  url?: string;
  host?: string;
  body?: string;
  bytes?: string;
}

describe('transparent capture on a real kernel', { skip: skip !== undefined }, () => {
  // The gateway (UID 10001) and the apps (UID 10002) may not read the checkout (a clone in a
  // mode-0700 folder): everything they run is in a readable copy, and their working directory too.
  let RUNTIME = ROOT;
  let FIXTURES = join(ROOT, 'test/capture/fixtures');
  let DPG = join(ROOT, 'bin/dpg.js');
  let world: Namespace;
  let pod: Namespace;
  let worldServer: ChildProcess;
  let events: WorldEvent[] = [];
  let gateway: ChildProcess | undefined;
  let gatewayLog: ReturnType<typeof lines>;
  let dir: string;
  let bundleDir: string;
  let configFile: string;
  let dataDir: string;
  let appEnv: Record<string, string>;
  let gatewayEnv: Record<string, string>;

  const requests = (): WorldEvent[] => events.filter((e) => e.event === 'request');
  const bodyOf = (marker: string): Record<string, unknown> | undefined => {
    const hit = requests().find((e) => e.body?.includes(`"${marker}"`));
    return hit?.body ? (JSON.parse(hit.body) as Record<string, unknown>) : undefined;
  };
  const payload = (marker: string): string => JSON.stringify({ cardNumber: CARD, marker });

  async function startGateway(env = gatewayEnv, uid = GATEWAY_UID): Promise<ChildProcess> {
    const child = pod.spawn('node', [DPG, 'serve', '--config', configFile], { uid, env, cwd: RUNTIME });
    gatewayLog = lines(child.stdout);
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[gateway] ${d}`));
    return child;
  }

  async function stopGateway(): Promise<void> {
    if (!gateway || gateway.exitCode !== null) return;
    const exited = new Promise((resolve) => gateway?.once('exit', resolve));
    gateway.kill('SIGTERM');
    await exited;
  }

  before(async () => {
    RUNTIME = readableCopy([...DPG_RUNTIME, 'test/capture/fixtures']);
    FIXTURES = join(RUNTIME, 'test/capture/fixtures');
    DPG = join(RUNTIME, 'bin/dpg.js');
    dir = sharedTempDir('dpg-capture-');
    const pki = namedPki(dir, ['api.partner.test', 'api6.partner.test', 'other.test', 'excluded.partner.test']);
    writeFileSync(join(dir, 'upstream.crt'), pki.certPem, { mode: 0o644 });
    writeFileSync(join(dir, 'upstream.key'), pki.keyPem, { mode: 0o644 });

    world = await createNamespace('world');
    pod = await createNamespace('pod', { hosts: HOSTS });
    await link(
      { ns: pod, ifname: 'eth0', addresses: ['198.51.100.2/24', '2001:db8::2/64'] },
      { ns: world, ifname: 'eth0', addresses: ['198.51.100.10/24', '198.51.100.11/24', '198.51.100.12/24', '2001:db8::10/64', '2001:db8::11/64'] },
    );
    worldServer = world.spawn('node', ['--import', TS_LOADER, join(ROOT, 'test/capture/fixtures/world.ts'), join(dir, 'upstream.crt'), join(dir, 'upstream.key')], { cwd: ROOT });
    const worldLines = lines(worldServer.stdout);
    worldServer.stdout?.on('data', () => {
      events = worldLines.all().map((l) => JSON.parse(l) as WorldEvent);
    });
    await worldLines.waitFor(/"ready"/);

    // Gateway config: one route for every *.partner.test host on any port; its CA and the upstream's roots.
    dataDir = userTempDir(GATEWAY_UID);
    configFile = join(dir, 'gateway.yaml');
    writeFileSync(
      configFile,
      `http: { listen: "127.0.0.1:0" }
grpc: { listen: "127.0.0.1:0" }
keys: { source: generated }
manifests: ${join(RUNTIME, 'config/manifests')}
proxy:
  listen: "127.0.0.1:0"
  upstreamCa: ${pki.caFile}
  routes:
    - name: partner
      match: { host: "*.partner.test", path: "/v1/customers/**" }
      request: { manifest: customer, jobType: Mask }
    - name: partner-by-name
      match: { host: "api.partner.test", port: 80, path: "/v1/customers/**" }
      request: { manifest: customer, jobType: Mask }
  transparent: { listen: "127.0.0.1:15006" }
logging: { level: info }
`,
      { mode: 0o644 },
    );

    // dpg capture, as root in the pod, as an init container would (ports 80, 443 and 8080; 8080 excluded below).
    const cap = await pod.run('node', [DPG, 'capture', '--include-ports', '80,443,8080', '--exclude-ports', '8080', '--exclude-cidrs', '198.51.100.12/32', '--app-uid', String(APP_UID)], { cwd: ROOT, env: CAPTURE_ENV });
    assert.equal(cap.code, 0, cap.stderr);
    assert.match(cap.stdout, /probe IPv4: 198\.51\.100\.2:80 arrived on port 15006/);
    assert.match(cap.stdout, /probe IPv6: \[2001:db8::2\]:80 arrived on port 15006/);

    // dpg ca bundle, as root too, handing the CA it generates to the gateway's user.
    bundleDir = join(dir, 'trust');
    const bundle = await pod.run('node', [DPG, 'ca', 'bundle', '--out', bundleDir, '--config', configFile, '--owner', `${GATEWAY_UID}:${GATEWAY_UID}`], { cwd: ROOT, env: { DPG_DATA_DIR: dataDir } });
    assert.equal(bundle.code, 0, bundle.stderr);

    const gatewayHome = userTempDir(GATEWAY_UID);
    gatewayEnv = { HOME: gatewayHome, TMPDIR: gatewayHome, DPG_DATA_DIR: dataDir, DPG_LOG_LEVEL: 'info' };
    gateway = await startGateway();
    await gatewayLog.waitFor(/transparent proxy listening.*"port":15006|"port":15006.*transparent proxy listening/);

    const appHome = userTempDir(APP_UID);
    // Only CA variables: no HTTP_PROXY, no NO_PROXY, nothing else of the gateway.
    appEnv = {
      HOME: appHome,
      TMPDIR: appHome,
      SSL_CERT_FILE: join(bundleDir, 'bundle.pem'),
      REQUESTS_CA_BUNDLE: join(bundleDir, 'bundle.pem'),
      CURL_CA_BUNDLE: join(bundleDir, 'bundle.pem'),
      NODE_EXTRA_CA_CERTS: join(bundleDir, 'bundle.pem'),
      JAVA_TOOL_OPTIONS: `-Djavax.net.ssl.trustStore=${join(bundleDir, 'truststore.p12')} -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit -XX:-UsePerfData`,
    };
  });

  after(async () => {
    await stopGateway();
    await pod?.close();
    await world?.close();
  });

  const app = (cmd: string, args: string[]) => pod.run(cmd, args, { uid: APP_UID, env: appEnv, cwd: RUNTIME });

  test('curl: routed HTTP and HTTPS (IPv4 and IPv6) arrive masked; unrouted HTTPS shows the upstream certificate', async () => {
    for (const [marker, url] of [
      ['curl-http', 'http://api.partner.test/v1/customers'],
      ['curl-https', 'https://api.partner.test/v1/customers'],
      ['curl-https6', 'https://api6.partner.test/v1/customers'],
      ['curl-http6', 'http://api6.partner.test/v1/customers'],
    ]) {
      const r = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', payload(marker), url]);
      assert.equal(r.code, 0, `${url}: ${r.stderr}`);
      assert.equal(bodyOf(marker)?.cardNumber, MASKED, url);
    }
    const v4 = requests().find((e) => e.body?.includes('"curl-https"'));
    assert.equal(v4?.local?.replace(/^::ffff:/, ''), '198.51.100.10', 'the IPv4 original destination was recovered and dialled');
    const v6 = requests().find((e) => e.body?.includes('"curl-https6"'));
    assert.equal(v6?.local, '2001:db8::10', 'the IPv6 original destination was recovered and dialled');
    const unrouted = await app('curl', ['-sS', '-v', '-o', '/dev/null', 'https://other.test/']);
    assert.equal(unrouted.code, 0, unrouted.stderr);
    assert.match(unrouted.stderr, /issuer: CN=Upstream Test CA/);
  });

  test('Python urllib, Node fetch and Java HttpClient: routed HTTP and HTTPS arrive masked', async () => {
    const plan = (client: string) => [
      { method: 'POST', url: 'http://api.partner.test/v1/customers', body: payload(`${client}-http`) },
      { method: 'POST', url: 'https://api.partner.test/v1/customers', body: payload(`${client}-https`) },
      { method: 'GET', url: 'https://other.test/' },
    ];
    const py = await app('python3', [join(FIXTURES, 'client.py'), JSON.stringify(plan('python'))]);
    assert.equal(py.code, 0, py.stderr);
    for (const r of JSON.parse(py.stdout) as { url: string; status?: number; error?: string }[]) assert.equal(r.status, 200, `python ${r.url}: ${r.error}`);
    const node = await app('node', [join(FIXTURES, 'client.mjs'), 'fetch', JSON.stringify(plan('node'))]);
    assert.equal(node.code, 0, node.stderr);
    for (const r of JSON.parse(node.stdout) as { url: string; status?: number; error?: string }[]) assert.equal(r.status, 200, `node ${r.url}: ${r.error}`);
    for (const client of ['python', 'node']) {
      assert.equal(bodyOf(`${client}-http`)?.cardNumber, MASKED, `${client} http`);
      assert.equal(bodyOf(`${client}-https`)?.cardNumber, MASKED, `${client} https`);
    }

    if (spawnSync('java', ['-version'], { stdio: 'ignore' }).error) {
      console.log('# SKIPPED Java HttpClient check: no java on this machine');
      return;
    }
    const java = await app('java', [join(FIXTURES, 'Client.java'), ...plan('java').map((r) => `${r.method} ${r.url}${r.body ? ` ${r.body}` : ''}`)]);
    assert.equal(java.code, 0, java.stderr);
    for (const line of java.stdout.trim().split('\n')) assert.match(line, / 200$/, `java: ${line}`);
    assert.equal(bodyOf('java-http')?.cardNumber, MASKED, 'java http');
    assert.equal(bodyOf('java-https')?.cardNumber, MASKED, 'java https');
  });

  test('unrouted HTTPS is spliced (the app sees the upstream certificate); unrouted HTTP arrives byte-equal', async () => {
    const issuer = await app('node', [join(FIXTURES, 'client.mjs'), 'issuer', JSON.stringify({ host: 'other.test', port: 443 })]);
    assert.match(JSON.parse(issuer.stdout).issuer, /Upstream Test CA/);
    const body = `{"cardNumber":"${CARD}"}`;
    const sent = `POST /plain HTTP/1.1\r\nHost: other.test\r\nX-Odd-Case:  kept as sent \r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    const raw = await app('node', [join(FIXTURES, 'client.mjs'), 'raw', JSON.stringify({ host: 'other.test', port: 80, payload: sent })]);
    assert.match(JSON.parse(raw.stdout).response, /^HTTP\/1\.1 200/);
    await waitFor(() => events.some((e) => e.event === 'raw' && Buffer.from(e.bytes ?? '', 'base64').toString('latin1') === sent), 'byte-equal raw arrival');
  });

  test('issue 16 class 8: Node keep-alive agent by address — an unrouted request, then a routed one on the same connection: masked', async () => {
    // To an address no route names (other.test's): the first request names an unrouted host.
    const plan = { scheme: 'http', address: HOSTS['other.test'], port: 80, requests: [
      { host: 'other.test', body: payload('ka-unrouted') },
      { host: 'api.partner.test', body: payload('ka-routed') },
      { host: 'other.test', body: payload('ka-unrouted-again') },
    ] };
    const run = await app('node', [join(FIXTURES, 'client.mjs'), 'keep-alive', JSON.stringify(plan)]);
    assert.equal(run.code, 0, run.stderr);
    const results = JSON.parse(run.stdout) as { status?: number; reused?: boolean; error?: string }[];
    assert.deepEqual(results.map((r) => r.status ?? r.error), [200, 200, 200]);
    assert.deepEqual(results.map((r) => r.reused), [false, true, true], `one connection: ${run.stdout}`);
    await waitFor(() => bodyOf('ka-unrouted-again') !== undefined, 'the third request');
    assert.equal(bodyOf('ka-unrouted')?.cardNumber, CARD, 'unrouted: untouched');
    assert.equal(bodyOf('ka-routed')?.cardNumber, MASKED);
  });

  test('issue 16 class 7: HTTPS to an IP URL (no server name) on a routed port: intercepted, the routed Host masked', async () => {
    const plan = { scheme: 'https', address: HOSTS['other.test'], port: 443, requests: [{ host: 'api.partner.test', body: payload('nosni-routed') }] };
    const run = await app('node', [join(FIXTURES, 'client.mjs'), 'keep-alive', JSON.stringify(plan)]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { status?: number; error?: string }[])[0].status, 200, run.stdout);
    await waitFor(() => bodyOf('nosni-routed') !== undefined, 'the request');
    assert.equal(bodyOf('nosni-routed')?.cardNumber, MASKED);
  });

  test('issue 16 class 9: one matching on every listener — a name of the routed address is masked through capture and through the forward proxy on 127.0.0.1', async () => {
    const viaCapture = await app('node', [join(FIXTURES, 'client.mjs'), 'fetch', JSON.stringify([{ method: 'POST', url: 'http://ingress.test/v1/customers', body: payload('by-name-captured') }])]);
    assert.equal((JSON.parse(viaCapture.stdout) as { status?: number }[])[0].status, 200, viaCapture.stdout);
    const listening = gatewayLog.all().find((l) => l.includes('egress proxy listening'));
    const proxyPort = (JSON.parse(listening ?? '{}') as { port?: number }).port;
    assert.ok(proxyPort, 'the forward listener logged its port');
    const viaForward = await app('node', [join(FIXTURES, 'client.mjs'), 'forward', JSON.stringify({ proxy: { host: '127.0.0.1', port: proxyPort }, url: 'http://ingress.test/v1/customers', body: payload('by-name-forward') })]);
    assert.equal((JSON.parse(viaForward.stdout) as { status?: number }).status, 200, viaForward.stdout);
    await waitFor(() => bodyOf('by-name-forward') !== undefined && bodyOf('by-name-captured') !== undefined, 'both requests');
    assert.equal(bodyOf('by-name-captured')?.cardNumber, MASKED, 'through capture');
    assert.equal(bodyOf('by-name-forward')?.cardNumber, MASKED, 'through the forward proxy');
  });

  test('issue 16 class 11: h2c prior knowledge to an unrouted address with a routed :authority is refused; its body never leaves', async () => {
    const run = await app('node', [join(FIXTURES, 'client.mjs'), 'h2c', JSON.stringify({ url: `http://${HOSTS['other.test']}:80`, authority: 'api.partner.test', body: payload('h2c-routed') })]);
    assert.notEqual((JSON.parse(run.stdout.trim().split('\n')[0]) as { status?: number }).status, 200, run.stdout);
    await new Promise((r) => setTimeout(r, 300));
    const leaked = events.some((e) => (e.body ?? '').includes('h2c-routed') || Buffer.from(e.bytes ?? '', 'base64').includes('h2c-routed'));
    assert.equal(leaked, false, 'nothing of the stream reached the upstream');
  });

  test('excluded ports and CIDRs bypass the gateway (the routed body arrives in clear)', async () => {
    const port = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '--data', payload('excluded-port'), '-H', 'content-type: application/json', 'http://api.partner.test:8080/v1/customers']);
    assert.equal(port.code, 0, port.stderr);
    assert.equal(bodyOf('excluded-port')?.cardNumber, CARD);
    const cidr = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '--data', payload('excluded-cidr'), '-H', 'content-type: application/json', 'http://excluded.partner.test/v1/customers']);
    assert.equal(cidr.code, 0, cidr.stderr);
    assert.equal(bodyOf('excluded-cidr')?.cardNumber, CARD);
  });

  test('the gateway connects out as its own UID without being redirected back to itself', async () => {
    // Each routed request above reached the world exactly once; a loop would have repeated it or hung.
    for (const marker of ['curl-http', 'curl-https', 'node-https']) assert.equal(requests().filter((e) => e.body?.includes(`"${marker}"`)).length, 1, marker);
    assert.doesNotMatch(gatewayLog.all().join('\n'), /redirected back/);
  });

  test('rules are idempotent: capture again gives the same rules; --remove leaves none', async () => {
    const save = async (): Promise<string> =>
      ((await pod.must('iptables-save', [])) + (await pod.must('ip6tables-save', []))).split('\n').filter((l) => !l.startsWith('#')).join('\n');
    const first = await save();
    assert.match(first, /-A DPG_OUTPUT -m owner --uid-owner 10001 -j RETURN/);
    assert.match(first, /-A DPG_OUTPUT -d 127\.0\.0\.0\/8 -j RETURN/);
    assert.match(first, /-A DPG_OUTPUT -d ::1\/128 -j RETURN/);
    // Probing the redirect port while the gateway holds it: accepted there.
    const again = await pod.run('node', [DPG, 'capture', '--include-ports', '80,443,8080', '--exclude-ports', '8080', '--exclude-cidrs', '198.51.100.12/32'], { cwd: ROOT, env: CAPTURE_ENV });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await save(), first);
  });

  test("issue 16 class 10: the README recipe (dpg capture with no --config in a clone) captures the port of config/gateway.yaml's route", async () => {
    // A clone whose config/gateway.yaml routes api.partner.test on 8443 only; capture runs there with no --config.
    const clone = join(dir, 'clone');
    mkdirSync(join(clone, 'config'), { recursive: true });
    writeFileSync(
      join(clone, 'config', 'gateway.yaml'),
      `manifests: ${join(ROOT, 'config/manifests')}\nproxy:\n  routes:\n    - name: partner-8443\n      match: { host: api.partner.test, port: 8443, path: "/v1/customers/**" }\n      request: { manifest: customer, jobType: Mask }\n`,
      { mode: 0o644 },
    );
    // nsenter starts in /: the shell goes to the clone first, as a user's would.
    const cap = await pod.run('sh', ['-c', `cd "$1" && exec node "$2" capture --proxy-uid 10001 --exclude-cidrs 198.51.100.12/32`, 'sh', clone, DPG]);
    assert.equal(cap.code, 0, cap.stderr);
    assert.match(cap.stdout, /^routes \(config\/gateway\.yaml\): partner-8443 8443$/m);
    assert.match(cap.stdout, /capture installed .*: TCP 8443 \(the ports routes name\)/);
    const r = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', payload('recipe-8443'), 'http://api.partner.test:8443/v1/customers']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(bodyOf('recipe-8443')?.cardNumber, MASKED, 'the route on 8443 is captured');
  });

  test('review finding 8: by default a route without a port is captured on every port (8443 and 8080 arrive masked)', async () => {
    const save = async (): Promise<string> => (await pod.must('iptables-save', ['-t', 'nat'])).split('\n').filter((l) => !l.startsWith('#') && !l.startsWith(':')).join('\n');
    const before = await save();
    // Issue 16 class 10: the route matches every port, so leaving one out is refused and changes no rule.
    const refused = await pod.run('node', [DPG, 'capture', '--config', configFile, '--exclude-ports', '8080', '--exclude-cidrs', '198.51.100.12/32'], { cwd: ROOT });
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /route partner names no port, so it matches every port, but TCP 8080 would be excluded/);
    assert.equal(await save(), before, 'the refused capture installed nothing');

    const cap = await pod.run('node', [DPG, 'capture', '--config', configFile, '--exclude-cidrs', '198.51.100.12/32'], { cwd: ROOT });
    assert.equal(cap.code, 0, cap.stderr);
    assert.match(cap.stderr, /route partner names no port/);
    // partner-by-name (port 80) is the forward-matching route of issue 16 class 9.
    assert.match(cap.stdout, /^routes \(.*gateway\.yaml\): partner every port, partner-by-name 80$/m);
    assert.match(cap.stdout, /every TCP port \(a route names no port\)/);
    for (const [marker, port] of [['port-8443', 8443], ['port-8080', 8080]] as const) {
      const r = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', payload(marker), `http://api.partner.test:${port}/v1/customers`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(bodyOf(marker)?.cardNumber, MASKED, `port ${port}`);
    }
  });

  test('gateway stopped: the app is refused, nothing reaches the upstream; then --remove leaves no rule', async () => {
    await stopGateway();
    const before = events.length;
    for (const url of ['http://api.partner.test/v1/customers', 'https://api.partner.test/v1/customers', 'https://other.test/', 'http://[2001:db8::11]/']) {
      const r = await app('curl', ['-sS', '-o', '/dev/null', '--data', payload('while-down'), url]);
      assert.equal(r.code, 7, `${url} must be refused (curl exit 7): ${r.stderr}`);
      assert.match(r.stderr, /Connection refused|Couldn't connect/);
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(events.slice(before).length, 0, 'nothing reached the upstream');

    const removed = await pod.run('node', [DPG, 'capture', '--remove'], { cwd: ROOT });
    assert.equal(removed.code, 0, removed.stderr);
    const left = (await pod.must('iptables-save', [])) + (await pod.must('ip6tables-save', []));
    assert.doesNotMatch(left, /DPG_OUTPUT/);
    // Without capture the app goes direct: the world answers.
    const direct = await app('curl', ['-sS', '--fail', '-o', '/dev/null', 'http://other.test/']);
    assert.equal(direct.code, 0, direct.stderr);
  });

  test('a gateway whose UID the rules do not exempt refuses to start (its connections would loop)', async () => {
    const cap = await pod.run('node', [DPG, 'capture', '--proxy-uid', '10009'], { cwd: ROOT, env: CAPTURE_ENV });
    assert.equal(cap.code, 0, cap.stderr);
    const looping = await startGateway();
    const code = await new Promise<number | null>((resolve) => looping.once('exit', resolve));
    assert.notEqual(code, 0);
    assert.match(gatewayLog.all().join('\n'), /redirected back to it/);
    assert.doesNotMatch(gatewayLog.all().join('\n'), /INTERNAL/, 'the cause is printed, not an internal error');
    await pod.must('node', [DPG, 'capture', '--remove'], { cwd: ROOT });
  });

  /**
   * Every rule of both families as the given save tools print them, comments left out and chain
   * counters zeroed (the legacy tools count the packets of built-in chains: neighbour discovery
   * alone changes them between two saves).
   */
  const rulesOf = async (save4: string, save6: string): Promise<string> =>
    ((await pod.must(save4, [])) + (await pod.must(save6, [])))
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.replace(/ \[\d+:\d+\]$/, ' [0:0]'))
      .join('\n');

  test('the probe fails loudly when the rules install but do not redirect: exit 1, "traffic is NOT captured"', async () => {
    // The gateway is stopped, so the probe listens on 15006 itself. A raw-table NOTRACK rule (as
    // another tool in the pod might add) takes IPv4 port 80 out of connection tracking, and NAT —
    // our REDIRECT with it — never sees those packets: the rules install without error, but the
    // probe to 198.51.100.2:80 goes straight to that address, where nothing listens.
    const notrack = ['OUTPUT', '-p', 'tcp', '--dport', '80', '-j', 'NOTRACK'];
    await pod.must('iptables', ['-w', '5', '-t', 'raw', '-A', ...notrack]);
    try {
      const cap = await pod.run('node', [DPG, 'capture', '--include-ports', '80,443', '--app-uid', String(APP_UID)], { cwd: ROOT, env: CAPTURE_ENV });
      assert.equal(cap.code, 1, `capture must fail: ${cap.stdout}${cap.stderr}`);
      assert.match(cap.stderr, /probe IPv4 to 198\.51\.100\.2:80 failed: the probe connection did not arrive on the redirect port 15006/);
      assert.match(cap.stderr, /the rules are installed but do not redirect; traffic is NOT captured/);
      assert.doesNotMatch(cap.stderr, /IPv6 to/, 'only the family whose redirect failed is reported');
      assert.match(cap.stdout, /probe IPv6: \[2001:db8::2\]:80 arrived on port 15006/);
      assert.doesNotMatch(cap.stdout, /probe IPv4/);
      await pod.must('iptables', ['-w', '5', '-t', 'raw', '-D', ...notrack]);
      // The same command with the NOTRACK rule gone passes its probe: the rule was the only cause.
      const fixed = await pod.run('node', [DPG, 'capture', '--include-ports', '80,443', '--app-uid', String(APP_UID)], { cwd: ROOT, env: CAPTURE_ENV });
      assert.equal(fixed.code, 0, fixed.stderr);
      assert.match(fixed.stdout, /probe IPv4: 198\.51\.100\.2:80 arrived on port 15006/);
    } finally {
      // Whatever failed above, the next test starts from a namespace without these rules.
      await pod.run('iptables', ['-w', '5', '-t', 'raw', '-D', ...notrack]);
      await pod.run('node', [DPG, 'capture', '--remove'], { cwd: ROOT });
    }
    assert.doesNotMatch(await rulesOf('iptables-save', 'ip6tables-save'), /DPG_OUTPUT|NOTRACK/);
  });

  test('--backend legacy: rules in the legacy tables, idempotent, a real redirect (HTTP, HTTPS, IPv6), --remove leaves none', { skip: legacySkip }, async () => {
    const args = ['--backend', 'legacy', '--include-ports', '80,443', '--exclude-cidrs', '198.51.100.12/32', '--app-uid', String(APP_UID)];
    const cap = await pod.run('node', [DPG, 'capture', ...args], { cwd: ROOT, env: CAPTURE_ENV });
    assert.equal(cap.code, 0, cap.stderr);
    assert.match(cap.stdout, /capture installed \(legacy, IPv4 and IPv6\)/);
    assert.match(cap.stdout, /probe IPv4: 198\.51\.100\.2:80 arrived on port 15006/);
    assert.match(cap.stdout, /probe IPv6: \[2001:db8::2\]:80 arrived on port 15006/);

    const legacy = (): Promise<string> => rulesOf('iptables-legacy-save', 'ip6tables-legacy-save');
    const first = await legacy();
    assert.match(first, /-A OUTPUT -p tcp -j DPG_OUTPUT/);
    assert.match(first, /-A OUTPUT -p udp -j DPG_OUTPUT/);
    assert.match(first, /-A DPG_OUTPUT -m owner --uid-owner 10001 -j RETURN/);
    assert.match(first, /-A DPG_OUTPUT -d 198\.51\.100\.12\/32 -j RETURN/);
    assert.match(first, /-A DPG_OUTPUT -p tcp -m multiport --dports 80,443 -j REDIRECT --to-ports 15006/);
    assert.match(first, /-A DPG_OUTPUT -d ::1\/128 -j RETURN/);
    assert.doesNotMatch(await rulesOf('iptables-save', 'ip6tables-save'), /DPG_OUTPUT/, 'nothing went to the nf_tables backend');

    const again = await pod.run('node', [DPG, 'capture', ...args], { cwd: ROOT, env: CAPTURE_ENV });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await legacy(), first, 're-running gives the same rules (no duplicated jump)');

    // The redirect takes effect: the gateway protects what the app sends, with no proxy setting.
    gateway = await startGateway();
    await gatewayLog.waitFor(/transparent proxy listening.*"port":15006|"port":15006.*transparent proxy listening/);
    for (const [marker, url] of [
      ['legacy-http', 'http://api.partner.test/v1/customers'],
      ['legacy-https', 'https://api.partner.test/v1/customers'],
      ['legacy-https6', 'https://api6.partner.test/v1/customers'],
    ]) {
      const r = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', payload(marker), url]);
      assert.equal(r.code, 0, `${url}: ${r.stderr}`);
      assert.equal(bodyOf(marker)?.cardNumber, MASKED, url);
    }
    assert.equal(requests().find((e) => e.body?.includes('"legacy-https6"'))?.local, '2001:db8::10', 'the IPv6 original destination was recovered');
    const excluded = await app('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', payload('legacy-excluded'), 'http://excluded.partner.test/v1/customers']);
    assert.equal(excluded.code, 0, excluded.stderr);
    assert.equal(bodyOf('legacy-excluded')?.cardNumber, CARD, 'an excluded CIDR bypasses');
    await stopGateway();

    const removed = await pod.run('node', [DPG, 'capture', '--remove', '--backend', 'legacy'], { cwd: ROOT });
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /no legacy rules of dpg are left/);
    assert.doesNotMatch(await legacy(), /DPG_OUTPUT/);
    // Nothing redirects any more: with the gateway stopped, the app still reaches the world directly.
    const direct = await app('curl', ['-sS', '--fail', '-o', '/dev/null', 'http://other.test/']);
    assert.equal(direct.code, 0, direct.stderr);
  });
});

async function waitFor(check: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
