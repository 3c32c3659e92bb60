// docs/kubernetes.md stays true: its annotation table lists exactly the annotations the injector
// reads and writes, its links resolve, and its offline commands run as written from the repository root.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANNOTATIONS } from '../../src/k8s/settings.ts';
import { INJECT_LABEL, NOTES_ANNOTATION, STATUS_ANNOTATION } from '../../src/k8s/names.ts';

const ROOT = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8');
const haveKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('docs/kubernetes.md', () => {
  it('the annotation table lists exactly what the injector reads and writes, in order', () => {
    const section = DOC.slice(DOC.indexOf('## Annotations'), DOC.indexOf('## Capture modes'));
    const keys = [...section.matchAll(/^\| `(dpg\.io\/[a-z-]+)`/gm)].map((m) => m[1]);
    assert.deepEqual(keys, [INJECT_LABEL, ...ANNOTATIONS.map((a) => a.key), STATUS_ANNOTATION, NOTES_ANNOTATION]);
  });

  it('every relative link points at a file that exists', () => {
    for (const [, target] of DOC.matchAll(/\]\(((?:\.\.\/|\.\/)?[\w./-]+?)(?:#[\w-]+)?\)/g)) {
      if (/^https?:/.test(target)) continue;
      assert.ok(existsSync(join(ROOT, 'docs', target)), target);
    }
  });

  it('its offline commands run as written', { skip: haveKubectl ? false : 'kubectl is not installed: the kubectl kustomize lines are not run' }, () => {
    const blocks = [...DOC.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
    const commands = blocks
      .flatMap((b) => b.split('\n'))
      .map((l) => l.trim())
      .filter((l) => l.startsWith('npx dpg ') || l.startsWith('kubectl kustomize '));
    const inline = [...DOC.matchAll(/`(npx dpg webhook certs --out [^`]+)`/g)].map((m) => m[1]);
    assert.ok(commands.length >= 5);
    // The files the commands write under /tmp go to a directory of this run's own.
    const scratch = mkdtempSync(join(tmpdir(), 'dpg-docs-'));
    try {
      for (const command of [...commands, ...inline]) {
        const run = command.replaceAll('/tmp/', `${scratch}/`);
        const r = spawnSync('bash', ['-c', `set -euo pipefail; ${run} > /dev/null`], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
        assert.equal(r.status, 0, `${command}\n${r.stderr}`);
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
