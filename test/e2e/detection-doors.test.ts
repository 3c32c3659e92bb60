// Detection by content through every door of a real `dpg serve` process (HTTP /api/protect and
// /file/protect, gRPC, the egress proxy's reverse listener) and through `dpg protect`: a free-text
// field's card number and phone are protected in JSON, XML, SQL and CSV with the default manifest.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ProxyAgent, request } from 'undici';
import { multipart, postJson, tokenFor } from './http-helpers.ts';
import { ROOT, startRecordingUpstream, startServe, type RecordingUpstream, type ServeProcess } from './serve-process.ts';
import { createClient, protectValues, toRows } from '../transport/grpc/client.ts';

const CARD = '4111 1111 1111 1111';
const PHONE = '415-555-0132';
const NOTES = `card ${CARD}, call ${PHONE}`;
const MASKED = 'card **** **** **** 1111, call ***-***-0132';

/** One payload per data type, each with the notes text in a field no selector names. */
const PAYLOADS = {
  JSON: { type: 'application/json', text: JSON.stringify({ id: 7, notes: NOTES }) },
  XML: { type: 'application/xml', text: `<customer id="7"><notes>${NOTES}</notes></customer>` },
  SQL: { type: 'application/sql', text: `INSERT INTO customers (id, notes) VALUES (7, '${NOTES}');` },
  LIST: { type: 'text/csv', text: `id,notes\n7,"${NOTES}"\n` },
} as const;

function assertProtected(text: string, where: string): void {
  assert.ok(!text.includes(CARD) && !text.includes(PHONE), `${where}: card and phone hidden`);
  assert.ok(text.includes('**** **** **** 1111') && text.includes('***-***-0132'), `${where}: masked in place`);
  assert.ok(text.includes('card ') && text.includes(', call '), `${where}: the words are kept`);
}

let serve: ServeProcess;
let upstream: RecordingUpstream;
let ports: Readonly<Record<string, number>>;
let token: string;

before(async () => {
  upstream = await startRecordingUpstream();
  serve = await startServe('dpg-detect-doors-', {
    routes: `    - name: notes\n      match: { host: 127.0.0.1, port: ${upstream.port}, path: "/**" }\n      request: { manifest: customer, jobType: Mask }`,
    reverse: `    - listen: 127.0.0.1:0\n      upstream: http://127.0.0.1:${upstream.port}`,
  });
  ports = serve.ports;
  token = await tokenFor(base(), { id: 'demo-client', secret: 'demo-secret' });
});

after(async () => {
  await serve?.stop();
  await upstream?.close();
});

const base = () => serve.base;

describe('detection through every door (dpg serve, default manifest)', () => {
  it('HTTP /api/protect: JSON, XML, SQL; Pseudonymise and Reconstruct round trip', async () => {
    const json = await postJson(base(), '/api/protect', { manifestName: 'customer', jobType: 'Mask', dataSet: { id: 7, notes: NOTES } }, { 'x-resource-token': token });
    assert.equal(json.status, 200, json.text);
    assert.deepEqual(json.json.dataSet, { id: 7, notes: MASKED });
    for (const type of ['XML', 'SQL'] as const) {
      const res = await postJson(base(), '/api/protect', { manifestName: 'customer', jobType: 'Mask', dataSet: PAYLOADS[type].text }, { 'x-resource-token': token, 'x-data-set-type': type });
      assert.equal(res.status, 200, res.text);
      assertProtected(res.json.dataSet, `/api/protect ${type}`);
    }
    const p = await postJson(base(), '/api/protect', { manifestName: 'customer', jobType: 'Pseudonymise', dataSet: { notes: NOTES } }, { 'x-resource-token': token });
    assert.ok(!p.text.includes(CARD) && !p.text.includes(PHONE));
    const r = await postJson(base(), '/api/protect', { manifestName: 'customer', jobType: 'Reconstruct', dataSet: p.json.dataSet }, { 'x-resource-token': token });
    assert.deepEqual(r.json.dataSet, { notes: NOTES });
  });

  it('HTTP /api/protect Anonymise: no personal field of a customer record left in clear, named or not', async () => {
    const record = {
      name: 'Jane Doe',
      email: 'jane.doe@example.com',
      phone: '+1 415-555-0100',
      cardNumber: '4111 1111 1111 1111',
      ssn: '123-45-6789',
      iban: 'DE89370400440532013000',
      dateOfBirth: '1985-04-12',
      salary: 52000,
      cc: '5500 0000 0000 0004',
      notes: `${NOTES}, mail jane.doe@example.com from 192.0.2.10`,
    };
    const res = await postJson(base(), '/api/protect', { manifestName: 'customer', jobType: 'Anonymise', dataSet: record }, { 'x-resource-token': token });
    assert.equal(res.status, 200, res.text);
    for (const value of ['Jane Doe', 'jane.doe@example.com', '415-555-0100', '4111 1111 1111 1111', '123-45-6789', 'DE89370400440532013000', '1985-04-12', '5500 0000 0000 0004', PHONE, '192.0.2.10']) {
      assert.ok(!res.text.includes(value), `${value} not in clear`);
    }
    assert.equal(res.json.dataSet.dateOfBirth, '1985');
    assert.equal(res.json.dataSet.salary, '50000-59999');
  });

  it('HTTP /file/protect: CSV, JSON, XML and SQL files come back as CSV with the text protected', async () => {
    for (const type of ['LIST', 'JSON', 'XML', 'SQL'] as const) {
      const { body, contentType } = multipart([
        { name: 'protectFileDataset', contentType: 'application/json', body: JSON.stringify({ manifestName: 'customer', jobType: 'Mask' }) },
        { name: 'data', filename: `data.${type.toLowerCase()}`, contentType: PAYLOADS[type].type, body: PAYLOADS[type].text },
      ]);
      const res = await request(`${base()}/file/protect`, { method: 'POST', headers: { 'content-type': contentType, 'x-resource-token': token, 'x-data-set-type': type }, body });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text);
      assertProtected(text, `/file/protect ${type}`);
    }
  });

  it('gRPC ProtectValues: FILE cells of a notes column and JSON cells', async () => {
    const client = createClient(ports.grpc);
    try {
      const file = await protectValues(client, { job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'FILE' }, labels: ['id', 'notes'], rows: toRows([['7', NOTES]]) }, token);
      assert.deepEqual(file.rows, [['7', MASKED]]);
      const json = await protectValues(client, { job_config: { configuration_name: 'customer', job_type: 'Mask', dataset_type: 'JSON' }, labels: ['doc'], rows: toRows([[PAYLOADS.JSON.text]]) }, token);
      assertProtected(json.rows[0][0], 'gRPC JSON cell');
    } finally {
      client.close();
    }
  });

  it('egress proxy (reverse listener and forward proxy): JSON, XML, SQL and CSV bodies reach the upstream protected', async () => {
    for (const type of ['JSON', 'XML', 'SQL', 'LIST'] as const) {
      upstream.received.length = 0;
      const res = await request(`http://127.0.0.1:${ports['proxy-reverse']}/v1/notes`, { method: 'POST', headers: { 'content-type': PAYLOADS[type].type }, body: PAYLOADS[type].text });
      assert.equal(res.statusCode, 200, await res.body.text());
      assert.equal(upstream.received.length, 1);
      assertProtected(upstream.received[0].body, `proxy ${type}`);
    }
    upstream.received.length = 0;
    const form = await request(`http://127.0.0.1:${ports['proxy-reverse']}/v1/form`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id: '7', notes: NOTES }).toString(),
    });
    assert.equal(form.statusCode, 200, await form.body.text());
    assertProtected(new URLSearchParams(upstream.received[0].body).get('notes')!, 'proxy form');
    upstream.received.length = 0;
    const agent = new ProxyAgent(`http://127.0.0.1:${ports.proxy}`);
    try {
      const upstreamPort = upstream.port;
      const res = await request(`http://127.0.0.1:${upstreamPort}/v1/notes`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' }, body: PAYLOADS.JSON.text });
      assert.equal(res.statusCode, 200, await res.body.text());
      assertProtected(upstream.received[0].body, 'forward proxy JSON');
    } finally {
      await agent.close();
    }
  });

  it('dpg protect (CLI): JSON, XML, SQL and LIST from stdin', () => {
    for (const type of ['JSON', 'XML', 'SQL', 'LIST'] as const) {
      const r = spawnSync(process.execPath, ['bin/dpg.js', 'protect', '--config', serve.configFile, '-m', 'customer', '-j', 'Mask', '--type', type], {
        cwd: ROOT,
        input: PAYLOADS[type].text,
        encoding: 'utf8',
        env: { ...process.env, DPG_DATA_DIR: join(serve.dir, 'data'), DPG_LOG_LEVEL: 'silent' },
        timeout: 30_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assertProtected(r.stdout, `CLI ${type}`);
    }
  });
});
