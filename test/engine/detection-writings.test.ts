// Review finding 12b: writings the detectors left in clear — cards with narrow no-break, thin or
// no-break spaces or en/em dashes between groups, an IBAN with no-break spaces, `-4111111111111111`
// as a JSON number, `12-4111111111111111` in text — and named fields inside a JSON document carried as
// a string (`{"payload":"{\"name\":…}"}`). All are protected now, through the engine, in place.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();
const json = (jobType: JobType, text: string, context: Partial<RequestContext> = {}): string =>
  engine.protectDocument(job('customer', jobType, context), text).dataSet as string;

describe('typographic separators and dashes (12b)', () => {
  const WRITINGS: [string, string][] = [
    ['4111\u202F1111\u202F1111\u202F1111', '****\u202F****\u202F****\u202F1111'],
    ['4111\u20091111\u20091111\u20091111', '****\u2009****\u2009****\u20091111'],
    ['4111\u00A01111\u00A01111\u00A01111', '****\u00A0****\u00A0****\u00A01111'],
    ['4111\u20131111\u20131111\u20131111', '****\u2013****\u2013****\u20131111'],
    ['4111\u20141111\u20141111\u20141111', '****\u2014****\u2014****\u20141111'],
    ['12-4111111111111111', '12-************1111'],
  ];
  for (const [written, masked] of WRITINGS) {
    it(`${JSON.stringify(written)} in free text: masked, pseudonymised and reversed exactly`, () => {
      const doc = JSON.stringify({ notes: `card ${written} ok` });
      assert.equal(JSON.parse(json('Mask', doc)).notes, `card ${masked} ok`);
      const p = json('Pseudonymise', doc);
      assert.ok(!p.includes('4111'), p);
      assert.equal(json('Reconstruct', p), doc);
    });
  }

  it('an IBAN with no-break spaces: masked, pseudonymised (valid again) and reversed', () => {
    const iban = 'DE89\u00A03704\u00A00044\u00A00532\u00A00130\u00A000';
    const doc = JSON.stringify({ notes: `IBAN ${iban}.` });
    assert.ok(!json('Mask', doc).includes('3704'));
    assert.equal(JSON.parse(json('Anonymise', doc)).notes, 'IBAN REDACTED.');
    const p = json('Pseudonymise', doc);
    assert.match(JSON.parse(p).notes, /^IBAN DE\d\d\u00A0[0-9A-Z]{4}\u00A0/);
    assert.ok(!p.includes('3704\u00A00044'));
    assert.equal(json('Reconstruct', p), doc);
  });
});

describe('a minus sign in front of a JSON number does not hide a card (12b)', () => {
  it('Mask, Anonymise, Encrypt/Decrypt', () => {
    assert.equal(json('Mask', '{"cc":-4111111111111111}'), '{"cc":"-************1111"}');
    assert.match(JSON.parse(json('Anonymise', '{"cc":-4111111111111111}')).cc, /^[0-9a-f]{64}$/);
    const e = json('Encrypt', '{"cc":-4111111111111111}');
    assert.ok(e.includes('enc:v1:'));
    assert.equal(json('Decrypt', e), '{"cc":-4111111111111111}');
  });

  it('Pseudonymise: a negative number keeps its sign and becomes another card; Reconstruct is exact', () => {
    for (const doc of ['{"cc":-4111111111111111}', '{"cc":-378282246310005}']) {
      const p = json('Pseudonymise', doc);
      const cc = JSON.parse(p).cc as number;
      assert.ok(cc < 0 && String(cc).length === doc.length - 7 && String(cc)[1] === doc[7], p);
      assert.notEqual(p, doc);
      assert.equal(json('Reconstruct', p), doc);
    }
  });

  it('small negative numbers and non-cards stay numbers, untouched', () => {
    const doc = '{"a":-1,"b":-4111111111111112,"c":-123456789012}';
    assert.equal(json('Mask', doc), doc);
  });
});

describe('JSON documents carried as strings (12b)', () => {
  it('the review example: named fields inside the string get their rules; the string stays a string', () => {
    const doc = '{"payload":"{\\"name\\":\\"Jane Doe\\",\\"email\\":\\"jane@example.com\\",\\"id\\":7}"}';
    assert.equal(json('Mask', doc), '{"payload":"{\\"name\\":\\"J*** D**\\",\\"email\\":\\"j***@example.com\\",\\"id\\":7}"}');
    assert.equal(JSON.parse(JSON.parse(json('Anonymise', doc)).payload).name, 'REDACTED');
  });

  it('every byte not protected is kept: spacing, escapes written as \\u or \\/, other members', () => {
    const doc = '{ "payload" : "{ \\"cardNumber\\" : \\"4111 1111 1111 1111\\", \\"city\\": \\"Z\\u00fcrich\\/CH\\" }", "n": 1 }';
    assert.equal(json('Mask', doc), '{ "payload" : "{ \\"cardNumber\\" : \\"**** **** **** 1111\\", \\"city\\": \\"Z\\u00fcrich\\/CH\\" }", "n": 1 }');
  });

  it('Pseudonymise then Reconstruct give the document back exactly; Restrict removes inside', () => {
    const doc = '{"payload":"{\\"name\\":\\"Jane Doe\\",\\"notes\\":\\"call 415-555-0132\\",\\"ssn\\":\\"123-45-6789\\"}"}';
    const p = json('Pseudonymise', doc);
    assert.ok(!p.includes('Jane') && !p.includes('415-555-0132') && !p.includes('123-45-6789'), p);
    assert.equal(json('Reconstruct', p), doc);
    assert.equal(json('Restrict', doc), '{"payload":"{\\"name\\":\\"Jane Doe\\",\\"notes\\":\\"call 415-555-0132\\"}"}');
  });

  it('numbers, arrays and documents inside documents; failures located below the string', () => {
    assert.equal(json('Mask', '{"p":"{\\"cc\\":4111111111111111}"}'), '{"p":"{\\"cc\\":\\"************1111\\"}"}');
    assert.equal(json('Mask', '["[\\"4111111111111111\\"]"]'), '["[\\"************1111\\"]"]');
    const deep = JSON.stringify({ a: JSON.stringify({ b: JSON.stringify({ email: 'jane@example.com' }) }) });
    assert.equal(JSON.parse(JSON.parse(JSON.parse(json('Mask', deep)).a).b).email, 'j***@example.com');
    assert.throws(
      () => json('Pseudonymise', '{"p":"{\\"cardNumber\\":\\"12\\"}"}', { preserveStringLength: true }),
      (err: unknown) => err instanceof DpgError && err.errors![0].location === '$.p.cardNumber',
    );
  });

  it('a string that only looks like a document is scanned as text; one too deep is too', () => {
    assert.equal(json('Mask', '{"n":"[call 415-555-0132]"}'), '{"n":"[call ***-***-0132]"}');
    const tooDeep = '['.repeat(300) + '"4111111111111111"' + ']'.repeat(300);
    const out = JSON.parse(json('Mask', JSON.stringify({ n: tooDeep }))).n as string;
    assert.ok(!out.includes('4111111111111111') && out.startsWith('[[['), 'found by the text scan');
  });

  it('a value the caller parsed (the DocumentCodec contract) gets the same', () => {
    const out = engine.protectDocument(job('customer', 'Mask'), { payload: '{"name":"Jane Doe"}' }).dataSet as { payload: string };
    assert.equal(out.payload, '{"name":"J*** D**"}');
  });

  it('only where detection is on: a claimed field keeps its own rule, a manifest without detect parses nothing', () => {
    assert.equal(JSON.parse(json('Mask', '{"name":"{\\"email\\":\\"jane@example.com\\"}"}')).name.includes('jane@example.com'), false);
    const dir = mkdtempSync(join(tmpdir(), 'dpg-embedded-'));
    try {
      writeFileSync(join(dir, 'plain.yaml'), 'name: plain\nfields:\n  - match: name\n    Mask: {}\n');
      const doc = '{"payload":"{\\"name\\":\\"Jane\\"}"}';
      assert.equal(testEngine(dir).protectDocument(job('plain', 'Mask'), doc).dataSet, doc);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
