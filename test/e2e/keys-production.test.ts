// Issue 18 item 6 through real `dpg serve` / `dpg validate` processes: NODE_ENV=production refuses
// a generated keyring (absent `keys` too) and says what to use; the sidecar profile (the image's
// default config) starts in production from DPG_KEYRING; the keyring fingerprint and key check
// values agree between `dpg validate`, the start-up log line and /metrics, and differ between
// keyrings; Decrypt's error names a likely wrong keyring. No key material in any output.

import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { postJson, tokenFor } from './http-helpers.ts';
import { startServe, ROOT, type ServeProcess } from './serve-process.ts';
import { dpgSync, keyringDocument, MANIFESTS, startGateway, writeKeyFile, type GatewayProcess } from './gateway-process.ts';

const dirs: string[] = [];
const temp = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
const running: GatewayProcess[] = [];
after(async () => {
  await Promise.all(running.map((g) => g.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Every spelling of a key's bytes that must never appear in an output. */
function spellings(materialBase64: string): string[] {
  const bytes = Buffer.from(materialBase64, 'base64');
  return [materialBase64, bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
}

function assertNoMaterial(texts: readonly string[], materials: readonly string[]): void {
  for (const m of materials) for (const s of spellings(m)) for (const t of texts) assert.ok(!t.includes(s), 'no key material in any output');
}

/** The documented key check value: first 6 hex digits of HMAC-SHA-256(material, "dpg key check value"). */
const kcv = (materialBase64: string) => createHmac('sha256', Buffer.from(materialBase64, 'base64')).update('dpg key check value').digest('hex').slice(0, 6);

function sidecarConfig(dir: string, keys: string, extra = ''): string {
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `http: { enabled: false }\ngrpc: { enabled: false }\n${keys}manifests: ${MANIFESTS}\nproxy:\n  listen: 127.0.0.1:0\n${extra}`);
  return file;
}

describe('NODE_ENV=production and a generated keyring', () => {
  it('dpg serve and dpg validate refuse it, absent or explicit, name what to use instead and create no keyring', () => {
    for (const keys of ['', 'keys: { source: generated }\n']) {
      const dir = temp('dpg-prod-');
      const config = sidecarConfig(dir, keys);
      const env = { NODE_ENV: 'production', DPG_DATA_DIR: join(dir, 'data') };
      for (const command of ['serve', 'validate']) {
        const r = dpgSync([command, '-c', config], env);
        assert.equal(r.code, 1, `${command} ${keys || '(no keys section)'}: ${r.stderr}`);
        assert.match(r.stderr, /gateway\.yaml: keys\.source: is `generated` \(also the default when `keys` is absent\), which is refused under NODE_ENV=production/);
        assert.match(r.stderr, /source: file, file: <the keyring Secret mounted as a file>/);
        assert.match(r.stderr, /source: env, env: DPG_KEYRING/);
        assert.match(r.stderr, /docs\/keys\.md/);
      }
      assert.equal(existsSync(join(dir, 'data', 'keyring.yaml')), false, 'no keyring was generated');
    }
  });

  it('outside production the generated dev keyring still works (npm start, the default config)', () => {
    const data = temp('dpg-dev-');
    const r = dpgSync(['validate', '-c', join(ROOT, 'config/gateway.yaml')], { DPG_DATA_DIR: data });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /keyring fingerprint sha256:[0-9a-f]{16} \(keys\.source generated\)/);
    assert.ok(existsSync(join(data, 'keyring.yaml')));
  });

  it('the sidecar profile (the image default) needs DPG_KEYRING and starts in production with it', async () => {
    const data = temp('dpg-image-');
    const sidecar = join(ROOT, 'config/sidecar.yaml');
    const env = { NODE_ENV: 'production', DPG_DATA_DIR: data, DPG_PROXY_ADDR: '127.0.0.1:0', DPG_ADMIN_ADDR: '127.0.0.1:0' };
    const missing = dpgSync(['serve', '-c', sidecar], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /environment variable DPG_KEYRING: is not set or empty/);
    const material = randomBytes(32).toString('base64');
    const doc = keyringDocument([{ id: 'default', materials: [material] }]);
    const gateway = await startGateway(sidecar, { ...env, DPG_KEYRING: Buffer.from(doc).toString('base64') });
    running.push(gateway);
    const ready = await fetch(`http://127.0.0.1:${gateway.ports.admin}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(existsSync(join(data, 'keyring.yaml')), false, 'no keyring generated');
    assert.equal(await gateway.stop(), 0);
    assertNoMaterial([gateway.logs.join('\n'), gateway.stderr()], [material]);
  });
});

describe('keyring fingerprint', () => {
  it('dpg validate, the start-up log line and /metrics show the same fingerprint and check values; another keyring differs', async () => {
    const [m1, m2, p1] = [randomBytes(32), randomBytes(32), randomBytes(32)].map((b) => b.toString('base64'));
    const seen: string[] = [];
    const fingerprintOf = async (doc: string): Promise<string> => {
      const dir = temp('dpg-fp-');
      const keyFile = writeKeyFile(join(dir, 'keyring.yaml'), doc);
      const config = sidecarConfig(dir, `keys: { source: file, file: ${keyFile} }\n`, 'admin: { listen: 127.0.0.1:0 }\n');
      const env = { NODE_ENV: 'production', DPG_DATA_DIR: join(dir, 'data') };
      const v = dpgSync(['validate', '-c', config], env);
      assert.equal(v.code, 0, v.stderr);
      const fp = /^keyring fingerprint (sha256:[0-9a-f]{16}) \(keys\.source file\)$/m.exec(v.stdout)?.[1];
      assert.ok(fp, v.stdout);
      const gateway = await startGateway(config, env);
      running.push(gateway);
      const line = gateway.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.msg === 'keyring');
      assert.ok(line, 'a start-up log line for the keyring');
      assert.equal(line.fingerprint, fp);
      assert.equal(line.keySource, 'file');
      const metrics = await (await fetch(`http://127.0.0.1:${gateway.ports.admin}/metrics`)).text();
      assert.ok(metrics.includes(`dpg_keyring_info{fingerprint="${fp}"} 1`), metrics);
      seen.push(v.stdout, JSON.stringify(gateway.logs), metrics, gateway.stderr());
      assert.equal(await gateway.stop(), 0);
      return `${fp}\n${v.stdout}\n${JSON.stringify(line.keyVersions)}\n${metrics}`;
    };

    const a = await fingerprintOf(keyringDocument([{ id: 'default', materials: [m1, m2] }, { id: 'partners', materials: [p1] }]));
    const fpA = a.split('\n', 1)[0];
    // Key check values: the documented HMAC, per version, in all three places.
    for (const [kid, version, m] of [['default', 1, m1], ['default', 2, m2], ['partners', 1, p1]] as const) {
      assert.match(a, new RegExp(`^key check value ${kid} v${version} ${kcv(m)}$`, 'm'));
      assert.ok(a.includes(`"${kid} v${version} ${kcv(m)}"`), 'in the log line');
      assert.ok(a.includes(`dpg_keyring_key_version_info{key="${kid}",version="${version}",check="${kcv(m)}"} 1`), 'in /metrics');
    }
    // The same keyring written in another order: the same fingerprint (replicas compare equal).
    const reordered = await fingerprintOf(keyringDocument([{ id: 'partners', materials: [p1] }, { id: 'default', materials: [m1, m2] }], 'default'));
    assert.equal(reordered.split('\n', 1)[0], fpA);
    // One version's material different: another fingerprint, and that version's check differs.
    const m2b = randomBytes(32).toString('base64');
    const other = await fingerprintOf(keyringDocument([{ id: 'default', materials: [m1, m2b] }, { id: 'partners', materials: [p1] }]));
    assert.notEqual(other.split('\n', 1)[0], fpA);
    assert.match(other, new RegExp(`^key check value default v2 ${kcv(m2b)}$`, 'm'));
    assertNoMaterial(seen, [m1, m2, p1, m2b]);
  });
});

describe("Decrypt's error names a likely wrong keyring", () => {
  let a: ServeProcess;
  let b: ServeProcess;
  after(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('another keyring with the same key id, an unknown key id and an unknown version each get their sentence', async () => {
    // Two gateways, each with its own generated keyring: what replicas without a shared keyring are.
    [a, b] = await Promise.all([startServe('dpg-kr-a-'), startServe('dpg-kr-b-')]);
    const materials = [a, b].map((s) => /material: "([^"]+)"/.exec(readFileSync(join(s.dir, 'data', 'keyring.yaml'), 'utf8'))![1]);
    const [tokenA, tokenB] = await Promise.all([a, b].map((s) => tokenFor(s.base, { id: 'demo-client', secret: 'demo-secret' })));
    const call = (s: ServeProcess, token: string, jobType: string, dataSet: unknown) =>
      postJson(s.base, '/api/protect', { manifestName: 'customer', jobType, dataSet }, { 'x-resource-token': token });

    const enc = await call(a, tokenA, 'Encrypt', { email: 'jane.doe@example.com' });
    assert.equal(enc.status, 200, enc.text);
    const sealed = enc.json.dataSet.email as string;
    assert.match(sealed, /^enc:v1:gcm:default:1:/);
    const back = await call(a, tokenA, 'Decrypt', { email: sealed });
    assert.deepEqual(back.json.dataSet, { email: 'jane.doe@example.com' }, 'the keyring that encrypted it decrypts it');

    const wrong = await call(b, tokenB, 'Decrypt', { email: sealed });
    assert.equal(wrong.status, 422, wrong.text);
    assert.equal(wrong.json.code, 'VALUE_NOT_PROTECTABLE');
    assert.deepEqual(wrong.json.errors, [{ location: '$.email', reason: 'INVALID_CIPHERTEXT' }], 'the reason codes stay as documented');
    assert.match(wrong.json.detail, /^1 value\(s\) could not be processed; a value was not encrypted with this keyring's key "default" v1 /);
    assert.match(wrong.json.detail, /compare its fingerprint with the one of the gateway that encrypted it \(dpg validate, the dpg_keyring_info metric; docs\/keys\.md\)/);

    const unknownKid = await call(b, tokenB, 'Decrypt', { email: sealed.replace(':default:1:', ':zz-unknown-kid:1:') });
    assert.equal(unknownKid.status, 422, unknownKid.text);
    assert.deepEqual(unknownKid.json.errors, [{ location: '$.email', reason: 'UNKNOWN_KEY_VERSION' }]);
    assert.match(unknownKid.json.detail, /a value names a key id this keyring does not have, so it was encrypted with another keyring: compare the keyring fingerprints/);
    assert.ok(!unknownKid.text.includes('zz-unknown-kid'), 'a key id this keyring lacks came from the request: not echoed');

    const unknownVersion = await call(a, tokenA, 'Decrypt', { email: sealed.replace(':default:1:', ':default:7:') });
    assert.match(unknownVersion.json.detail, /a value names version 7 of key "default", which this keyring does not have/);

    assertNoMaterial([enc.text, back.text, wrong.text, unknownKid.text, unknownVersion.text, a.logs.join('\n'), b.logs.join('\n')], materials);
    assert.ok(![...a.logs, ...b.logs].some((l) => l.includes('jane.doe@example.com')), 'no payload value logged');
  });
});
