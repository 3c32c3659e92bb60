// Manifest syntax for detection by content (`detect:`, `kind:`) and the job-type gap check
// (`Keep`, `strict:`): every mistake reported with its line at load.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifestText } from '../../src/manifest/parse.ts';
import { compileManifest } from '../../src/manifest/compile.ts';

function parse(yaml: string) {
  return parseManifestText(yaml, 'm.yaml');
}
function problems(yaml: string): string[] {
  return parse(yaml).problems.map((p) => `${p.line ?? '-'}: ${p.message}`);
}

const CARD_FIELD = '  - match: cardNumber\n    kind: card\n    Mask: { keepLast: 4 }\n    Encrypt: {}\n';

describe('manifest detect: and kind:', () => {
  it('compiles detected kinds onto the fields that name them, one scanner per job type', () => {
    const { manifest, problems: p } = parse(
      `name: m\ndetect: [card, ipAddress]\nfields:\n${CARD_FIELD}  - kind: ipAddress\n    Mask: {}\n    Encrypt: Keep\n`,
    );
    assert.deepEqual(p, []);
    const plan = compileManifest(manifest!);
    assert.equal(plan.detection!.byKind.get('card'), plan.byName.get('cardnumber'));
    assert.equal(plan.detection!.byKind.get('ipAddress')!.id, 'kind:ipaddress');
    assert.deepEqual([...plan.detection!.scanners.get('Mask')!.kinds].sort(), ['card', 'ipAddress']);
    assert.deepEqual([...plan.detection!.scanners.get('Encrypt')!.kinds], ['card']);
    assert.equal(plan.detection!.scanners.has('Anonymise'), false);
    assert.equal(plan.detection!.inText, true);
    assert.ok(plan.explain().join('\n').includes('detect card, ipAddress'));
  });

  it('accepts the mapping form with inText: false', () => {
    const { manifest, problems: p } = parse(`name: m\ndetect: { kinds: [card], inText: false }\nfields:\n${CARD_FIELD}`);
    assert.deepEqual(p, []);
    assert.equal(compileManifest(manifest!).detection!.inText, false);
    assert.equal(compileManifest(manifest!).detection!.scanners.get('Mask')!.base64, false, 'base64 is off by default');
  });

  it('base64: true reads whole values that are base64 text', () => {
    const { manifest, problems: p } = parse(`name: m\ndetect: { kinds: [card], base64: true }\nfields:\n${CARD_FIELD}`);
    assert.deepEqual(p, []);
    const plan = compileManifest(manifest!);
    assert.equal(plan.detection!.scanners.get('Mask')!.base64, true);
    assert.ok(plan.explain().join('\n').includes('base64 text'));
  });

  it('phoneRegions: national phone writings of the listed regions are detected (issue 17)', () => {
    const PHONE_FIELD = '  - match: phone\n    kind: phone\n    Mask: { keepLast: 4 }\n    Encrypt: {}\n';
    const { manifest, problems: p } = parse(`name: m\ndetect: { kinds: [phone], phoneRegions: [de, FR] }\nfields:\n${PHONE_FIELD}`);
    assert.deepEqual(p, []);
    const plan = compileManifest(manifest!);
    assert.deepEqual(plan.detection!.phoneRegions, ['DE', 'FR']);
    const scan = (text: string) => plan.detection!.scanners.get('Mask')!.scan(text).map((s) => text.slice(s.start, s.end));
    // NANP numbers are always read (as before the option existed).
    assert.deepEqual(scan('Tel: 030 901820 or 06 12 34 56 78, US 415-555-0132'), ['030 901820', '06 12 34 56 78', '415-555-0132']);
    assert.ok(plan.explain().join('\n').includes('national phone writings of DE, FR'));
    // Without the option: the region-free rules of docs/detection.md.
    const { manifest: plain } = parse(`name: m\ndetect: [phone]\nfields:\n${PHONE_FIELD}`);
    assert.deepEqual(compileManifest(plain!).detection!.phoneRegions, []);
    assert.deepEqual(problems(`name: m\ndetect: { kinds: [phone], phoneRegions: [DE, XX, de] }\nfields:\n${PHONE_FIELD}`), [
      '2: unknown phone region (expected an ISO 3166 code such as DE, FR, GB)',
      '2: DE is listed twice',
    ]);
    assert.deepEqual(problems(`name: m\ndetect: { kinds: [phone], phoneRegions: DE }\nfields:\n${PHONE_FIELD}`), ['2: must be a list of region codes (ISO 3166, e.g. [DE, FR, GB])']);
  });

  it('reports unknown kinds, kinds without rules, rules for kinds not detected, duplicates', () => {
    assert.deepEqual(problems(`name: m\ndetect: [card, passport]\nfields:\n${CARD_FIELD}`), ['2: unknown kind (expected one of: card, email, phone, iban, ssn, ipAddress)']);
    assert.deepEqual(problems(`name: m\ndetect: [card, email]\nfields:\n${CARD_FIELD}`), [
      '2: detects email but no field has `kind: email` to say how it is protected',
    ]);
    assert.deepEqual(problems(`name: m\nfields:\n${CARD_FIELD}`), ['3: kind card is not listed under `detect`: add it there, or remove `kind`']);
    assert.deepEqual(problems(`name: m\ndetect: [card]\nfields:\n${CARD_FIELD}  - match: pan\n    kind: card\n    Mask: {}\n    Encrypt: {}\n`), [
      '8: kind card is given to two fields (first at line 4)',
    ]);
    assert.deepEqual(problems(`name: m\ndetect: [card, card]\nfields:\n${CARD_FIELD}`), ['2: card is listed twice']);
    assert.deepEqual(problems('name: m\ndetect: {}\nfields:\n  - match: a\n    Mask: {}\n'), ['2: needs `kinds`: the kinds to detect']);
  });

  it('a field needs match, path or kind', () => {
    assert.deepEqual(problems('name: m\nfields:\n  - Mask: {}\n'), ['3: needs `match` (field name), `path` (exact path) or `kind` (detected by content)']);
  });
});

describe('manifest gaps: Keep and strict', () => {
  const GAPPY = 'name: m\nfields:\n  - match: phone\n    Mask: { keepLast: 4 }\n  - match: card\n    Anonymise: { method: hash }\n    Mask: { keepLast: 4 }\n';

  it('warns, per field, about job types that leave in clear what another protects', () => {
    const { manifest, problems: p } = parse(GAPPY);
    assert.deepEqual(p, []);
    const warnings = manifest!.warnings!.map((w) => `${w.line}: ${w.message}`);
    assert.deepEqual(warnings, [
      '3: field phone is protected by Mask but left in clear by Anonymise: add a rule, or write `Keep` for a job type that leaves it in clear on purpose',
    ]);
    assert.deepEqual(compileManifest(manifest!).warnings, manifest!.warnings);
  });

  it('strict: true turns the warnings into load errors', () => {
    assert.equal(problems(`strict: true\n${GAPPY}`).length, 1);
    assert.equal(parse(`strict: true\n${GAPPY}`).manifest, undefined);
  });

  it('Keep says "in clear on purpose": no warning, no rule, and it does not define the job type', () => {
    const { manifest, problems: p } = parse(`strict: true\n${GAPPY.replace('Mask: { keepLast: 4 }\n  - match: card', 'Mask: { keepLast: 4 }\n    Anonymise: Keep\n  - match: card')}`);
    assert.deepEqual(p, []);
    assert.deepEqual(manifest!.warnings, []);
    const plan = compileManifest(manifest!);
    assert.equal(plan.byName.get('phone')!.rules.has('Anonymise'), false);
    const onlyKeep = parse('name: m\nfields:\n  - match: a\n    Mask: {}\n    Encrypt: Keep\n');
    assert.equal(compileManifest(onlyKeep.manifest!).jobTypes.has('Encrypt'), false);
  });

  it('a rule only under a `when` condition is a gap; Keep is refused inside `when`', () => {
    const yaml = 'name: m\nfields:\n  - match: ssn\n    Mask: {}\n    when:\n      - if: { crossBorder: true }\n        Anonymise: {}\n';
    assert.match(parse(yaml).manifest!.warnings![0].message, /left in clear by Anonymise \(only under a `when` condition\)/);
    assert.deepEqual(problems('name: m\nfields:\n  - match: ssn\n    Mask: {}\n    when:\n      - if: { crossBorder: true }\n        Mask: Keep\n'), [
      "7: `Keep` is for a field's own rules, not for `when` overrides",
      '6: names no job type to override',
    ]);
  });
});
