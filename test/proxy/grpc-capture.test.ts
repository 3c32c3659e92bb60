// gRPC under real transparent capture: two network namespaces made by this test and linked by a
// veth pair — "world" (198.51.100.10, the partner's grpc-js server on HTTPS 443) and "pod" (the
// gateway as UID 10001 with a gRPC route, `dpg capture` installed, the app as UID 10002). The app
// is a grpc-js client with no proxy setting: it dials api.partner.test:443 trusting the gateway CA,
// iptables sends its connection to the transparent listener, and the partner must receive the
// route's fields protected (unary and bidirectional streaming) and everything else as sent.
// Needs root, iptables and namespaces; otherwise one line says why it was skipped.

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createNamespace, iptablesSkipReason, lines, link, netnsSkipReason, sharedTempDir, userTempDir, type Namespace } from '../helpers/netns.ts';
import { DPG_RUNTIME, readableCopy } from '../helpers/readable-copy.ts';
import { namedPki } from './transparent/helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = 'test/proxy/grpc-egress/fixtures/capture';
const GATEWAY_UID = 10001;
const APP_UID = 10002;
const CARD = '4111111111111111';
const MASKED_CARD = '************1111';

const skip = netnsSkipReason() ?? iptablesSkipReason();
if (skip) console.log(`# SKIPPED gRPC under transparent capture (test/proxy/grpc-capture.test.ts): ${skip}`);

interface Customer {
  name: string;
  email: string;
  card_number: string;
  plan: string;
}

describe('gRPC under real transparent capture: a grpc-js app with no proxy setting, its routed fields protected', { skip: skip !== undefined, timeout: 60_000 }, () => {
  let world: Namespace;
  let pod: Namespace;
  let gateway: ChildProcess | undefined;
  let gatewayLog: ReturnType<typeof lines>;
  let worldLog: ReturnType<typeof lines>;
  let runtime: string;
  let caFile: string;
  let appEnv: Record<string, string>;

  before(async () => {
    // The gateway and the app may not read the checkout (a clone in a mode-0700 folder): a readable copy.
    runtime = readableCopy([...DPG_RUNTIME, FIXTURES, 'node_modules/@grpc', 'node_modules/@js-sdsl']);
    const dir = sharedTempDir('dpg-grpc-capture-');
    const pki = namedPki(dir, ['api.partner.test']);
    writeFileSync(join(dir, 'upstream.crt'), pki.certPem, { mode: 0o644 });
    writeFileSync(join(dir, 'upstream.key'), pki.keyPem, { mode: 0o644 });
    const proto = join(dir, 'partner.proto');
    copyFileSync(join(ROOT, FIXTURES, 'partner.proto'), proto);

    world = await createNamespace('world');
    pod = await createNamespace('pod', { hosts: { 'api.partner.test': '198.51.100.10' } });
    await link({ ns: pod, ifname: 'eth0', addresses: ['198.51.100.2/24'] }, { ns: world, ifname: 'eth0', addresses: ['198.51.100.10/24'] });
    const partner = world.spawn('node', [join(ROOT, FIXTURES, 'world.mjs'), proto, join(dir, 'upstream.crt'), join(dir, 'upstream.key')], { cwd: ROOT });
    partner.stderr?.on('data', (d: Buffer) => process.stderr.write(`[partner] ${d}`));
    worldLog = lines(partner.stdout);

    const configFile = join(dir, 'gateway.yaml');
    writeFileSync(
      configFile,
      `http: { enabled: false }
grpc: { enabled: false }
keys: { source: generated }
manifests: ${join(runtime, 'config/manifests')}
proxy:
  listen: off
  upstreamCa: ${pki.caFile}
  routes:
    - name: partner-grpc
      match: { host: api.partner.test, port: 443, path: "/partner.v1.Customers/*" }
      grpc: { protoFiles: [${proto}] }
      request: { manifest: customer, jobType: Mask }
  transparent: { listen: "127.0.0.1:15006", ipv6: false }
logging: { level: info }
`,
      { mode: 0o644 },
    );
    // As an init container would: capture port 443 of the app's UID, the gateway's exempt.
    const cap = await pod.run('node', [join(runtime, 'bin/dpg.js'), 'capture', '--include-ports', '443', '--app-uid', String(APP_UID)], { cwd: runtime, env: { DPG_CONFIG: configFile } });
    assert.equal(cap.code, 0, cap.stderr);

    const dataDir = userTempDir(GATEWAY_UID);
    const home = userTempDir(GATEWAY_UID);
    gateway = pod.spawn('node', [join(runtime, 'bin/dpg.js'), 'serve', '--config', configFile], {
      uid: GATEWAY_UID,
      env: { HOME: home, TMPDIR: home, DPG_DATA_DIR: dataDir, DPG_LOG_LEVEL: 'info' },
      cwd: runtime,
    });
    gateway.stderr?.on('data', (d: Buffer) => process.stderr.write(`[gateway] ${d}`));
    gatewayLog = lines(gateway.stdout);
    await Promise.all([gatewayLog.waitFor(/transparent proxy listening/), worldLog.waitFor(/"ready"/)]);
    // The CA the gateway made in its data directory: all the app is given.
    caFile = join(sharedTempDir('dpg-grpc-ca-'), 'gateway-ca.pem');
    writeFileSync(caFile, readFileSync(join(dataDir, 'proxy-ca.pem')), { mode: 0o644 });
    const appHome = userTempDir(APP_UID);
    appEnv = { HOME: appHome, TMPDIR: appHome };
  });

  after(async () => {
    if (gateway && gateway.exitCode === null) {
      const exited = new Promise((resolve) => gateway?.once('exit', resolve));
      gateway.kill('SIGTERM');
      await exited;
    }
    await pod?.close();
    await world?.close();
  });

  test('unary and bidi calls arrive with the card masked and the other fields as sent; the app gets the answers; the audit line counts the values', async () => {
    const run = await pod.run('node', [join(runtime, FIXTURES, 'app.mjs'), caFile, 'captured'], { uid: APP_UID, env: appEnv, cwd: runtime });
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout) as { unary?: Customer; bidi?: Customer[]; error?: string };
    assert.equal(out.error, undefined, out.error);

    const arrived = worldLog
      .all()
      .map((l) => JSON.parse(l) as { event: string; method?: string; message?: Customer })
      .filter((e) => e.event === 'message');
    assert.deepEqual(
      arrived.map((e) => `${e.method} ${e.message?.plan}`),
      ['Put captured-unary', 'Chat captured-bidi-1', 'Chat captured-bidi-2'],
    );
    for (const { message } of arrived) {
      assert.equal(message?.card_number, MASKED_CARD, 'the card number left the pod masked');
      assert.notEqual(message?.name, 'Jane Doe', 'the name left the pod masked');
      assert.notEqual(message?.email, 'jane.doe@example.com', 'the e-mail address left the pod masked');
    }
    // The partner echoes what it got: the app sees the protected values, and its own plan field.
    assert.equal(out.unary?.card_number, MASKED_CARD);
    assert.equal(out.unary?.plan, 'captured-unary');
    assert.deepEqual(
      out.bidi?.map((m) => [m.plan, m.card_number]),
      [
        ['captured-bidi-1', MASKED_CARD],
        ['captured-bidi-2', MASKED_CARD],
      ],
    );
    // One audit line per call, with the values protected (3 per message) and never a value.
    const audits = await Promise.all([gatewayLog.waitFor(/"route":"partner-grpc".*"outcome":"ok"/), gatewayLog.waitFor(/"valuesProtected":6/)]);
    assert.ok(audits.length === 2);
    const log = gatewayLog.all().join('\n');
    assert.match(log, /"valuesProtected":3\b/);
    for (const value of [CARD, 'Jane Doe', 'jane.doe@example.com']) assert.ok(!log.includes(value), 'no payload value in the gateway log');
  });
});
