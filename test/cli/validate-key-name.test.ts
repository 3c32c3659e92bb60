// `dpg validate` warns (exit 0) about a field matched by several names without a keyName.

import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

it('dpg validate warns about an implicit key identity, with file and line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-validate-keyname-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n  - match: [email, mail]\n    Mask: {}\n');
  writeFileSync(join(dir, 'gateway.yaml'), 'manifests: manifests\n');
  const r = spawnSync(process.execPath, ['bin/dpg.js', 'validate', '--config', join(dir, 'gateway.yaml')], {
    encoding: 'utf8',
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'silent' },
    timeout: 30_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /warning: .*m\.yaml:5: field email, mail: its keys derive from the first name \(email\); add keyName: email/);
});
