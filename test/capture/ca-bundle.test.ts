// `dpg ca bundle`: the three files, the same CA `dpg serve` uses, and a truststore the JDK accepts
// as trusted (keytool lists a trustedCertEntry; Java's HttpClient trusts a gateway leaf through it).

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { buildBundle, TRUSTSTORE_PASSWORD } from '../../src/capture/ca-bundle.ts';
import { CA_CERT_FILE, loadOrCreateCa } from '../../src/crypto/gateway-ca.ts';
import { LeafCertificates } from '../../src/proxy/forwarding/ca.ts';
import { sharedTempDir } from '../helpers/netns.ts';

const run = promisify(execFile);
const hasJava = !spawnSync('java', ['-version'], { stdio: 'ignore' }).error;
const hasOpenssl = !spawnSync('openssl', ['version'], { stdio: 'ignore' }).error;
if (!hasJava) console.log('# SKIPPED JDK checks of the truststore (test/capture/ca-bundle.test.ts): no java on this machine');

describe('dpg ca bundle', () => {
  let dir: string;
  let out: string;
  let dataDir: string;
  let config: string;

  before(() => {
    dir = sharedTempDir('dpg-ca-bundle-');
    out = join(dir, 'trust');
    dataDir = join(dir, 'data');
    config = join(dir, 'gateway.yaml');
    writeFileSync(config, `manifests: ${join(process.cwd(), 'config/manifests')}\n`);
    const r = spawnSync(process.execPath, ['bin/dpg.js', 'ca', 'bundle', '--out', out, '--config', config], {
      encoding: 'utf8',
      env: { ...process.env, DPG_DATA_DIR: dataDir, SSL_CERT_FILE: '' },
      timeout: 180_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /generated now/);
  });

  test('writes ca.crt, bundle.pem and truststore.p12, readable by every user', () => {
    for (const name of ['ca.crt', 'bundle.pem', 'truststore.p12']) assert.equal(statSync(join(out, name)).mode & 0o777, 0o644, name);
  });

  test("the CA is the one dpg serve uses with the same DPG_DATA_DIR, and it ends the bundle", () => {
    const served = loadOrCreateCa(undefined, dataDir);
    assert.equal(readFileSync(join(out, 'ca.crt'), 'utf8'), served.certPem);
    assert.equal(readFileSync(join(dataDir, CA_CERT_FILE), 'utf8').trim(), served.certPem.trim());
    const bundle = readFileSync(join(out, 'bundle.pem'), 'utf8');
    assert.ok(bundle.endsWith(served.certPem));
    assert.ok((bundle.match(/BEGIN CERTIFICATE/g) ?? []).length > 100, 'the system roots are in the bundle');
  });

  test('running it again keeps the same CA', () => {
    const before = readFileSync(join(out, 'ca.crt'), 'utf8');
    const r = spawnSync(process.execPath, ['bin/dpg.js', 'ca', 'bundle', '--out', out, '--config', config], { encoding: 'utf8', env: { ...process.env, DPG_DATA_DIR: dataDir } });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(join(out, 'ca.crt'), 'utf8'), before);
  });

  test('duplicates and unreadable blocks in the roots are dropped', () => {
    const ca = readFileSync(join(out, 'ca.crt'), 'utf8');
    const files = buildBundle({ caPem: ca, roots: [{ label: 'x', pem: `${ca}\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n` }] });
    assert.equal(files.count, 1);
    assert.deepEqual(files.skipped, { x: 1 });
  });

  // The MAC (PKCS#12 key derivation, HMAC-SHA-256) is checked by two independent implementations: OpenSSL here, the JDK below.
  test('OpenSSL verifies the MAC with the password and rejects another', { skip: !hasOpenssl }, async () => {
    const p12 = join(out, 'truststore.p12');
    const ok = await run('openssl', ['pkcs12', '-in', p12, '-passin', `pass:${TRUSTSTORE_PASSWORD}`, '-nokeys', '-info'], { maxBuffer: 1 << 24 }).then(
      (r) => r.stderr + r.stdout,
      (e: { stderr: string }) => `FAILED ${e.stderr}`,
    );
    assert.match(ok, /MAC: sha256/);
    assert.doesNotMatch(ok, /FAILED/);
    await assert.rejects(run('openssl', ['pkcs12', '-in', p12, '-passin', 'pass:wrong', '-nokeys']));
  });

  describe('the JDK', { skip: !hasJava }, () => {
    let server: Server;
    let port: number;
    before(async () => {
      // An HTTPS server presenting a leaf the gateway CA minted, as interception does.
      const ca = loadOrCreateCa(undefined, dataDir);
      const leaves = new LeafCertificates(ca);
      server = createServer({ SNICallback: (name, cb) => cb(null, leaves.contextFor(name)) }, (_req, res) => res.end('trusted'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => server.close());

    test('keytool lists the gateway CA as a trustedCertEntry, and refuses a wrong password', async () => {
      const p12 = join(out, 'truststore.p12');
      const { stdout } = await run('keytool', ['-list', '-keystore', p12, '-storetype', 'PKCS12', '-storepass', TRUSTSTORE_PASSWORD, '-alias', 'dpg-gateway-ca']);
      assert.match(stdout, /dpg-gateway-ca, .*trustedCertEntry/);
      const fingerprint = new X509Certificate(readFileSync(join(out, 'ca.crt'))).fingerprint256;
      assert.ok(stdout.includes(fingerprint), 'the entry is the gateway CA');
      await assert.rejects(run('keytool', ['-list', '-keystore', p12, '-storetype', 'PKCS12', '-storepass', 'wrong']));
    });

    test("Java's HttpClient trusts a gateway leaf through -Djavax.net.ssl.trustStore", async () => {
      const p12 = join(out, 'truststore.p12');
      // localhost: the leaf names it; Java checks the name against the certificate.
      const { stdout } = await run('java', [
        `-Djavax.net.ssl.trustStore=${p12}`,
        '-Djavax.net.ssl.trustStoreType=PKCS12',
        `-Djavax.net.ssl.trustStorePassword=${TRUSTSTORE_PASSWORD}`,
        join(process.cwd(), 'test/capture/fixtures/TrustCheck.java'),
        `https://localhost:${port}/`,
      ]);
      assert.equal(stdout.trim(), '200 trusted');
    });

    test('without the truststore the same request fails (the check is not vacuous)', async () => {
      await assert.rejects(run('java', [join(process.cwd(), 'test/capture/fixtures/TrustCheck.java'), `https://localhost:${port}/`]));
    });
  });
});
