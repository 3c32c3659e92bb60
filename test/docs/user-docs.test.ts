// What users read speaks for itself: no pointer to design notes or issue numbers they cannot see
// (DESIGN §4, "issue 12"): each such reference is written out as the statement it stood for.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

/**
 * Files other branches of this session rewrite (history tables of measurements, the overload
 * section): checked once those changes are merged — take a file off this list then.
 */

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name).slice(ROOT.length + 1));
}

describe('user docs', () => {
  it('never point at design notes or issue numbers', () => {
    const shipped = ['README.md', ...files('docs', /\.md$/), ...files('config', /\.ya?ml$/), ...files('deploy', /\.(md|ya?ml)$/), ...files('schema', /\.json$/)];
    assert.ok(shipped.length > 20, `${shipped.length} files`);
    const found: string[] = [];
    for (const file of shipped.filter((f) => !f.includes('/.dpg/'))) {
      readFileSync(join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
        if (/\bDESIGN\b|design card/.test(line) || /\bissues? \d+/i.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(found, []);
  });
});
