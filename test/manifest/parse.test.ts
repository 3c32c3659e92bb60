// Manifest validation: every problem reported with file and line; compiled plans are immutable.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseManifestText } from '../../src/manifest/parse.ts';
import { compileManifest } from '../../src/manifest/compile.ts';
import { loadManifestDir } from '../../src/manifest/load.ts';
import { normalizeName, compilePathPattern } from '../../src/manifest/selectors.ts';

function problems(yaml: string): string[] {
  return parseManifestText(yaml, 'm.yaml').problems.map((p) => `${p.line}: ${p.path ?? ''}: ${p.message}`);
}

describe('manifest parsing', () => {
  it('accepts a valid manifest and compiles it once into a frozen plan', () => {
    const { manifest, problems: p } = parseManifestText(
      'name: ok\nfields:\n  - match: [card_number, pan]\n    Mask: { keepLast: 4 }\n    Pseudonymise: { format: card }\n',
      'm.yaml',
    );
    assert.deepEqual(p, []);
    const plan = compileManifest(manifest!);
    assert.ok(Object.isFrozen(plan));
    assert.deepEqual([...plan.jobTypes].sort(), ['Mask', 'Pseudonymise', 'Reconstruct']);
    assert.ok(plan.byName.has('cardnumber') && plan.byName.has('pan'));
    assert.ok(plan.explain().join('\n').includes('Mask'));
  });

  it('reports each problem with its line', () => {
    const p = problems(
      [
        'name: bad name!',
        'colour: blue',
        'fields:',
        '  - match: a',
        '    Mask: { keepLast: -1 }',
        '  - path: $.x',
        '    match: y',
        '    Mask: {}',
        '  - match: b',
        '    Pseudonymise: { format: nope }',
        '  - match: c',
        '    Reconstruct: {}',
        '  - match: d',
        '    Anonymise: Mask',
        '  - match: e',
        '    Mask: {}',
        '    when:',
        '      - if: { countryCode: USA }',
        '        Mask: Restrict',
        '  - match: A',
        '    Restrict: {}',
      ].join('\n'),
    );
    const has = (line: number, re: RegExp) => assert.ok(p.some((x) => x.startsWith(`${line}:`) && re.test(x)), `line ${line} ${re}\n${p.join('\n')}`);
    has(1, /name: must be/);
    has(2, /colour: unknown key/);
    has(5, /keepLast/);
    has(6, /either `match` or `path`/);
    has(10, /nope|format/);
    has(12, /Reconstruct/);
    has(14, /Restrict/);
    has(18, /ISO 3166-1/);
    has(20, /selected twice/);
  });

  it('an empty or non-mapping manifest is a problem, not a crash', () => {
    assert.ok(problems('').length > 0);
    assert.ok(problems('- a\n- b\n').length > 0);
    assert.ok(problems('name: x\nfields: []\n').some((x) => /at least one field/.test(x)));
    assert.ok(problems('name: [unclosed\n').some((x) => /YAML syntax/.test(x)));
  });

  it('loads a directory all-or-nothing and refuses duplicate names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-manifests-'));
    writeFileSync(join(dir, 'a.yaml'), 'name: same\nfields:\n  - match: a\n    Mask: {}\n');
    writeFileSync(join(dir, 'b.yaml'), 'name: same\nfields:\n  - match: a\n    Mask: {}\n');
    const load = loadManifestDir(dir);
    assert.ok(load.problems.some((p) => /already used/.test(p.message)));
    assert.ok(loadManifestDir(join(dir, 'missing')).problems[0]!.message.includes('not found'));
  });

  it('normalises names and compiles path patterns', () => {
    assert.equal(normalizeName('Card_Number'), 'cardnumber');
    assert.equal(normalizeName('CARD-NUMBER'), 'cardnumber');
    assert.ok(compilePathPattern('$.items[*].email').test('$.items[12].email'));
    assert.ok(!compilePathPattern('$.items[*].email').test('$.items[1].x.email'));
    assert.ok(compilePathPattern('/Envelope/**/card').test('/Envelope/Body/p/card'));
  });
});
