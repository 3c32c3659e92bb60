// Mesh coexistence on a real kernel (issue 18 item 5): a pod with both dpg's capture and a service
// mesh's, the mesh's rules written the way istio-iptables writes them (nat chains ISTIO_INBOUND,
// ISTIO_REDIRECT, ISTIO_IN_REDIRECT and ISTIO_OUTPUT appended to OUTPUT and PREROUTING; the proxy's
// UID and GID 1337 exempt; loopback handling; outbound to 15001, inbound to 15006). A stand-in mesh
// proxy runs as UID 1337 on 15001/15006. For both install orders (dpg-init before istio-init, and
// after), an app's request goes app → gateway (protected) → mesh proxy → upstream: exactly once
// through each, never around the gateway, never back into it. `dpg capture --exclude-uids 1337`
// is what keeps the mesh proxy's own upstream connection from being captured again; the gateway's
// ports must not be the mesh proxy's (15006 is refused at start with "address already in use").
// Needs root, iptables and network namespaces; otherwise one line says why it was skipped.
// Not in `npm test` (its time budget): `npm run test:mesh` runs it (and .ci/run does).

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createNamespace, iptablesSkipReason, lines, link, netnsSkipReason, sharedTempDir, userTempDir, type Namespace } from '../helpers/netns.ts';
import { namedPki } from '../proxy/transparent/helpers.ts';
import { DPG_RUNTIME, readableCopy } from '../helpers/readable-copy.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TS_LOADER = join(ROOT, 'scripts/ts-loader.mjs');
const GATEWAY_UID = 10001;
const APP_UID = 10002;
const MESH_UID = 1337;
const DPG_PORT = 15106;
const CARD = '4111111111111111';
const MASKED = '************1111';

/** The default rule set istio-iptables installs for a sidecar (IPv4, nat), as data. */
const ISTIO_RULES = `*nat
:ISTIO_INBOUND - [0:0]
:ISTIO_REDIRECT - [0:0]
:ISTIO_IN_REDIRECT - [0:0]
:ISTIO_OUTPUT - [0:0]
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A ISTIO_INBOUND -p tcp --dport 15020 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15021 -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN
-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
-A OUTPUT -p tcp -j ISTIO_OUTPUT
-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner ${MESH_UID} -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner ${MESH_UID} -j RETURN
-A ISTIO_OUTPUT -m owner --uid-owner ${MESH_UID} -j RETURN
-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner ${MESH_UID} -j ISTIO_IN_REDIRECT
-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner ${MESH_UID} -j RETURN
-A ISTIO_OUTPUT -m owner --gid-owner ${MESH_UID} -j RETURN
-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN
-A ISTIO_OUTPUT -j ISTIO_REDIRECT
COMMIT
`;

const skip = netnsSkipReason() ?? iptablesSkipReason();
if (skip) console.log(`# SKIPPED mesh coexistence suite (test/capture/mesh.test.ts): ${skip}`);

describe('dpg capture beside a service mesh (Istio rules) on a real kernel', { skip: skip !== undefined }, () => {
  let RUNTIME = ROOT;
  let DPG = '';
  let world: Namespace;
  let pod: Namespace;
  let worldLines: ReturnType<typeof lines>;
  let meshLines: ReturnType<typeof lines>;
  let dir: string;
  let configFile: string;
  let gatewayEnv: Record<string, string>;
  let appEnv: Record<string, string>;
  let gateway: ChildProcess | undefined;

  const writeConfig = (file: string, port: number): void =>
    writeFileSync(
      file,
      `http: { enabled: false }
grpc: { enabled: false }
keys: { source: generated }
manifests: ${join(RUNTIME, 'config/manifests')}
proxy:
  listen: "127.0.0.1:0"
  routes:
    - name: partner
      match: { host: api.partner.test, port: 80 }
      request: { manifest: customer, jobType: Mask }
  transparent: { listen: "127.0.0.1:${port}", ipv6: false }
logging: { level: info }
`,
      { mode: 0o644 },
    );

  before(async () => {
    RUNTIME = readableCopy([...DPG_RUNTIME, 'test/capture/fixtures']);
    DPG = join(RUNTIME, 'bin/dpg.js');
    dir = sharedTempDir('dpg-mesh-');
    const pki = namedPki(dir, ['api.partner.test']);
    writeFileSync(join(dir, 'upstream.crt'), pki.certPem, { mode: 0o644 });
    writeFileSync(join(dir, 'upstream.key'), pki.keyPem, { mode: 0o644 });
    world = await createNamespace('world');
    pod = await createNamespace('pod', { hosts: { 'api.partner.test': '198.51.100.10' } });
    await link({ ns: pod, ifname: 'eth0', addresses: ['198.51.100.2/24'] }, { ns: world, ifname: 'eth0', addresses: ['198.51.100.10/24'] });
    const worldServer = world.spawn('node', ['--import', TS_LOADER, join(ROOT, 'test/capture/fixtures/world.ts'), join(dir, 'upstream.crt'), join(dir, 'upstream.key')], { cwd: ROOT });
    worldLines = lines(worldServer.stdout);
    await worldLines.waitFor(/"ready"/);
    const mesh = pod.spawn('node', [join(RUNTIME, 'test/capture/fixtures/mesh-proxy.mjs'), '198.51.100.10', '80'], { uid: MESH_UID, cwd: RUNTIME });
    meshLines = lines(mesh.stdout);
    await meshLines.waitFor(/"ready"/);

    configFile = join(dir, 'gateway.yaml');
    writeConfig(configFile, DPG_PORT);
    const gatewayHome = userTempDir(GATEWAY_UID);
    gatewayEnv = { HOME: gatewayHome, TMPDIR: gatewayHome, DPG_DATA_DIR: userTempDir(GATEWAY_UID), DPG_LOG_LEVEL: 'info' };
    const appHome = userTempDir(APP_UID);
    appEnv = { HOME: appHome, TMPDIR: appHome };
    // One gateway for both orders: capture's probe accepts a listener already on the redirect port.
    gateway = await startGateway();
  });

  after(async () => {
    if (gateway) await stop(gateway);
    await pod?.close();
    await world?.close();
  });

  const installIstio = () => pod.must('iptables-restore', ['--noflush'], { input: ISTIO_RULES });
  const removeIstio = async (): Promise<void> => {
    await pod.must('iptables', ['-t', 'nat', '-D', 'OUTPUT', '-p', 'tcp', '-j', 'ISTIO_OUTPUT']);
    await pod.must('iptables', ['-t', 'nat', '-D', 'PREROUTING', '-p', 'tcp', '-j', 'ISTIO_INBOUND']);
    for (const chain of ['ISTIO_OUTPUT', 'ISTIO_INBOUND', 'ISTIO_REDIRECT', 'ISTIO_IN_REDIRECT']) await pod.must('iptables', ['-t', 'nat', '-F', chain]);
    for (const chain of ['ISTIO_OUTPUT', 'ISTIO_INBOUND', 'ISTIO_REDIRECT', 'ISTIO_IN_REDIRECT']) await pod.must('iptables', ['-t', 'nat', '-X', chain]);
  };
  const capture = async (): Promise<void> => {
    const r = await pod.run('node', [DPG, 'capture', '--include-ports', '80,443', '--redirect-port', String(DPG_PORT), '--exclude-uids', String(MESH_UID), '--app-uid', String(APP_UID), '--config', configFile], { cwd: RUNTIME });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`exempt: UID ${GATEWAY_UID}, ${MESH_UID}, loopback`));
  };
  const uncapture = async (): Promise<void> => {
    const r = await pod.run('node', [DPG, 'capture', '--remove', '--config', configFile], { cwd: RUNTIME });
    assert.equal(r.code, 0, r.stderr);
  };
  const startGateway = async (): Promise<ChildProcess> => {
    const gw = pod.spawn('node', [DPG, 'serve', '--config', configFile], { uid: GATEWAY_UID, env: gatewayEnv, cwd: RUNTIME });
    await lines(gw.stdout).waitFor(/"msg":"ready"/);
    return gw;
  };
  const stop = async (child: ChildProcess): Promise<void> => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };

  async function throughBoth(order: string): Promise<void> {
    {
      const meshBefore = meshLines.all().filter((l) => l.includes('"outbound"')).length;
      const marker = `mesh-${order}`;
      const r = await pod.run('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', 'content-type: application/json', '--data', JSON.stringify({ cardNumber: CARD, marker }), 'http://api.partner.test/v1/customers'], { uid: APP_UID, env: appEnv, cwd: RUNTIME });
      assert.equal(r.code, 0, r.stderr);
      const arrived = (await worldLines.waitFor(new RegExp(`"event":"request".*${marker}`)));
      const body = JSON.parse((JSON.parse(arrived) as { body: string }).body) as { cardNumber: string };
      assert.equal(body.cardNumber, MASKED, 'the request passed the gateway');
      const outbound = meshLines.all().filter((l) => l.includes('"outbound"'));
      assert.equal(outbound.length - meshBefore, 1, 'the gateway\'s upstream connection passed the mesh proxy once (not the app\'s, not the mesh\'s own again)');
      assert.match(outbound.at(-1)!, new RegExp(`"uid":${MESH_UID}`));
      // The OUTPUT chain: dpg's jump is first whichever init ran first (capture inserts at position 1).
      const output = await pod.must('iptables', ['-t', 'nat', '-S', 'OUTPUT']);
      const jumps = output.split('\n').filter((l) => l.startsWith('-A OUTPUT'));
      assert.match(jumps[0], /-j DPG_OUTPUT/, output);
      assert.ok(jumps.some((l) => /-j ISTIO_OUTPUT/.test(l)), output);
    }
  }

  test('dpg-init before istio-init: app → gateway → mesh proxy → upstream', async () => {
    await capture();
    await installIstio();
    try {
      await throughBoth('dpg-first');
    } finally {
      await removeIstio();
      await uncapture();
    }
  });

  test('istio-init before dpg-init: the same path', async () => {
    await installIstio();
    await capture();
    try {
      await throughBoth('istio-first');
    } finally {
      await uncapture();
      await removeIstio();
    }
  });

  test("the gateway on the mesh proxy's inbound port (15006) does not start: its ports must differ", async () => {
    const clashing = join(dir, 'clash.yaml');
    writeConfig(clashing, 15006);
    const r = await pod.run('node', [DPG, 'serve', '--config', clashing], { uid: GATEWAY_UID, env: gatewayEnv, cwd: RUNTIME, timeoutMs: 30_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr + r.stdout, /address already in use|EADDRINUSE/);
  });
});
