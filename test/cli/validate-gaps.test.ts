// `dpg validate` and manifest gaps: warnings printed with file:line (exit 0); `strict: true` makes
// them errors (exit 1).

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'dpg-validate-gaps-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function validate(manifest: string): { code: number | null; stdout: string; stderr: string } {
  const manifests = join(dir, `m${Math.random().toString(16).slice(2)}`);
  mkdirSync(manifests);
  writeFileSync(join(manifests, 'm.yaml'), manifest);
  const config = readFileSync('config/gateway.yaml', 'utf8').replace('manifests: manifests', `manifests: ${manifests}`);
  const configFile = `${manifests}.yaml`;
  writeFileSync(configFile, config);
  const r = spawnSync(process.execPath, ['bin/dpg.js', 'validate', '--config', configFile], {
    encoding: 'utf8',
    env: { ...process.env, DPG_DATA_DIR: join(dir, 'data'), DPG_LOG_LEVEL: 'silent' },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const GAPPY = 'name: m\nfields:\n  - match: phone\n    Mask: { keepLast: 4 }\n  - match: card\n    Mask: { keepLast: 4 }\n    Anonymise: { method: hash }\n';

describe('dpg validate: job-type gaps', () => {
  it('warns with file and line, and still succeeds', () => {
    const r = validate(GAPPY);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /warning: .*m\.yaml:3: field phone is protected by Mask but left in clear by Anonymise/);
  });

  it('strict: true refuses the manifest', () => {
    const r = validate(`strict: true\n${GAPPY}`);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /m\.yaml:4: field phone is protected by Mask but left in clear by Anonymise/);
  });

  it('Keep silences the gap', () => {
    const r = validate(`strict: true\n${GAPPY.replace('Mask: { keepLast: 4 }\n  - match: card', 'Mask: { keepLast: 4 }\n    Anonymise: Keep\n  - match: card')}`);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /warning/);
  });
});
