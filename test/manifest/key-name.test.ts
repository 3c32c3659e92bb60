// A field's key identity: `keyName` pins it; without it the first name of `match` decides, as
// before (so existing pseudonyms stay), and `dpg validate` warns when that list has several names.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseManifestText } from '../../src/manifest/parse.ts';
import { compileManifest } from '../../src/manifest/compile.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { job, testKeyring } from '../helpers/engine.ts';

const compiled = (yaml: string) => {
  const { manifest, problems } = parseManifestText(yaml, 'm.yaml');
  assert.deepEqual(problems, []);
  return compileManifest(manifest!);
};

/** The pseudonym of one email under a manifest `m` with the given field entry. */
function pseudonymUnder(field: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dpg-keyname-'));
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(join(dir, 'manifests', 'm.yaml'), `name: m\nfields:\n  - ${field}\n    Pseudonymise: { format: email }\n`);
  const engine = createEngine({ manifestsDir: join(dir, 'manifests'), keyring: testKeyring() });
  const out = engine.protectDocument(job('m', 'Pseudonymise'), { email: 'jane.doe@example.com' }).dataSet as { email: string };
  return out.email;
}

describe('keyName', () => {
  it('defaults to the first name of match (the derivation used before keyName)', () => {
    assert.equal(compiled('name: m\nfields:\n  - match: [E-Mail, mail]\n    Mask: {}\n').fields[0].id, 'name:email');
    assert.equal(compiled('name: m\nfields:\n  - path: $.a.b\n    Mask: {}\n').fields[0].id, 'path:$.a.b');
  });

  it('an explicit keyName is the key identity, compared like field names', () => {
    const plan = compiled('name: m\nfields:\n  - match: [mail, email]\n    keyName: E_Mail\n    Mask: {}\n  - path: $.contact.mail\n    keyName: email\n    Mask: {}\n');
    assert.equal(plan.fields[0].id, 'name:email');
    assert.equal(plan.fields[1].id, 'name:email', 'a path field can share the keys of a name field on purpose');
    assert.match(plan.explain().join('\n'), /match mail, email \(keyName E_Mail\)/);
  });

  it('reordering the names keeps the pseudonyms only when keyName pins them', () => {
    const before = pseudonymUnder('match: [email, mail]');
    assert.equal(pseudonymUnder('match: [mail, email]\n    keyName: email'), before);
    assert.notEqual(pseudonymUnder('match: [mail, email]'), before, 'without keyName the first name decides');
  });

  it('warns about an implicit key identity when match lists several names', () => {
    const warned = compiled('name: m\nfields:\n  - match: [email, mail]\n    Mask: {}\n  - match: phone\n    Mask: {}\n  - match: [ssn, taxId]\n    keyName: ssn\n    Mask: {}\n');
    assert.equal(warned.warnings.length, 1);
    assert.equal(warned.warnings[0].line, 3);
    assert.match(warned.warnings[0].message, /field email, mail: its keys derive from the first name \(email\); add keyName: email/);
  });

  it('refuses a keyName that is not a name', () => {
    for (const bad of ['""', '[a, b]', '"-x"', '"a b"']) {
      const { problems } = parseManifestText(`name: m\nfields:\n  - match: a\n    keyName: ${bad}\n    Mask: {}\n`, 'm.yaml');
      assert.equal(problems.length, 1, bad);
      assert.equal(problems[0].line, 4);
    }
  });
});
