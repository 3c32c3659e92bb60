// Review finding 3: field names that are the protected name only after Unicode case folding (`ſalary`,
// `dateOfBırth`, the Kelvin sign, fullwidth letters) must get that field's rule, because upstream
// readers fold them: Go's encoding/json, Java's equalsIgnoreCase, Python's casefold(). Before the
// fix `{"dateOfBırth":"1985-04-12","ſalary":52000}` came back unchanged under Anonymise.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalizeName } from '../../src/manifest/selectors.ts';
import { parseManifestText } from '../../src/manifest/parse.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();

describe('normalizeName: full case folding', () => {
  const cases: [string, string][] = [
    ['ſalary', 'salary'], // U+017F LATIN SMALL LETTER LONG S (Go, Java, Python: s)
    ['dateOfBırth', 'dateofbirth'], // U+0131 dotless i
    ['DATEOFBİRTH', 'dateofbirth'], // U+0130 capital I with dot (Java: i)
    ['\u212Aey', 'key'], // KELVIN SIGN (Go: k)
    ['ｓａｌａｒｙ', 'salary'], // fullwidth letters (NFKC)
    ['ＣＡＲＤ＿ＮＵＭＢＥＲ', 'cardnumber'], // fullwidth, and the fullwidth low line
    ['card\u200BNumber', 'cardnumber'], // a zero-width space no reader shows
    ['ca\u00ADrd', 'card'], // soft hyphen
    ['straße', 'strasse'], // full folding: ß is ss
    ['ﬁrstName', 'firstname'], // ligature
    ['card_number', 'cardnumber'],
    ['CARD-NUMBER', 'cardnumber'],
    ['données', 'données'], // other letters stay themselves
  ];
  for (const [name, folded] of cases) {
    it(`${JSON.stringify(name)} → ${folded}`, () => assert.equal(normalizeName(name), folded));
  }

  it('ASCII names take the fast path and are unchanged by it', () => {
    for (const name of ['cardNumber', 'EMAIL', 'date_of_birth', 'x-y-z', 'a1', '']) {
      assert.equal(normalizeName(name), name.toLowerCase().replace(/[_-]/g, ''));
    }
  });

  it('a manifest cannot name one field twice by folding', () => {
    const { problems } = parseManifestText('name: m\nfields:\n  - match: salary\n    Mask: {}\n  - match: ſalary\n    Mask: {}\n', 'm.yaml');
    assert.ok(problems.some((p) => /salary|twice|more than once|duplicate/i.test(p.message)), JSON.stringify(problems));
  });
});

describe('folded names get their field rule in every data type', () => {
  const anonymise = (type: 'JSON' | 'XML' | 'SQL' | 'LIST', data: string) => engine.protectDocument(job('customer', 'Anonymise', {}, type), data).dataSet as string;

  it('JSON: the review example is anonymised (it came back unchanged before)', () => {
    const out = JSON.parse(anonymise('JSON', '{"dateOfBırth":"1985-04-12","ſalary":52000}'));
    assert.deepEqual(out, { dateOfBırth: '1985', ſalary: '50000-59999' });
  });

  it('JSON: fullwidth, dotted capital I, zero-width space', () => {
    const out = JSON.parse(anonymise('JSON', '{"ＳＳＮ":"123-45-6789","EMAİL":"jane@example.com","card\u200BNumber":"4111 1111 1111 1111"}'));
    assert.equal(out['ＳＳＮ'], 'REDACTED');
    assert.match(out['EMAİL'], /^[0-9a-f]{64}$/, 'hashed like email');
    assert.match(out['card\u200BNumber'], /^[0-9a-f]{64}$/, 'hashed like cardNumber');
  });

  it('XML elements and attributes, SQL columns, LIST headers, gRPC labels', () => {
    assert.equal(anonymise('XML', '<c ſalary="52000"><dateOfBırth>1985-04-12</dateOfBırth></c>'), '<c ſalary="50000-59999"><dateOfBırth>1985</dateOfBırth></c>');
    assert.equal(anonymise('SQL', "INSERT INTO t (id, ſalary) VALUES (1, 52000);"), "INSERT INTO t (id, ſalary) VALUES (1, '50000-59999');");
    assert.equal(anonymise('LIST', 'id,ſalary\n1,52000\n'), 'id,ſalary\n1,50000-59999\n');
    const rows = engine.protectRows(job('customer', 'Anonymise'), ['id', 'dateOfBırth'], [['1', '1985-04-12']], 'FILE');
    assert.deepEqual(rows.rows, [['1', '1985']]);
  });

  it('the Kelvin sign matches a k (a manifest field with one)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-fold-'));
    try {
      writeFileSync(join(dir, 'bank.yaml'), 'name: bank\nfields:\n  - match: bankAccount\n    Mask: {}\n');
      const out = testEngine(dir).protectDocument(job('bank', 'Mask'), '{"ban\u212AAccount":"12345678"}').dataSet as string;
      assert.equal(JSON.parse(out)['ban\u212AAccount'], '********');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
