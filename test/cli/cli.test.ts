// The dpg command as users run it: a real process, stdin/stdout, exit codes, no payload in errors.

import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dataDir = mkdtempSync(join(tmpdir(), 'dpg-cli-'));

function dpg(args: string[], input?: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['bin/dpg.js', ...args], {
    input,
    encoding: 'utf8',
    env: { ...process.env, DPG_DATA_DIR: dataDir, DPG_LOG_LEVEL: 'silent', ...env },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('dpg CLI', () => {
  before(() => {
    // First use generates the dev keyring.
    const r = dpg(['protect', '--manifest', 'card-masking', '--job', 'Mask'], '{}');
    assert.equal(r.code, 0, r.stderr);
  });

  it('generated the dev keyring with mode 0600', () => {
    assert.equal(statSync(join(dataDir, 'keyring.yaml')).mode & 0o777, 0o600);
  });

  it('protect reads stdin and writes the protected JSON to stdout', () => {
    const r = dpg(['protect', '--manifest', 'customer', '--job', 'Mask'], '{"cardNumber":"4111 1111 1111 1111","name":"Jane Doe"}');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { cardNumber: '**** **** **** 1111', name: 'J*** D**' });
  });

  it('Pseudonymise then Reconstruct through two processes gives back the original', () => {
    const input = '{"email":"jane.doe@example.com","ssn":"123-45-6789"}';
    const p = dpg(['protect', '-m', 'customer', '-j', 'Pseudonymise', '--third-party', '7'], input);
    assert.equal(p.code, 0, p.stderr);
    const r = dpg(['protect', '-m', 'customer', '-j', 'Reconstruct', '--third-party', '7', '-'], p.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), JSON.parse(input));
  });

  it('reads a file argument', () => {
    const file = join(dataDir, 'in.json');
    writeFileSync(file, '[{"card_number":"5500 0000 0000 0004"}]');
    const r = dpg(['protect', '--manifest', 'card-masking', '--job', 'mask', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [{ card_number: '**** **** **** 0004' }]);
  });

  it('each error: clear message, non-zero exit, empty stdout, nothing of the payload', () => {
    const secret = '4111111111111111';
    const cases: [string[], string, RegExp][] = [
      [['protect', '--manifest', 'nope', '--job', 'Mask'], `{"cardNumber":"${secret}"}`, /MANIFEST_NOT_FOUND/],
      [['protect', '--manifest', 'card-masking', '--job', 'Decrypt'], `{"cardNumber":"${secret}"}`, /JOB_TYPE_NOT_DEFINED/],
      [['protect', '--manifest', 'customer', '--job', 'Mask'], `{"cardNumber":"${secret}",}`, /MALFORMED_DATA_SET/],
      [['protect', '--manifest', 'customer', '--job', 'Pseudonymise'], `{"iban":"DE00 1234 5678","cardNumber":"${secret}"}`, /VALUE_NOT_PROTECTABLE[\s\S]*\$\.iban/],
      [['protect', '--manifest', 'customer', '--job', 'Mask', '--country', 'USA'], `{"cardNumber":"${secret}"}`, /INVALID_REQUEST/],
      [['protect', '--manifest', 'customer', '--job', 'Scramble'], `{"cardNumber":"${secret}"}`, /INVALID_REQUEST/],
      [['protect', '--manifest', 'customer'], `{"cardNumber":"${secret}"}`, /--job is required/],
      [['protect', '--bogus'], '', /Unknown option/],
    ];
    for (const [args, input, re] of cases) {
      const r = dpg(args, input);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, re, args.join(' '));
      assert.ok(!r.stderr.includes(secret), `payload echoed for ${args.join(' ')}`);
    }
  });

  it('validate: ok on the default config, every problem with file:line and exit 1 on a broken one', () => {
    const ok = dpg(['validate']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /manifest customer/);
    const dir = mkdtempSync(join(tmpdir(), 'dpg-bad-'));
    mkdirSync(join(dir, 'manifests'));
    writeFileSync(join(dir, 'manifests', 'broken.yaml'), 'name: broken\nfields:\n  - match: a\n    Mask: { keepLast: many }\n  - match: b\n    Encrypt: { mode: rot13 }\n');
    writeFileSync(join(dir, 'gateway.yaml'), 'manifests: manifests\nhttp:\n  port: 80\n');
    const bad = dpg(['validate', '--config', join(dir, 'gateway.yaml')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /gateway\.yaml:3:\d+: http\.port: unknown key/);
    const bad2 = dpg(['validate', '--config', join(dir, 'gateway.yaml').replace('gateway', 'missing')]);
    assert.equal(bad2.code, 1);
    writeFileSync(join(dir, 'gateway.yaml'), 'manifests: manifests\n');
    const bad3 = dpg(['validate', '--config', join(dir, 'gateway.yaml')]);
    assert.equal(bad3.code, 1);
    assert.match(bad3.stderr, /broken\.yaml:4:\d+/);
    assert.match(bad3.stderr, /broken\.yaml:6:\d+/);
  });

  it('validate refuses a key file other users can read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-keys-'));
    mkdirSync(join(dir, 'manifests'));
    writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
    const material = Buffer.alloc(32, 7).toString('base64');
    writeFileSync(join(dir, 'keys.yaml'), `keys:\n  - id: k\n    versions: [{ version: 1, activeFrom: "2020-01-01T00:00:00Z", material: "${material}" }]\n`, { mode: 0o644 });
    writeFileSync(join(dir, 'gateway.yaml'), 'manifests: manifests\nkeys: { source: file, file: keys.yaml }\n');
    const bad = dpg(['validate', '--config', join(dir, 'gateway.yaml')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /keys\.yaml: the key file's permissions \(0644\)/);
    assert.ok(!bad.stderr.includes(material));
    chmodSync(join(dir, 'keys.yaml'), 0o600);
    const ok = dpg(['validate', '--config', join(dir, 'gateway.yaml')]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^key k \(default\): v1 from 2020-01-01T00:00:00.000Z$/m);
    assert.ok(!ok.stdout.includes(material));
  });

  it('hash-secret prints a scrypt hash', () => {
    const r = dpg(['hash-secret', '-'], 's3cret\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^scrypt\$/);
    assert.ok(!r.stdout.includes('s3cret'));
    const refused = dpg(['hash-secret', 's3cret']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /stdin/);
    assert.ok(!refused.stderr.includes('s3cret'));
  });
});
