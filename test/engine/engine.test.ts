// Engine behaviour beyond the default table: request options, scopes, key versions, bad input.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DpgError } from '../../src/core/errors.ts';
import type { JobType, RequestContext } from '../../src/core/types.ts';
import { testEngine, job } from '../helpers/engine.ts';

const engine = testEngine();

function protect(jobType: JobType, data: unknown, context: Partial<RequestContext> = {}, manifest = 'customer'): Record<string, unknown> {
  return engine.protectDocument(job(manifest, jobType, context), structuredClone(data)).dataSet as Record<string, unknown>;
}

function rejects(fn: () => unknown, code: string, check?: (e: DpgError) => void): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof DpgError, `expected DpgError, got ${String(err)}`);
    assert.equal(err.code, code);
    check?.(err);
    return true;
  });
}

describe('engine', () => {
  it('unknown manifest → MANIFEST_NOT_FOUND', () => {
    rejects(() => protect('Mask', { a: 1 }, {}, 'nope'), 'MANIFEST_NOT_FOUND');
  });

  it('protect_null_values: off passes null and empty through, on protects them', () => {
    const data = { cardNumber: null, email: '', ssn: null };
    assert.deepEqual(protect('Mask', data), data);
    assert.deepEqual(protect('Restrict', { ssn: null, salary: '' }), { ssn: null, salary: '' });
    assert.deepEqual(protect('Restrict', { ssn: null, salary: '' }, { protectNullValues: true }), {});
    const anon = protect('Anonymise', { name: null }, { protectNullValues: true });
    assert.equal(anon.name, 'REDACTED');
  });

  it('a value FF1 cannot take fails the request without output, listing only its location', () => {
    // preserveStringLength keeps the strict refusal of short values (the short-value scheme may change a length).
    rejects(
      () => protect('Pseudonymise', { customers: [{ ssn: '12' }, { ssn: '123-45-6789' }] }, { preserveStringLength: true }),
      'VALUE_NOT_PROTECTABLE',
      (e) => {
        assert.equal(e.errors?.length, 1);
        assert.equal(e.errors?.[0]?.location, '$.customers[0].ssn');
        assert.ok(!JSON.stringify(e.errors).includes('"12"'));
      },
    );
  });

  it('silent mode replaces failing values with the restricted text and counts them', () => {
    const res = engine.protectDocument(
      job('customer', 'Pseudonymise', { silentMode: true, useRestrictedText: true, restrictedText: '[withheld]' }),
      { iban: 'DE00 1234 5678', name: 'Jane Doe' },
    );
    const out = res.dataSet as Record<string, unknown>;
    assert.equal(out.iban, '[withheld]');
    assert.notEqual(out.name, 'Jane Doe');
    assert.equal(res.summary.failed, 1);
    assert.equal(res.summary.protected, 1);
  });

  it('tampered ciphertext on Decrypt → VALUE_NOT_PROTECTABLE, nothing echoed', () => {
    const enc = protect('Encrypt', { email: 'jane@example.com' });
    const token = String(enc.email);
    const tampered = token.slice(0, -3) + (token.endsWith('AAA') ? 'BBB' : 'AAA');
    rejects(() => protect('Decrypt', { email: tampered }), 'VALUE_NOT_PROTECTABLE', (e) => {
      assert.ok(!e.message.includes(tampered));
      assert.ok(!JSON.stringify(e.errors).includes(tampered));
    });
    rejects(() => protect('Decrypt', { email: 'not a token' }), 'VALUE_NOT_PROTECTABLE');
  });

  it('pseudonyms differ across third parties and usages, agree organisation-wide', () => {
    const v = { name: 'Jane Doe' };
    const p1 = protect('Pseudonymise', v, { thirdPartyId: 1 }).name;
    const p2 = protect('Pseudonymise', v, { thirdPartyId: 2 }).name;
    const u2 = protect('Pseudonymise', v, { thirdPartyId: 1, dataUsageId: 2 }).name;
    assert.notEqual(p1, p2);
    assert.notEqual(p1, u2);
    const o1 = protect('Pseudonymise', v, { thirdPartyId: 1, isDataConsistentAcrossOrganization: true }).name;
    const o2 = protect('Pseudonymise', v, { thirdPartyId: 2, dataUsageId: 9, isDataConsistentAcrossOrganization: true }).name;
    assert.equal(o1, o2);
    // Reconstruct needs the same scope.
    assert.equal(protect('Reconstruct', { name: p1 }, { thirdPartyId: 1 }).name, 'Jane Doe');
    assert.notEqual(protect('Reconstruct', { name: p1 }, { thirdPartyId: 2 }).name, 'Jane Doe');
  });

  it('keeps __proto__ and constructor keys as plain data', () => {
    const text = '{"__proto__": {"cardNumber": "4111111111111111"}, "constructor": {"prototype": {"x": 1}}, "cardNumber": "4111111111111111"}';
    const out = engine.protectDocument(job('customer', 'Mask'), text).dataSet as string;
    const parsed = JSON.parse(out);
    assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
    assert.ok(Object.hasOwn(parsed, '__proto__'));
    assert.equal(parsed['__proto__'].cardNumber, '************1111');
    assert.equal(({} as Record<string, unknown>).cardNumber, undefined);
    assert.deepEqual(parsed.constructor, { prototype: { x: 1 } });
  });

  it('numbers stay numbers where the technique keeps them numeric', () => {
    const out = protect('Pseudonymise', { ssn: 123456789 });
    assert.equal(typeof out.ssn, 'number');
    assert.equal(String(out.ssn).length, 9);
    assert.deepEqual(protect('Reconstruct', out), { ssn: 123456789 });
  });

  it('malformed JSON → MALFORMED_DATA_SET with a position, never the content', () => {
    rejects(() => engine.protectDocument(job('customer', 'Mask'), '{"cardNumber": "4111111111111111", oops}'), 'MALFORMED_DATA_SET', (e) => {
      assert.match(e.message, /line 1, column \d+/);
      assert.ok(!e.message.includes('4111'));
      assert.ok(!e.message.includes('oops'));
    });
  });

  it('nesting beyond the limit is refused', () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    rejects(() => engine.protectDocument(job('customer', 'Mask'), deep), 'MALFORMED_DATA_SET');
  });

  it('exact paths select one occurrence; a matched object protects its whole subtree', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-manifest-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'name: paths\nfields:\n  - path: $.customer.email\n    Mask: { style: email }\n  - match: address\n    Mask: { keepLast: 0 }\n',
    );
    const e = testEngine(dir);
    const out = e.protectDocument(job('paths', 'Mask'), {
      customer: { email: 'jane@example.com' },
      other: { email: 'kept@example.com' },
      address: { street: 'Main St 1', city: 'Springfield' },
    }).dataSet as Record<string, Record<string, string>>;
    assert.equal(out.customer!.email, 'j***@example.com');
    assert.equal(out.other!.email, 'kept@example.com');
    assert.equal(out.address!.street, '**** ** *');
    assert.equal(out.address!.city, '***********');
  });

  it('JSON round trip of whole documents: Pseudonymise→Reconstruct and Encrypt→Decrypt are exact', () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({
      name: `Person Number${i} Smith`,
      email: `person.${i}@corp${i % 7}.example`,
      cardNumber: `4${String(100000000000000 + i * 7919).padStart(15, '0')}`,
      ssn: `${String(100 + (i % 800)).padStart(3, '0')}-${String(10 + (i % 89))}-${String(1000 + i)}`,
      nested: { phone: `+44 20 7946 ${String(1000 + i)}` },
      list: [1, 'two', null, true],
    }));
    const p = protect('Pseudonymise', { rows });
    assert.deepEqual(protect('Reconstruct', p), { rows });
    const e = protect('Encrypt', { rows });
    assert.deepEqual(protect('Decrypt', e), { rows });
  });
});

describe('engine reload', () => {
  it('swaps plans atomically and keeps the working plan when a file is broken', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpg-reload-'));
    writeFileSync(join(dir, 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: {}\n');
    const e = testEngine(dir);
    const before = e.manifest('m');
    writeFileSync(join(dir, 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: { keepLast: many }\n');
    assert.ok(e.reload().length > 0);
    assert.equal(e.manifest('m'), before, 'broken file never replaces a working plan');
    assert.deepEqual(e.protectDocument(job('m', 'Mask'), { a: 'abcd' }).dataSet, { a: '****' });
    writeFileSync(join(dir, 'm.yaml'), 'name: m\nfields:\n  - match: a\n    Mask: { keepLast: 2 }\n');
    writeFileSync(join(dir, 'n.yaml'), 'name: n\nfields:\n  - match: b\n    Restrict: {}\n');
    assert.deepEqual(e.reload(), []);
    assert.deepEqual(e.protectDocument(job('m', 'Mask'), { a: 'abcd' }).dataSet, { a: '**cd' });
    assert.deepEqual(e.manifestNames(), ['m', 'n']);
  });
});

describe('engine tabular rows', () => {
  it('FILE cells: labels trimmed like LIST headers, Restrict leaves the stand-in', () => {
    const res = engine.protectRows(job('customer', 'Mask', {}, 'LIST'), [' ssn ', 'note'], [['123-45-6789', 'x']], 'FILE');
    assert.deepEqual(res.rows, [['***-**-6789', 'x']]);
    const r = engine.protectRows(job('customer', 'Restrict', { useRestrictedText: true, restrictedText: '[gone]' }, 'LIST'), ['ssn', 'salary'], [['123-45-6789', '']], 'FILE');
    assert.deepEqual(r.rows, [['[gone]', '']]);
  });

  it('JSON cells: fields matched inside, and a matched label covers the whole document', () => {
    const res = engine.protectRows(
      job('customer', 'Mask', {}, 'JSON'),
      ['doc', 'ssn', 'ssn2'],
      [['{"cardNumber":"4111111111111111","x":1}', '"123-45-6789"', '']],
      'JSON',
    );
    assert.deepEqual(res.rows[0]![0], '{"cardNumber":"************1111","x":1}');
    assert.deepEqual(res.rows[0]![1], '"***-**-6789"');
    assert.deepEqual(res.rows[0]![2], '');
    const nested = engine.protectRows(job('customer', 'Mask', {}, 'JSON'), ['ssn'], [['{"v":"123-45-6789"}']], 'JSON');
    assert.deepEqual(nested.rows[0]![0], '{"v":"***-**-6789"}');
    assert.throws(
      () => engine.protectRows(job('customer', 'Mask', {}, 'JSON'), ['doc'], [['{"cardNumber": 4111111111111111']], 'JSON'),
      (e: unknown) => e instanceof DpgError && e.code === 'MALFORMED_DATA_SET' && /Row 0, column doc/.test(e.message) && !e.message.includes('4111'),
    );
  });
});

describe('engine CSV output', () => {
  it('refuses an XML/SQL document over maxDocumentBytes before protecting anything', async () => {
    const { Readable } = await import('node:stream');
    const { createEngine } = await import('../../src/engine/engine.ts');
    const { testKeyring, DEFAULT_MANIFESTS } = await import('../helpers/engine.ts');
    const small = createEngine({ manifestsDir: DEFAULT_MANIFESTS, keyring: testKeyring(), limits: { maxDocumentBytes: 64 } });
    const xml = `<r><name>${'x'.repeat(200)}</name></r>`;
    const { output, summary } = small.protectToCsv(job('customer', 'Mask', {}, 'XML'), Readable.from([Buffer.from(xml)]));
    await assert.rejects(async () => {
      for await (const _ of output) void _;
    }, (e: unknown) => e instanceof DpgError && e.code === 'PAYLOAD_TOO_LARGE');
    await assert.rejects(summary, (e: unknown) => e instanceof DpgError && e.code === 'PAYLOAD_TOO_LARGE');
  });
});
