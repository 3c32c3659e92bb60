// Whole-process tests of the gRPC door: the real server on 127.0.0.1:0 with the real engine and
// identity, called by a client generated from proto/gateway.proto (no server code on the client side).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { Engine } from '../../src/engine/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { createClient, expectFailure, healthCheck, protectValues, toRows, type CallResult } from '../transport/grpc/client.ts';
import { startGrpcTestGateway, type GrpcTestGateway } from '../transport/grpc/gateway.ts';

const LABELS = ['name', 'email', 'phone', 'cardNumber', 'iban', 'dateOfBirth', 'note'];
const ORIGINAL = [
  ['Jane Doe', 'jane.doe@example.com', '+1 415-555-0100', '4111 1111 1111 1111', 'DE89370400440532013000', '1985-04-12', 'left alone'],
  ['Émile Zola', 'emile.zola@example.fr', '+33 1 23 45 67 89', '5500-0000-0000-0004', 'FR1420041010050500013M02606', '1990-12-31', ''],
  ['Li Wei', 'li.wei@example.cn', '020 7946 0958', '378282246310005', 'GB82WEST12345698765432', '2001-02-03', 'x'],
];
const SECRET_MARKERS = ['Jane Doe', 'jane.doe@example.com', '4111 1111 1111 1111', 'DE89370400440532013000', '123-45-6789'];

/** The real engine, except that manifest 'explode' fails like a bug whose message quotes data. */
function explodingEngine(): Engine {
  const real = testEngine();
  return {
    prepare: (job) => real.prepare(job),
    protectDocument: (job, data) => real.protectDocument(job, data),
    protectDocumentAsync: (job, data) => real.protectDocumentAsync(job, data),
    offload: () => undefined,
    protectToCsv: (job, input) => real.protectToCsv(job, input),
    hasManifest: (name) => real.hasManifest(name),
    manifestNames: () => real.manifestNames(),
    protectRows(job, labels, rows, cellType) {
      if (job.manifestName === 'explode') throw new TypeError('cannot read 4111 1111 1111 1111 of undefined');
      return real.protectRows(job, labels, rows, cellType);
    },
    async protectRowsAsync(job, labels, rows, cellType) {
      return this.protectRows(job, labels, rows, cellType);
    },
  };
}

let gw: GrpcTestGateway;
let client: grpc.Client;
let full: string;
let reader: string;

before(async () => {
  gw = await startGrpcTestGateway({ engine: explodingEngine() });
  client = createClient(gw.port);
  full = await gw.token('full');
  reader = await gw.token('reader');
});

after(async () => {
  client.close();
  await gw.close();
  const logs = gw.logs.join('');
  for (const marker of [...SECRET_MARKERS, full, reader]) {
    assert.ok(!logs.includes(marker), 'no payload value or token in any log line');
  }
});

/** `token` null: no authorization metadata at all. */
function call(jobConfig: Record<string, unknown>, labels: string[], rows: string[][], token: string | null = full, extra?: Record<string, string>): Promise<CallResult> {
  return protectValues(client, { job_config: jobConfig, labels, rows: toRows(rows) }, token ?? undefined, extra);
}

describe('ProtectValues round trips', () => {
  test('Mask: card, name and email masked, other columns untouched, request id and counts in trailers', async () => {
    const res = await protectValues(
      client,
      {
        request_id: 'req-mask-1',
        job_config: { configuration_name: 'customer', job_type: 'Mask' },
        labels: ['name', 'cardNumber', 'email', 'note'],
        rows: toRows([['Jane Doe', '4111 1111 1111 1111', 'jane.doe@example.com', 'keep me']]),
      },
      full,
    );
    assert.deepEqual(res.rows, [['J*** D**', '**** **** **** 1111', 'j***@example.com', 'keep me']]);
    assert.equal(res.trailers['x-request-id'], 'req-mask-1');
    assert.equal(res.trailers['dpg-values-protected'], '3');
    assert.equal(res.trailers['dpg-values-failed'], '0');
  });

  test('Pseudonymise then Reconstruct gives back the exact original rows', async () => {
    const jc = { configuration_name: 'customer', third_party_id: 42, data_usage_id: 7 };
    const pseudo = await call({ ...jc, job_type: 'Pseudonymise' }, LABELS, ORIGINAL);
    assert.equal(pseudo.rows.length, ORIGINAL.length);
    for (let r = 0; r < ORIGINAL.length; r++) {
      for (let c = 0; c < 6; c++) assert.notEqual(pseudo.rows[r][c], ORIGINAL[r][c], `row ${r} ${LABELS[c]} changed`);
      assert.equal(pseudo.rows[r][6], ORIGINAL[r][6], 'unmatched column untouched');
    }
    // A snapshot date steers Reconstruct only; now (the version Pseudonymise just used) is the default.
    const back = await call({ ...jc, job_type: 'Reconstruct', snapshot_date: new Date().toISOString() }, LABELS, pseudo.rows);
    assert.deepEqual(back.rows, ORIGINAL);
  });

  test('Pseudonyms depend on third_party_id unless is_data_consistent_across_organization', async () => {
    const row = [['Jane Doe', 'jane.doe@example.com']];
    const a = await call({ configuration_name: 'customer', job_type: 'Pseudonymise', third_party_id: 1 }, ['name', 'email'], row);
    const b = await call({ configuration_name: 'customer', job_type: 'Pseudonymise', third_party_id: 2 }, ['name', 'email'], row);
    assert.notDeepEqual(a.rows, b.rows);
    const orgA = await call({ configuration_name: 'customer', job_type: 'Pseudonymise', third_party_id: 1, is_data_consistent_across_organization: true }, ['name', 'email'], row);
    const orgB = await call({ configuration_name: 'customer', job_type: 'Pseudonymise', third_party_id: 2, is_data_consistent_across_organization: true }, ['name', 'email'], row);
    assert.deepEqual(orgA.rows, orgB.rows);
  });

  test('Encrypt then Decrypt gives back the exact original rows', async () => {
    const labels = ['name', 'email', 'cardNumber', 'iban', 'note'];
    const rows = ORIGINAL.map((r) => [r[0], r[1], r[3], r[4], r[6]]);
    const enc = await call({ configuration_name: 'customer', job_type: 'Encrypt' }, labels, rows);
    for (let r = 0; r < rows.length; r++) {
      for (let c = 0; c < 4; c++) assert.notEqual(enc.rows[r][c], rows[r][c]);
      assert.ok(!enc.rows[r].join('|').includes(rows[r][0]), 'no clear name left');
    }
    const dec = await call({ configuration_name: 'customer', job_type: 'Decrypt' }, labels, enc.rows);
    assert.deepEqual(dec.rows, rows);
  });

  test('dataset_type JSON: each cell is a JSON document protected with the manifest rules', async () => {
    const doc = JSON.stringify({ customer: { cardNumber: '4111 1111 1111 1111', note: 'x' }, email: 'jane.doe@example.com' });
    const res = await call({ configuration_name: 'customer', job_type: 'Mask', dataset_type: 'json' }, ['payload', 'other'], [[doc, '{"cardNumber":"5500 0000 0000 0004"}']]);
    assert.deepEqual(JSON.parse(res.rows[0][0]), { customer: { cardNumber: '**** **** **** 1111', note: 'x' }, email: 'j***@example.com' });
    assert.deepEqual(JSON.parse(res.rows[0][1]), { cardNumber: '**** **** **** 0004' });
    const restricted = await call(
      { configuration_name: 'customer', job_type: 'Restrict', dataset_type: 'JSON', use_restricted_text: true, restricted_text: '[removed]' },
      ['customer'],
      [['{"name":"Jane","ssn":"123-45-6789"}']],
    );
    assert.deepEqual(JSON.parse(restricted.rows[0][0]), { name: 'Jane' }, 'Restrict inside a JSON cell removes the key');
  });

  test('Restrict on a cell: restricted_text when use_restricted_text, else the empty string', async () => {
    const labels = ['ssn', 'salary', 'name'];
    const rows = [['123-45-6789', '52000', 'Jane Doe']];
    const withText = await call({ configuration_name: 'customer', job_type: 'Restrict', use_restricted_text: true, restricted_text: '[removed]' }, labels, rows);
    assert.deepEqual(withText.rows, [['[removed]', '[removed]', 'Jane Doe']]);
    const without = await call({ configuration_name: 'customer', job_type: 'Restrict', restricted_text: '[ignored]' }, labels, rows);
    assert.deepEqual(without.rows, [['', '', 'Jane Doe']]);
  });

  test('an unset ColumnData oneof is treated as an empty string', async () => {
    const res = await protectValues(
      client,
      { job_config: { configuration_name: 'customer', job_type: 'Mask' }, labels: ['cardNumber', 'note'], rows: [{ columns: [{}, { string_value: 'n' }] }] },
      full,
    );
    assert.deepEqual(res.rows, [['', 'n']]);
  });

  test('zero rows is a valid request and returns zero rows', async () => {
    const res = await call({ configuration_name: 'customer', job_type: 'Mask' }, ['cardNumber'], []);
    assert.deepEqual(res.rows, []);
  });

  test('rows keep their order across a larger table (multi-byte lengths, long values)', async () => {
    const long = 'x'.repeat(300);
    const rows = Array.from({ length: 2000 }, (_, i) => [`4111 1111 1111 ${String(i % 10000).padStart(4, '0')}`, `${long}${i}`, 'ü€😀']);
    const res = await call({ configuration_name: 'card-masking', job_type: 'mask' }, ['card_number', 'note', 'emoji'], rows);
    assert.equal(res.rows.length, rows.length);
    for (let i = 0; i < rows.length; i++) {
      assert.equal(res.rows[i][0], `**** **** **** ${String(i).padStart(4, '0')}`);
      assert.equal(res.rows[i][1], rows[i][1]);
      assert.equal(res.rows[i][2], 'ü€😀');
    }
  });

  test('request id: x-request-id metadata is used when request_id is empty, else one is generated', async () => {
    const fromMd = await call({ configuration_name: 'customer', job_type: 'Mask' }, ['name'], [['A B']], full, { 'x-request-id': 'md-id-7' });
    assert.equal(fromMd.trailers['x-request-id'], 'md-id-7');
    const generated = await call({ configuration_name: 'customer', job_type: 'Mask' }, ['name'], [['A B']]);
    assert.match(generated.trailers['x-request-id'], /^[0-9a-f-]{36}$/);
  });
});

describe('ProtectValues errors', () => {
  const card = { configuration_name: 'customer', job_type: 'Mask' };

  test('a ragged row is INVALID_ARGUMENT naming the row, not its content', async () => {
    const f = await expectFailure(call(card, ['name', 'cardNumber'], [['Jane Doe', '4111 1111 1111 1111'], ['Jane Doe']]));
    assert.equal(f.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(f.trailers['dpg-error-code'], 'INVALID_REQUEST');
    assert.match(f.details, /rows\[1\]/);
    assert.ok(!f.details.includes('Jane'));
  });

  test('empty labels is INVALID_ARGUMENT', async () => {
    const f = await expectFailure(call(card, [], [[]]));
    assert.equal(f.code, grpc.status.INVALID_ARGUMENT);
    assert.match(f.details, /labels/);
  });

  test('missing, malformed and forged tokens are UNAUTHENTICATED', async () => {
    const missing = await expectFailure(call(card, ['name'], [['x']], null));
    assert.equal(missing.code, grpc.status.UNAUTHENTICATED);
    assert.equal(missing.trailers['dpg-error-code'], 'UNAUTHENTICATED');
    const basic = await expectFailure(call(card, ['name'], [['x']], null, { authorization: 'Basic ZGVtbzpkZW1v' }));
    assert.equal(basic.code, grpc.status.UNAUTHENTICATED);
    const [h, p] = full.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), scope: 'protect reconstruct decrypt admin' })).toString('base64url');
    const forged = await expectFailure(call(card, ['name'], [['x']], `${h}.${forgedPayload}.${full.split('.')[2]}`));
    assert.equal(forged.code, grpc.status.UNAUTHENTICATED);
    const garbage = await expectFailure(call(card, ['name'], [['x']], 'not-a-jwt'));
    assert.equal(garbage.code, grpc.status.UNAUTHENTICATED);
  });

  test('a protect-only client gets PERMISSION_DENIED for Reconstruct and Decrypt, but may Mask', async () => {
    for (const job_type of ['Reconstruct', 'Decrypt']) {
      const f = await expectFailure(call({ configuration_name: 'customer', job_type }, ['name'], [['x']], reader));
      assert.equal(f.code, grpc.status.PERMISSION_DENIED, job_type);
      assert.equal(f.trailers['dpg-error-code'], 'FORBIDDEN');
    }
    const ok = await call(card, ['cardNumber'], [['4111 1111 1111 1111']], reader);
    assert.deepEqual(ok.rows, [['**** **** **** 1111']]);
  });

  test('a client limited to other manifests gets PERMISSION_DENIED', async () => {
    const cardOnly = await gw.token('cardOnly');
    const f = await expectFailure(call(card, ['name'], [['x']], cardOnly));
    assert.equal(f.code, grpc.status.PERMISSION_DENIED);
    const ok = await call({ configuration_name: 'card-masking', job_type: 'Mask' }, ['cardNumber'], [['4111111111111111']], cardOnly);
    assert.deepEqual(ok.rows, [['************1111']]);
  });

  const cases: { name: string; jc: Record<string, unknown>; labels?: string[]; rows?: string[][]; status: grpc.status; code: string; detail?: RegExp }[] = [
    { name: 'unknown manifest', jc: { configuration_name: 'nope', job_type: 'Mask' }, status: grpc.status.NOT_FOUND, code: 'MANIFEST_NOT_FOUND' },
    { name: 'job type the manifest does not define', jc: { configuration_name: 'card-masking', job_type: 'Pseudonymise' }, status: grpc.status.FAILED_PRECONDITION, code: 'JOB_TYPE_NOT_DEFINED' },
    { name: 'missing configuration_name and job_type', jc: {}, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /job_config\.configuration_name is required; job_config\.job_type is required/ },
    { name: 'unknown job type', jc: { configuration_name: 'customer', job_type: 'Shred' }, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /job_config\.job_type/ },
    { name: 'dataset_type other than FILE/JSON', jc: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'XML' }, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /dataset_type must be FILE or JSON/ },
    { name: 'invalid country code', jc: { configuration_name: 'customer', job_type: 'Mask', country_code: 'Germany' }, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /job_config\.country_code/ },
    { name: 'negative third_party_id', jc: { configuration_name: 'customer', job_type: 'Mask', third_party_id: -3 }, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /job_config\.third_party_id/ },
    { name: 'invalid snapshot_date', jc: { configuration_name: 'customer', job_type: 'Mask', snapshot_date: 'yesterday' }, status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_REQUEST', detail: /job_config\.snapshot_date/ },
    { name: 'malformed JSON cell', jc: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'JSON' }, rows: [['{"cardNumber": "4111 1111 1111 1111"']], status: grpc.status.INVALID_ARGUMENT, code: 'MALFORMED_DATA_SET' },
    { name: 'ciphertext that does not decrypt', jc: { configuration_name: 'customer', job_type: 'Decrypt' }, labels: ['cardNumber'], rows: [['4111 1111 1111 1111']], status: grpc.status.FAILED_PRECONDITION, code: 'VALUE_NOT_PROTECTABLE' },
    { name: 'a bug in the engine', jc: { configuration_name: 'explode', job_type: 'Mask' }, status: grpc.status.INTERNAL, code: 'INTERNAL', detail: /^An internal error occurred$/ },
  ];
  for (const c of cases) {
    test(`${c.name} → ${grpc.status[c.status]} with dpg-error-code ${c.code}`, async () => {
      const f = await expectFailure(call(c.jc, c.labels ?? ['payload'], c.rows ?? [['4111 1111 1111 1111']]));
      assert.equal(f.code, c.status, f.details);
      assert.equal(f.trailers['dpg-error-code'], c.code);
      assert.ok(f.trailers['x-request-id']);
      if (c.detail) assert.match(f.details, c.detail);
      assert.ok(!f.details.includes('4111'), 'no payload in the status message');
      assert.ok(!(f.trailers['dpg-error-details'] ?? '').includes('4111'), 'no payload in the details');
    });
  }

  test('VALUE_NOT_PROTECTABLE lists locations in dpg-error-details; silent mode replaces and counts instead', async () => {
    const jc = { configuration_name: 'customer', job_type: 'Decrypt' };
    const f = await expectFailure(call(jc, ['name', 'cardNumber'], [['enc:garbage', 'x'], ['y', 'z']]));
    const details = JSON.parse(f.trailers['dpg-error-details']) as { location: string; reason: string }[];
    assert.ok(details.length >= 1);
    assert.match(details[0].location, /row \d, column (name|cardNumber)/);
    const silent = await call({ ...jc, silent_mode: true, use_restricted_text: true, restricted_text: '#' }, ['name', 'cardNumber'], [['enc:garbage', 'x']]);
    assert.deepEqual(silent.rows, [['#', '#']]);
    assert.equal(silent.trailers['dpg-values-failed'], '2');
  });

  test('an invalid request_id is INVALID_ARGUMENT naming request_id', async () => {
    const f = await expectFailure(protectValues(client, { request_id: 'has spaces!', job_config: card, labels: ['a'], rows: toRows([['b']]) }, full));
    assert.equal(f.code, grpc.status.INVALID_ARGUMENT);
    assert.match(f.details, /request_id/);
  });

  test('bytes that are not a ProtectValuesRequest are INVALID_ARGUMENT (after authentication)', async () => {
    const raw = (bytes: Buffer, token?: string): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) => {
        const md = new grpc.Metadata();
        if (token) md.set('authorization', `Bearer ${token}`);
        client.makeUnaryRequest('/com.vendor.gateway.ProtectService/ProtectValues', (b: Buffer) => b, (b: Buffer) => b, bytes, md, (err) => resolve(err));
      });
    const truncated = Buffer.from([0x22, 0x10, 0x0a, 0x05]);
    const err = await raw(truncated, full);
    assert.equal(err?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(err?.metadata.get('dpg-error-code')[0], 'INVALID_REQUEST');
    const unauth = await raw(truncated);
    assert.equal(unauth?.code, grpc.status.UNAUTHENTICATED);
  });
});

describe('observability', () => {
  test('one audit line per call with execution_context and api_type; metrics on door grpc', async () => {
    const before = gw.logs.length;
    await call({ configuration_name: 'customer', job_type: 'Mask', execution_context: 'nightly-batch', api_type: 'bulk' }, ['name'], [['Jane Doe']], full, { 'x-request-id': 'audit-1' });
    const lines = gw.logs.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.audit === true);
    assert.equal(lines.length, 1);
    assert.equal(lines[0].requestId, 'audit-1');
    assert.equal(lines[0].executionContext, 'nightly-batch');
    assert.equal(lines[0].apiType, 'bulk');
    assert.equal(lines[0].clientId, 'demo-client');
    assert.equal(lines[0].outcome, 'ok');
    const text = (await gw.metrics.render()).body;
    assert.match(text, /dpg_requests_total\{door="grpc",job_type="Mask",outcome="ok"\} \d+/);
    assert.match(text, /dpg_errors_total\{door="grpc",code="MANIFEST_NOT_FOUND"\} \d+/);
  });

  test('health Check: SERVING when ready, NOT_SERVING when not, NOT_FOUND for unknown services', async () => {
    assert.equal(await healthCheck(gw.port), 'SERVING');
    assert.equal(await healthCheck(gw.port, 'com.vendor.gateway.ProtectService'), 'SERVING');
    gw.ready = false;
    try {
      assert.equal(await healthCheck(gw.port), 'NOT_SERVING');
    } finally {
      gw.ready = true;
    }
    await assert.rejects(healthCheck(gw.port, 'no.such.Service'), (err: grpc.ServiceError) => err.code === grpc.status.NOT_FOUND);
  });
});
