// Detection by content through the engine with the default `customer` manifest, in every data type:
// whole values in fields no selector claims, spans inside free text, the same technique per kind as
// the named field, exact reversal (Reconstruct, Decrypt), failures without values.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext, DataSetType } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';
import { buildCorpus } from '../detect/corpus.ts';

const engine = testEngine();
const NOTES = 'card 4111 1111 1111 1111, call 415-555-0132';
const MASKED = 'card **** **** **** 1111, call ***-***-0132';

function doc(jobType: JobType, data: unknown, type: DataSetType = 'JSON', context: Partial<RequestContext> = {}): unknown {
  return engine.protectDocument(job('customer', jobType, context, type), typeof data === 'string' ? data : structuredClone(data)).dataSet;
}

function assertHidden(text: string): void {
  assert.ok(!text.includes('4111 1111 1111 1111'), 'card hidden');
  assert.ok(!text.includes('415-555-0132'), 'phone hidden');
}

describe('detection: JSON', () => {
  it('unclaimed keys at any depth, arrays, the root itself', () => {
    const out = doc('Mask', { a: { b: [{ notes: NOTES }, NOTES] }, cc: 5500000000000004, orderId: 4111111111111112 }) as Record<string, any>;
    assert.equal(out.a.b[0].notes, MASKED);
    assert.equal(out.a.b[1], MASKED);
    assert.equal(out.cc, '************0004', 'a JSON number that is a card');
    assert.equal(out.orderId, 4111111111111112, 'a number failing Luhn stays a number');
    assert.deepEqual(doc('Mask', [NOTES, 7, null, true]), [MASKED, 7, null, true]);
    assert.equal(doc('Mask', JSON.stringify(NOTES)), JSON.stringify(MASKED));
  });

  it("a matched ancestor's rule wins over detection beneath it; a claimed field is not scanned", () => {
    const out = doc('Mask', { name: { first: 'Jane', note: 'x 4111 1111 1111 1111' }, dateOfBirth: 'call 415-555-0132' }) as Record<string, any>;
    assert.equal(out.name.first, 'J***', 'name rule (initials), not detection');
    assert.equal(out.name.note, 'x 4*** 1*** 1*** 1***', 'the name rule (initials), not detection');
    assert.equal(out.dateOfBirth, 'call 415-555-0132', 'dateOfBirth is claimed (Mask: Keep): left as it is');
  });

  it('same technique and keys per kind as the named field: a detected card pseudonymises like cardNumber', () => {
    const named = doc('Pseudonymise', { cardNumber: '4111 1111 1111 1111' }) as Record<string, string>;
    const detected = doc('Pseudonymise', { cc: '4111 1111 1111 1111' }) as Record<string, string>;
    assert.equal(detected.cc.length, 19);
    assert.match(detected.cc, /^\d{4} \d{4} \d{4} 1111$/);
    // Detected pseudonyms are walked until they are detected as cards again, so they may differ.
    const back = doc('Reconstruct', { cc: detected.cc, cardNumber: named.cardNumber });
    assert.deepEqual(back, { cc: '4111 1111 1111 1111', cardNumber: '4111 1111 1111 1111' });
  });
});

describe('detection: XML, SQL, LIST, gRPC rows', () => {
  it('XML: element text, attributes, CDATA; markup untouched', () => {
    const xml = `<c id="7"><notes>${NOTES}</notes><memo ref="tel 415-555-0132"><![CDATA[${NOTES}]]></memo><name>Jane Doe</name></c>`;
    assert.equal(
      doc('Mask', xml, 'XML'),
      `<c id="7"><notes>${MASKED}</notes><memo ref="tel ***-***-0132"><![CDATA[${MASKED}]]></memo><name>J*** D**</name></c>`,
    );
    const p = doc('Pseudonymise', xml, 'XML') as string;
    assertHidden(p);
    assert.equal(doc('Reconstruct', p, 'XML'), xml);
  });

  it('SQL: values of unprotected columns, literals bound to no column, WHERE; comments and names untouched', () => {
    const sql =
      `INSERT INTO t (id, notes) VALUES (1, '${NOTES}'); -- card 4111 1111 1111 1111\n` +
      `UPDATE t SET memo = CONCAT('call ', '415-555-0132') WHERE notes LIKE '%4111 1111 1111 1111%';`;
    assert.equal(
      doc('Mask', sql, 'SQL'),
      `INSERT INTO t (id, notes) VALUES (1, '${MASKED}'); -- card 4111 1111 1111 1111\n` +
        `UPDATE t SET memo = CONCAT('call ', '***-***-0132') WHERE notes LIKE '%**** **** **** 1111%';`,
    );
    const e = doc('Encrypt', sql, 'SQL') as string;
    assert.ok(!e.includes("'415-555-0132'") && e.includes('enc:v1:'));
    assert.equal(doc('Decrypt', e, 'SQL'), sql);
  });

  it('LIST: an unclaimed column, Restrict removing a detected ssn inside text', () => {
    const csv = `id,notes\n1,"${NOTES}"\n2,ssn 123-45-6789 on file\n`;
    assert.equal(doc('Mask', csv, 'LIST'), `id,notes\n1,"${MASKED}"\n2,ssn ***-**-6789 on file\n`);
    assert.equal(doc('Restrict', csv, 'LIST'), `id,notes\n1,"${NOTES}"\n2,ssn  on file\n`);
  });

  it('gRPC rows: FILE cells under an unclaimed label, JSON cells', () => {
    const r = engine.protectRows(job('customer', 'Mask', {}, 'LIST'), ['notes', 'doc'], [[NOTES, `{"memo":"${NOTES}"}`]], 'FILE');
    assert.equal(r.rows[0][0], MASKED);
    assert.equal(r.rows[0][1], `{"memo":"${MASKED}"}`, 'a FILE cell is one text, scanned as such');
    const j = engine.protectRows(job('customer', 'Mask', {}, 'JSON'), ['doc'], [[`{"memo":"${NOTES}","cardNumber":"4111111111111111"}`]], 'JSON');
    assert.deepEqual(JSON.parse(j.rows[0][0]), { memo: MASKED, cardNumber: '************1111' });
  });

  it('/file/protect CSV output of JSON is detected too', async () => {
    const { output, summary } = engine.protectToCsv(job('customer', 'Mask', {}, 'JSON'), Readable.from([Buffer.from(JSON.stringify([{ notes: NOTES }]))]));
    let csv = '';
    for await (const chunk of output) csv += chunk;
    assert.equal(csv.trim(), `notes\r\n"${MASKED}"`);
    assert.equal((await summary).protected, 2);
  });
});

describe('detection: reversal and failures', () => {
  const records = buildCorpus(7, 300);
  /** Written in a form the detectors take (the corpus keeps a share of out-of-scope writings). */
  const detectable = (value: string, kind: string) => engine.manifest('customer')!.detection!.scanners.get('Mask')!.wholeKind(value) === kind;

  it('Pseudonymise -> Reconstruct and Encrypt -> Decrypt give back every corpus text exactly', () => {
    for (const [forward, reverse] of [['Pseudonymise', 'Reconstruct'], ['Encrypt', 'Decrypt']] as const) {
      const input = records.map((r) => ({ notes: r.text }));
      const out = doc(forward, input) as { notes: string }[];
      const back = doc(reverse, out) as { notes: string }[];
      for (let i = 0; i < records.length; i++) {
        assert.equal(back[i].notes, records[i].text, `${forward} record ${i}`);
        for (const span of records[i].spans) {
          const value = records[i].text.slice(span.start, span.end);
          if (detectable(value, span.kind) && value.length >= 8) assert.ok(!out[i].notes.includes(value), `${forward} hides ${span.kind}`);
        }
      }
    }
  });

  it('whole values of every kind: the pseudonym is detected as the same kind, and Reconstruct restores it', () => {
    const mask = engine.manifest('customer')!.detection!.scanners.get('Mask')!;
    let checked = 0;
    for (const record of records) {
      for (const span of record.spans) {
        const value = record.text.slice(span.start, span.end);
        if (!detectable(value, span.kind)) continue;
        const p = doc('Pseudonymise', { v: value }) as { v: string };
        checked++;
        assert.notEqual(p.v, value);
        assert.equal(mask.wholeKind(p.v), span.kind, `${span.kind} pseudonym stays a ${span.kind}`);
        assert.deepEqual(doc('Reconstruct', p), { v: value });
      }
    }
    assert.ok(checked > 500, `${checked} values`);
  });

  it('Mask leaves no detected value in clear', () => {
    const out = doc('Mask', records.map((r) => ({ notes: r.text }))) as { notes: string }[];
    for (let i = 0; i < records.length; i++) {
      for (const span of records[i].spans) {
        const value = records[i].text.slice(span.start, span.end);
        if (detectable(value, span.kind)) assert.ok(!out[i].notes.includes(value), `record ${i} ${span.kind}`);
      }
    }
  });

  it('a span that fails fails the request with a location and no value; silent mode replaces the whole value', () => {
    const tampered = { notes: 'key enc:v1:gcm:default:2:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA ok' };
    assert.throws(
      () => doc('Decrypt', tampered),
      (err: unknown) =>
        err instanceof DpgError &&
        err.code === 'VALUE_NOT_PROTECTABLE' &&
        JSON.stringify(err.errors) === JSON.stringify([{ location: '$.notes (detected token)', reason: 'INVALID_CIPHERTEXT' }]) &&
        !err.message.includes('AAAA'),
    );
    assert.deepEqual(doc('Decrypt', tampered, 'JSON', { silentMode: true, useRestrictedText: true, restrictedText: '[x]' }), { notes: '[x]' });
    // A key that is not a plain name is withheld from the location; the detected kind stays.
    assert.throws(
      () => doc('Decrypt', { 'jane.doe@example.com': tampered.notes }),
      (err: unknown) => err instanceof DpgError && JSON.stringify(err.errors) === JSON.stringify([{ location: '$[?] (detected token)', reason: 'INVALID_CIPHERTEXT' }]),
    );
  });

  it('a kind whose rule removes the field (ssn across borders) removes a whole value and cuts a span', () => {
    const out = doc('Pseudonymise', { other: '123-45-6789', notes: 'ssn 123-45-6789 on file' }, 'JSON', { countryCode: 'US', dataOwningCountryCode: 'DE' });
    assert.deepEqual(out, { notes: 'ssn  on file' });
    const same = doc('Pseudonymise', { other: '123-45-6789' }, 'JSON', { countryCode: 'DE', dataOwningCountryCode: 'DE' }) as Record<string, string>;
    assert.match(same.other, /^\d{3}-\d{2}-\d{4}$/);
    assert.notEqual(same.other, '123-45-6789');
  });

  it('detection counts in the summary; a manifest without detect: leaves unclaimed fields alone', () => {
    const r = engine.protectDocument(job('customer', 'Mask'), { notes: NOTES });
    assert.equal(r.summary.protected, 2);
    const plain = engine.protectDocument(job('card-masking', 'Mask'), { notes: NOTES });
    assert.deepEqual(plain.dataSet, { notes: NOTES });
  });
});
