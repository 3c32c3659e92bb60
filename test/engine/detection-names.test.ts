// Review finding 2: personal data used as a field name (a JSON key that is an e-mail address or a card
// number) was never scanned and stayed in clear under every job type. With detection on, a name the
// content scanner detects removes its field, name and value: a failure (VALUE_NOT_PROTECTABLE at a
// location that withholds the name; in silent mode the field is gone and counted), or, where the
// kind's rule itself removes values (Restrict), a protection. docs/detection.md "Names".

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DpgError } from '../../src/core/errors.ts';
import type { DataSetType, JobType, RequestContext } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();
const REVIEW = '{"byEmail":{"jane.doe@example.com":{"name":"Jane Doe"}},"cards":{"4111111111111111":"primary"}}';
const SECRETS = ['jane.doe@example.com', '4111111111111111', 'DE89370400440532013000'];

function run(jobType: JobType, data: unknown, type: DataSetType = 'JSON', context: Partial<RequestContext> = {}) {
  return engine.protectDocument(job('customer', jobType, context, type), typeof data === 'string' ? data : structuredClone(data));
}

function refused(jobType: JobType, data: unknown, type: DataSetType = 'JSON'): DpgError {
  try {
    run(jobType, data, type);
  } catch (err) {
    assert.ok(err instanceof DpgError, String(err));
    return err;
  }
  assert.fail('expected VALUE_NOT_PROTECTABLE');
}

function assertNoSecret(text: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${secret} withheld`);
}

describe('JSON member names that are personal data (finding 2)', () => {
  for (const jobType of ['Mask', 'Anonymise', 'Pseudonymise', 'Encrypt'] as const) {
    it(`${jobType}: the review example is refused, the names withheld from the locations`, () => {
      const err = refused(jobType, REVIEW);
      assert.equal(err.code, 'VALUE_NOT_PROTECTABLE');
      assert.deepEqual(err.errors, [
        { location: '$.byEmail[?] (detected email)', reason: 'PERSONAL_DATA_IN_NAME' },
        { location: '$.cards[?] (detected card)', reason: 'PERSONAL_DATA_IN_NAME' },
      ]);
      assertNoSecret(JSON.stringify({ message: err.message, errors: err.errors }));
    });
  }

  it('silent mode: the members are removed and counted, every other byte kept', () => {
    const text = '{ "byEmail": { "jane.doe@example.com": {"name": "Jane Doe"}, "n": 1 },\n  "cards": {"4111111111111111": "primary"} }';
    const result = run('Mask', text, 'JSON', { silentMode: true });
    assert.equal(result.dataSet, '{ "byEmail": { "n": 1 },\n  "cards": {} }');
    assert.equal(result.summary.failed, 2);
  });

  it('the same for a value the caller parsed, and for names inside arrays and under matched keys', () => {
    const value = { list: [{ 'jane@example.com': 1, ok: 2 }], name: { '4111 1111 1111 1111': 'x', first: 'Jane' } };
    const result = run('Mask', value, 'JSON', { silentMode: true });
    assert.deepEqual(result.dataSet, { list: [{ ok: 2 }], name: { first: 'J***' } });
    assert.equal(result.summary.failed, 2);
  });

  it('a name that only looks plain (an IBAN is letters and digits) is withheld from the location too', () => {
    const err = refused('Mask', '{"accounts":{"DE89370400440532013000":{"owner":"x"}}}');
    assert.deepEqual(err.errors, [{ location: '$.accounts.? (detected iban)', reason: 'PERSONAL_DATA_IN_NAME' }]);
  });

  it('Restrict: a kind whose rule removes values (ssn) removes the member as a protection; kept kinds stay', () => {
    const result = run('Restrict', '{"byId":{"123-45-6789":{"a":1},"4111111111111111":"kept: customer keeps cards under Restrict"}}');
    assert.equal(result.dataSet, '{"byId":{"4111111111111111":"kept: customer keeps cards under Restrict"}}');
    assert.deepEqual([result.summary.protected, result.summary.failed], [1, 0]);
  });

  it('Reconstruct and Decrypt give clear data back: names are not checked there', () => {
    const text = '{"4111111111111111":"x"}';
    assert.equal(run('Reconstruct', text).dataSet, text);
    assert.equal(run('Decrypt', text).dataSet, text);
  });

  it('plain names and short names are untouched; no detection, no check', () => {
    const text = '{"ab":1,"orderId":"x","notes_2024":"y","1234":"z"}';
    assert.equal(run('Mask', text).dataSet, text);
    const dir = mkdtempSync(join(tmpdir(), 'dpg-names-'));
    try {
      writeFileSync(join(dir, 'plain.yaml'), 'name: plain\nfields:\n  - match: cardNumber\n    Mask: {}\n');
      const out = testEngine(dir).protectDocument(job('plain', 'Mask'), REVIEW).dataSet;
      assert.equal(out, REVIEW, 'a manifest without detect: scans nothing, names included');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a path selector that claims the member does not keep its name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-names-'));
    try {
      writeFileSync(join(dir, 'paths.yaml'), 'name: paths\ndetect: [card]\nfields:\n  - path: $.cards.*\n    kind: card\n    Mask: {}\n');
      const result = testEngine(dir).protectDocument(job('paths', 'Mask', { silentMode: true }), '{"cards":{"4111111111111111":"x","primary":"y"}}');
      assert.equal(result.dataSet, '{"cards":{"primary":"*"}}');
      assert.equal(result.summary.failed, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('names in the other data types', () => {
  it('XML: an element or attribute named like an IBAN goes, with its content', () => {
    const xml = '<c><DE89370400440532013000>x</DE89370400440532013000><d DE89370400440532013000="1">y</d></c>';
    const err = refused('Mask', xml, 'XML');
    assert.deepEqual(
      err.errors!.map((e) => e.location),
      ['/c/? (detected iban)', '/c/d/@? (detected iban)'],
    );
    const result = run('Mask', xml, 'XML', { silentMode: true });
    assert.equal(result.dataSet, '<c><d>y</d></c>');
  });

  it('LIST: a header that is a card number drops its column (header and cells)', () => {
    const err = refused('Mask', 'id,4111111111111111\n1,primary\n', 'LIST');
    assert.deepEqual(err.errors, [{ location: 'line 1, column ? (detected card)', reason: 'PERSONAL_DATA_IN_NAME' }]);
    assert.equal(run('Mask', 'id,4111111111111111,note\n1,primary,x\n', 'LIST', { silentMode: true }).dataSet, 'id,note\n1,x\n');
  });

  it('SQL: a quoted column named like a card is dropped from the statement', () => {
    const result = run('Mask', 'INSERT INTO t (id, `4111111111111111`) VALUES (1, \'x\');', 'SQL', { silentMode: true });
    assert.equal(result.dataSet, 'INSERT INTO t (id) VALUES (1);');
    assert.equal(result.summary.failed, 1);
  });

  it('gRPC rows: a label that is personal data leaves nothing of its column', () => {
    assert.throws(
      () => engine.protectRows(job('customer', 'Mask'), ['id', 'jane@example.com'], [['1', 'primary']], 'FILE'),
      (err: unknown) => err instanceof DpgError && err.errors![0].location === 'row 0, column ? (detected email)',
    );
    const rows = engine.protectRows(job('customer', 'Mask', { silentMode: true }), ['id', 'jane@example.com'], [['1', 'primary']], 'FILE');
    assert.deepEqual(rows.rows, [['1', '']]);
    const json = engine.protectRows(job('customer', 'Mask', { silentMode: true }), ['doc'], [['{"jane@example.com":"x","ok":1}']], 'JSON');
    assert.deepEqual(json.rows, [['{"ok":1}']]);
  });

  it('JSON documents carried in a string: their names are checked too', () => {
    const result = run('Mask', '{"payload":"{\\"jane@example.com\\":\\"x\\",\\"ok\\":1}"}', 'JSON', { silentMode: true });
    assert.equal(result.dataSet, '{"payload":"{\\"ok\\":1}"}');
    assert.equal(result.summary.failed, 1);
  });
});
