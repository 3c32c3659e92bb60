// Keyring: document validation, version selection by date, file/env/dev sources, key derivation.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hkdfSync, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { ConfigError, DpgError } from '../../src/core/errors.ts';
import { kubeletWrite } from '../helpers/kubelet-atomic-writer.ts';
import {
  Keyring,
  deriveKey,
  ensureDevKeyring,
  hkdfSha256,
  loadKeyringFile,
  loadKeyringFromEnv,
  type MasterKeyVersion,
} from '../../src/crypto/keyring.ts';

const M1 = randomBytes(32).toString('base64');
const M2 = randomBytes(32).toString('base64');
const M3 = randomBytes(32).toString('base64');

const rotated = {
  defaultKey: 'customer',
  keys: [
    { id: 'other', versions: [{ version: 1, activeFrom: '2020-01-01T00:00:00Z', material: M3 }] },
    {
      id: 'customer',
      versions: [
        { version: 2, activeFrom: '2025-06-01T12:00:00Z', material: M2 },
        { version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1 },
      ],
    },
  ],
};

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-keyring-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function configProblems(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

describe('Keyring version selection', () => {
  const ring = Keyring.fromDocument(rotated, 'test');

  it('lists kids and the default', () => {
    assert.deepEqual(ring.kids(), ['other', 'customer']);
    assert.equal(ring.defaultKid, 'customer');
    assert.equal(Keyring.fromDocument({ keys: rotated.keys }, 'test').defaultKid, 'other');
  });

  it('selects the old version before the rotation instant and the new one from it on', () => {
    const before = ring.activeAt('customer', new Date('2025-06-01T11:59:59.999Z'));
    assert.equal(before.version, 1);
    assert.deepEqual(Buffer.from(before.material).toString('base64'), M1);
    assert.equal(ring.activeAt('customer', new Date('2025-06-01T12:00:00Z')).version, 2);
    assert.equal(ring.activeAt('customer', new Date('2030-01-01T00:00:00Z')).version, 2);
    assert.equal(ring.activeAt('customer', new Date('2024-01-01T00:00:00Z')).version, 1);
  });

  it('fails with INVALID_REQUEST before the first version, for unknown kids and invalid dates', () => {
    assert.throws(() => ring.activeAt('customer', new Date('2023-12-31T23:59:59Z')), (err: unknown) => {
      assert.ok(err instanceof DpgError);
      assert.equal(err.code, 'INVALID_REQUEST');
      assert.match(err.message, /No version of key "customer" is active/);
      return true;
    });
    assert.throws(() => ring.activeAt('nope', new Date()), (err: unknown) => err instanceof DpgError && err.code === 'INVALID_REQUEST');
    assert.throws(() => ring.activeAt('customer', new Date('garbage')), (err: unknown) => err instanceof DpgError && err.code === 'INVALID_REQUEST');
  });

  it('gets explicit versions', () => {
    assert.equal(ring.get('customer', 1)?.activeFrom.toISOString(), '2024-01-01T00:00:00.000Z');
    assert.equal(ring.get('customer', 2)?.kid, 'customer');
    assert.equal(ring.get('customer', 3), undefined);
    assert.equal(ring.get('missing', 1), undefined);
  });

  it('never shows material when a version is logged or serialised', () => {
    const v = ring.activeAt('customer', new Date());
    assert.equal(v.material.length, 32);
    const hexMaterial = Buffer.from(v.material).toString('hex');
    for (const text of [JSON.stringify(v), inspect(v, { depth: 5 }), ring.explain().join('\n'), inspect(ring, { depth: 5 })]) {
      assert.ok(!text.includes(M2) && !text.includes(hexMaterial), text);
    }
    assert.deepEqual(ring.explain(), [
      'other: v1 from 2020-01-01T00:00:00.000Z',
      'customer (default): v1 from 2024-01-01T00:00:00.000Z, v2 from 2025-06-01T12:00:00.000Z',
    ]);
  });
});

describe('Keyring document validation', () => {
  it('rejects non-documents', () => {
    for (const doc of [null, 42, 'keys', [], {}]) {
      const err = configProblems(() => Keyring.fromDocument(doc, 'src.yaml'));
      assert.equal(err.problems[0].file, 'src.yaml');
    }
  });

  it('reports every problem, by path, without echoing material', () => {
    const secret = randomBytes(31).toString('base64');
    const err = configProblems(() =>
      Keyring.fromDocument(
        {
          defaultKey: 'missing',
          extra: 1,
          keys: [
            { id: 'a', versions: [{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: secret }] },
            { id: 'a', versions: [{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1 }] },
            { id: 'bad id!', versions: [] },
            { id: 'c', versions: [{ version: 0, activeFrom: '2024-01-01', material: 'not base64 !!', colour: 'x' }] },
            {
              id: 'd',
              versions: [
                { version: 1, activeFrom: '2025-01-01T00:00:00Z', material: M1 },
                { version: 2, activeFrom: '2024-01-01T00:00:00Z', material: M2 },
                { version: 2, activeFrom: '2026-01-01T00:00:00Z', material: M3 },
              ],
            },
            { id: 'e', versions: [{ version: 1, activeFrom: '2024-01-01T00:00:00Z', material: M1, [M3]: 'x' }] },
          ],
        },
        'keys.yaml',
      ),
    );
    const lines = err.problems.map((p) => `${p.path ?? ''}: ${p.message}`);
    const expectHas = (re: RegExp): void => assert.ok(lines.some((l) => re.test(l)), `${re} in\n${lines.join('\n')}`);
    expectHas(/^: unknown property `extra`/);
    expectHas(/^keys\[0\]\.versions\[0\]\.material: must be base64 of exactly 32/);
    expectHas(/^keys\[1\]\.id: duplicate key id/);
    expectHas(/^keys\[2\]\.id: must be 1-64 characters/);
    expectHas(/^keys\[2\]\.versions: must be a non-empty list/);
    expectHas(/^keys\[3\]\.versions\[0\]\.version: must be a whole number/);
    expectHas(/^keys\[3\]\.versions\[0\]\.activeFrom: must be an ISO 8601 timestamp with a time zone/);
    expectHas(/^keys\[3\]\.versions\[0\]\.material: must be base64/);
    expectHas(/^keys\[3\]\.versions\[0\]: unknown property `colour`/);
    expectHas(/^keys\[4\]\.versions\[2\]\.version: duplicate version number/);
    expectHas(/^keys\[4\]\.versions: version 2 must become active after version 1/);
    expectHas(/^keys\[5\]\.versions\[0\]: unknown property \(name not shown\)/);
    expectHas(/^defaultKey: names no key/);
    for (const m of [secret, M1, M2, M3, 'not base64']) assert.ok(!err.message.includes(m));
  });
});

describe('Keyring sources', () => {
  const yamlText = [
    'defaultKey: customer',
    'keys:',
    '  - id: customer',
    '    versions:',
    `      - { version: 1, activeFrom: "2024-01-01T00:00:00Z", material: "${M1}" }`,
    `      - version: 2`,
    `        activeFrom: 2025-06-01T12:00:00Z`,
    `        material: ${M2}`,
    '',
  ].join('\n');

  it('loads YAML and JSON files', () => {
    const dir = tempDir();
    const yamlPath = join(dir, 'keys.yaml');
    writeFileSync(yamlPath, yamlText, { mode: 0o600 });
    assert.equal(loadKeyringFile(yamlPath).activeAt('customer', new Date('2026-01-01T00:00:00Z')).version, 2);
    const jsonPath = join(dir, 'keys.json');
    writeFileSync(jsonPath, JSON.stringify(rotated), { mode: 0o600 });
    assert.deepEqual(loadKeyringFile(jsonPath).kids(), ['other', 'customer']);
  });

  it('accepts other-read (never write) only inside a volume the kubelet writes (a Secret mounted 0444)', () => {
    const dir = tempDir();
    for (const mode of [0o444, 0o644]) {
      kubeletWrite(join(dir, 'secret'), { 'keys.yaml': yamlText }, mode);
      assert.equal(loadKeyringFile(join(dir, 'secret', 'keys.yaml')).defaultKid, 'customer');
    }
    for (const mode of [0o666, 0o646, 0o664]) {
      kubeletWrite(join(dir, 'secret'), { 'keys.yaml': yamlText }, mode);
      assert.match(configProblems(() => loadKeyringFile(join(dir, 'secret', 'keys.yaml'))).problems[0]!.message, /permissions/);
    }
    // The kubelet writes as root: the same layout owned by another user is no Secret volume.
    if (process.getuid?.() === 0) {
      kubeletWrite(join(dir, 'secret'), { 'keys.yaml': yamlText }, 0o444);
      chownSync(join(dir, 'secret', 'keys.yaml'), 65534, 65534);
      assert.match(configProblems(() => loadKeyringFile(join(dir, 'secret', 'keys.yaml'))).problems[0]!.message, /permissions \(0444\)/);
    } else console.log('SKIPPED: the look-alike Secret volume owned by another user needs root to chown');
    // The same mode outside such a volume (a plain file, or a symlink to one) is refused.
    writeFileSync(join(dir, 'plain.yaml'), yamlText, { mode: 0o444 });
    chmodSync(join(dir, 'plain.yaml'), 0o444);
    assert.match(configProblems(() => loadKeyringFile(join(dir, 'plain.yaml'))).problems[0]!.message, /permissions \(0444\)/);
  });

  it('refuses a key file other users may read or change, or its group may change', () => {
    const dir = tempDir();
    const path = join(dir, 'keys.yaml');
    writeFileSync(path, yamlText, { mode: 0o600 });
    for (const mode of [0o644, 0o604, 0o602, 0o620, 0o666]) {
      chmodSync(path, mode);
      const err = configProblems(() => loadKeyringFile(path));
      assert.equal(err.problems[0].file, path);
      assert.match(err.problems[0].message, /permissions \(0\d{3}\).*chmod 600/);
      assert.ok(!err.message.includes(M1));
    }
    for (const mode of [0o600, 0o400, 0o640, 0o440]) {
      chmodSync(path, mode);
      assert.equal(loadKeyringFile(path).defaultKid, 'customer');
    }
    const notFile = configProblems(() => loadKeyringFile(dir));
    assert.match(notFile.message, /not a regular file/);
  });

  it('names the file and line of a problem, and never quotes a syntax error line', () => {
    const dir = tempDir();
    const path = join(dir, 'keys.yaml');
    writeFileSync(path, yamlText.replace('version: 2', 'version: two'), { mode: 0o600 });
    const err = configProblems(() => loadKeyringFile(path));
    assert.equal(err.problems[0].file, path);
    assert.equal(err.problems[0].line, 6);
    assert.equal(err.problems[0].path, 'keys[0].versions[1].version');

    writeFileSync(path, `keys:\n  - id: a\n    versions: [ { material: "${M1}" ]\n`);
    const syntax = configProblems(() => loadKeyringFile(path));
    assert.equal(syntax.problems[0].line, 3);
    assert.match(syntax.problems[0].message, /YAML syntax error/);
    assert.ok(!syntax.message.includes(M1));

    const missing = configProblems(() => loadKeyringFile(join(dir, 'absent.yaml')));
    assert.match(missing.message, /cannot read the key file \(ENOENT\)/);
  });

  it('loads from an environment variable, plain or base64', () => {
    const plain = loadKeyringFromEnv('DPG_KEYS', { DPG_KEYS: yamlText });
    assert.equal(plain.defaultKid, 'customer');
    const b64 = loadKeyringFromEnv('DPG_KEYS', { DPG_KEYS: Buffer.from(JSON.stringify(rotated)).toString('base64') });
    assert.deepEqual(b64.kids(), ['other', 'customer']);
    const unset = configProblems(() => loadKeyringFromEnv('DPG_KEYS', {}));
    assert.equal(unset.problems[0].file, 'environment variable DPG_KEYS');
  });

  it('generates a private dev keyring once and keeps it', () => {
    const dataDir = join(tempDir(), 'nested', 'data');
    const path = ensureDevKeyring(dataDir);
    assert.equal(path, join(dataDir, 'keyring.yaml'));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    const first = readFileSync(path, 'utf8');
    assert.equal(ensureDevKeyring(dataDir), path);
    assert.equal(readFileSync(path, 'utf8'), first);
    const ring = loadKeyringFile(path);
    assert.equal(ring.defaultKid, 'default');
    assert.equal(ring.activeAt('default', new Date('2000-01-01T00:00:00Z')).version, 1);
    assert.equal(ensureDevKeyring(join(tempDir(), 'x')) === path, false);
    // Opened up by hand, the generated keyring is closed again on the next start.
    chmodSync(path, 0o644);
    ensureDevKeyring(dataDir);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });
});

describe('deriveKey', () => {
  const master = Keyring.fromDocument(rotated, 'test').activeAt('customer', new Date());
  const base = ['ff1', 'customer', 'cardNumber', 'tp=7;du=3'] as const;

  it('is stable and 32 bytes by default', () => {
    const a = deriveKey(master, ...base);
    assert.equal(a.length, 32);
    assert.deepEqual(deriveKey(master, ...base), a);
    assert.equal(deriveKey(master, ...base, 16).length, 16);
    assert.deepEqual(deriveKey(master, ...base, 16), a.subarray(0, 16));
  });

  it('differs by purpose, manifest, field, scope and master version', () => {
    const seen = new Set<string>();
    const add = (k: Uint8Array): void => {
      const hex = Buffer.from(k).toString('hex');
      assert.ok(!seen.has(hex));
      seen.add(hex);
    };
    add(deriveKey(master, ...base));
    for (let i = 0; i < 4; i++) {
      const parts = [...base] as [string, string, string, string];
      parts[i] += 'x';
      add(deriveKey(master, ...parts));
    }
    // Unambiguous: moving a boundary between parts changes the key.
    add(deriveKey(master, 'ff1c', 'ustomer', 'cardNumber', 'tp=7;du=3'));
    const other = Keyring.fromDocument(rotated, 'test').get('customer', 1) as MasterKeyVersion;
    add(deriveKey(other, ...base));
  });

  it('matches RFC 5869 HKDF-SHA-256 with the documented salt and info, also past the 1024-byte info limit', () => {
    const info = Buffer.concat(
      base.map((p) => {
        const b = Buffer.from(p);
        const len = Buffer.alloc(4);
        len.writeUInt32BE(b.length);
        return Buffer.concat([len, b]);
      }),
    );
    const expected = new Uint8Array(hkdfSync('sha256', master.material, 'dpg/v1', info, 32));
    assert.deepEqual(deriveKey(master, ...base), expected);
    assert.deepEqual(hkdfSha256(master.material, Buffer.from('dpg/v1'), info, 32), expected);
    assert.deepEqual(hkdfSha256(master.material, Buffer.from('dpg/v1'), info, 100), new Uint8Array(hkdfSync('sha256', master.material, 'dpg/v1', info, 100)));
    const longField = 'f'.repeat(2000);
    const long = deriveKey(master, 'ff1', 'customer', longField, '');
    assert.equal(long.length, 32);
    assert.notDeepEqual(long, deriveKey(master, 'ff1', 'customer', longField + 'g', ''));
    assert.throws(() => deriveKey(master, ...base, 0));
  });
});
